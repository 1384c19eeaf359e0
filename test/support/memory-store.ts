import { type Clock, systemClock } from '../../lambda/scheduling/clock';
import {
  CLIENT_STREAM_SK,
  cancelledSk,
  checkSize,
  endMarker,
  eventSk,
  type Item,
  PENDING_PREFIX,
  pendingOf,
  pendingSk,
  RESUME_PROOF_SK,
  resumeProofPk,
  SESSION_SK,
  sessionOf,
  sessionPk,
  streamEventOf,
  streamPrefix,
  TARGET_PREFIX,
  targetSessionOf,
  targetSk,
  waitingCallOf,
  waitingCallSk,
} from '../../lambda/state/items';
import {
  applyTransition,
  PENDING_TRANSITIONS,
  type TransitionInputs,
  type TransitionName,
  transitionHolds,
} from '../../lambda/state/pending-transitions';
import {
  BRIDGED_CALLS,
  bucketOfSk,
  bucketStartOf,
  LIVE_SESSIONS,
  type LiveCounter,
  principalPk,
  rateSk,
} from '../../lambda/state/principal-counters';
import { newClaimToken } from '../../lambda/state/records';
import {
  type Admission,
  type CallEndMarker,
  type LoadedAnswer,
  type LoadedSession,
  type PendingRecord,
  type PendingWriteOutcome,
  type RecordOutcome,
  type SessionRecord,
  type SessionStore,
  StoreUnavailableError,
  type StreamEventRecord,
  type TargetSessionRecord,
  type WaitingCallRecord,
} from '../../lambda/state/store';

/**
 * A `SessionStore` in this process's memory, for in-process tests and local experiments: the same
 * semantics as `DynamoSessionStore` (test/state/session-store-contract.test.ts runs the same cases
 * against both). Partitions and items keyed like the table (lambda/state/items.ts), and parsed into
 * records as the DynamoDB store parses its items; conditional writes refuse exactly where DynamoDB's conditions would
 * (a pending record's transitions are evaluated from the very table the DynamoDB store builds its
 * conditions from: lambda/state/pending-transitions.ts); expiry is
 * checked on every read, nothing expires by itself; records are copied in and out, so a caller
 * mutating what it got changes nothing stored. Never part of the Lambda: it forgets everything
 * when the process ends and is not shared between instances (two gateway cores in one process can
 * share one).
 */

/** What the document client stores: a deep copy without `undefined` attributes (removeUndefinedValues). */
function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** A record as an item (a copy: nothing stored shares an object with a caller). */
function itemOf(record: object): Item {
  return copy({ ...record });
}

/** A refused condition, as DynamoDB refuses a conditional write (the real store throws the SDK's exception). */
export class ConditionRefusedError extends Error {
  constructor(operation: string) {
    super(`${operation}: the condition was not met`);
    this.name = 'ConditionRefusedError';
  }
}

export class MemorySessionStore implements SessionStore {
  private readonly partitions = new Map<string, Map<string, Item>>();
  /** While true every operation fails as an unreachable DynamoDB does (StoreUnavailableError). */
  down = false;

  /** `clock`: the gateway's, as the DynamoDB store is given it (Node's unless a test drives a fake one). */
  constructor(private readonly clock: Clock = systemClock) {}

  private nowSeconds(): number {
    return Math.floor(this.clock.now() / 1000);
  }

  async createSession(session: SessionRecord): Promise<void> {
    this.available();
    checkSize('the session (its client capabilities and clientInfo)', session);
    const partition = this.partition(sessionPk(session.id));
    if (partition.has(SESSION_SK)) throw new ConditionRefusedError('createSession');
    partition.set(SESSION_SK, itemOf(session));
  }

  async loadSession(
    sessionId: string,
    now = this.nowSeconds(),
    options: { includeExpired?: boolean; withPending?: boolean } = {},
  ): Promise<LoadedSession | undefined> {
    this.available();
    const partition = this.stored(sessionId);
    const sessionItem = partition?.get(SESSION_SK);
    const session = sessionItem && sessionOf(copy(sessionItem));
    if (!partition || !session) return undefined;
    if (session.expiresAt <= now && !options.includeExpired) return undefined;
    const loaded: LoadedSession = { session, targets: new Map() };
    // Sorted by sort key, as a Query returns a partition.
    for (const [sk, item] of [...partition].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (sk.startsWith(TARGET_PREFIX)) loaded.targets.set(sk.slice(TARGET_PREFIX.length), targetSessionOf(copy(item)));
    }
    if (options.withPending) {
      loaded.pendingCount = [...partition].filter(
        ([sk, item]) => sk.startsWith(PENDING_PREFIX) && (item.expiresAt as number) > now,
      ).length;
    }
    return loaded;
  }

  async loadForAnswer(
    sessionId: string,
    gatewayId: string,
    now = this.nowSeconds(),
  ): Promise<LoadedAnswer | undefined> {
    this.available();
    const partition = this.stored(sessionId);
    const sessionItem = partition?.get(SESSION_SK);
    const session = sessionItem && sessionOf(copy(sessionItem));
    if (!partition || !session || session.expiresAt <= now) return undefined;
    const item = partition.get(pendingSk(gatewayId));
    const pending = item && pendingOf(copy(item));
    return { session, pending: pending && pending.expiresAt > now ? pending : undefined };
  }

  async putTargetSession(
    session: SessionRecord,
    target: TargetSessionRecord,
    options: { replacing?: string } = {},
  ): Promise<TargetSessionRecord> {
    this.available();
    const partition = this.partition(sessionPk(session.id));
    const there = partition.get(targetSk(target.target));
    if (there && there.targetSessionId !== options.replacing) {
      const { expiresAt: _expiresAt, ...kept } = targetSessionOf(copy(there));
      return kept;
    }
    // Like the table item: the target session expires with its gateway session.
    partition.set(targetSk(target.target), itemOf({ ...target, expiresAt: session.expiresAt }));
    return copy(target);
  }

  async setLogLevel(session: SessionRecord, level: string): Promise<void> {
    this.available();
    const item = this.stored(session.id)?.get(SESSION_SK);
    if (!item) throw new ConditionRefusedError('setLogLevel');
    item.logLevel = level;
  }

  async markClientResumes(sessionId: string, proof?: { key: string; expiresAt: number }): Promise<void> {
    this.available();
    const item = this.stored(sessionId)?.get(SESSION_SK);
    if (item) item.clientResumes = true;
    if (proof) this.partition(resumeProofPk(proof.key)).set(RESUME_PROOF_SK, { expiresAt: proof.expiresAt });
  }

  async hasResumeProof(key: string, now = this.nowSeconds()): Promise<boolean> {
    this.available();
    const expiresAt = this.partitions.get(resumeProofPk(key))?.get(RESUME_PROOF_SK)?.expiresAt;
    return typeof expiresAt === 'number' && expiresAt > now;
  }

  async acquireClientStream(session: SessionRecord, token: string, untilMs: number): Promise<boolean> {
    this.available();
    const partition = this.partition(sessionPk(session.id));
    const held = partition.get(CLIENT_STREAM_SK);
    if (held && (held.untilMs as number) > this.clock.now()) return false;
    partition.set(CLIENT_STREAM_SK, { token, untilMs, expiresAt: session.expiresAt });
    return true;
  }

  async releaseClientStream(sessionId: string, token: string): Promise<void> {
    this.available();
    const partition = this.stored(sessionId);
    if (partition?.get(CLIENT_STREAM_SK)?.token !== token) return;
    partition.delete(CLIENT_STREAM_SK);
    this.dropIfEmpty(sessionId);
  }

  async saveTargetEventId(sessionId: string, target: string, targetSessionId: string, eventId: string): Promise<void> {
    this.available();
    const item = this.stored(sessionId)?.get(targetSk(target));
    if (item?.targetSessionId === targetSessionId) item.lastEventId = eventId;
  }

  async deleteSession(sessionId: string): Promise<void> {
    this.available();
    this.partitions.delete(sessionPk(sessionId));
  }

  async markCancelled(
    sessionId: string,
    targetCallId: string,
    expiresAt: number,
    reason: CallEndMarker = 'client-cancelled',
  ): Promise<void> {
    this.available();
    this.partition(sessionPk(sessionId)).set(cancelledSk(targetCallId), { expiresAt, reason });
  }

  async isCancelled(sessionId: string, targetCallId: string): Promise<CallEndMarker | undefined> {
    this.available();
    const item = this.stored(sessionId)?.get(cancelledSk(targetCallId));
    if (!item) return undefined;
    return endMarker(item.reason);
  }

  async putPending(session: Pick<SessionRecord, 'id'>, pending: PendingRecord): Promise<void> {
    this.available();
    const partition = this.partition(sessionPk(session.id));
    const sk = pendingSk(pending.gatewayId);
    if (partition.has(sk)) throw new ConditionRefusedError('putPending');
    partition.set(sk, itemOf(pending));
  }

  async countPending(sessionId: string, _limit: number, now = this.nowSeconds()): Promise<number> {
    this.available();
    let count = 0;
    for (const [sk, item] of this.stored(sessionId) ?? []) {
      if (sk.startsWith(PENDING_PREFIX) && (item.expiresAt as number) > now) count++;
    }
    return count; // every live record: the cap is small, so there is no need to stop at `limit`
  }

  async claimPending(sessionId: string, gatewayId: string, now = this.nowSeconds()): Promise<string | undefined> {
    const token = newClaimToken();
    return this.transition(sessionId, gatewayId, 'claim', { now, nowMs: this.clock.now(), token }) ? token : undefined;
  }

  async settleClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean> {
    return this.transition(sessionId, gatewayId, 'settle', { now: this.nowSeconds(), nowMs: this.clock.now(), token });
  }

  async releaseClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean> {
    return this.transition(sessionId, gatewayId, 'release', { now: this.nowSeconds(), nowMs: this.clock.now(), token });
  }

  async ackClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean> {
    return this.transition(sessionId, gatewayId, 'ack', { now: this.nowSeconds(), nowMs: this.clock.now(), token });
  }

  async expirePending(sessionId: string, gatewayId: string): Promise<PendingWriteOutcome> {
    return this.outcome(sessionId, gatewayId, 'expire', { now: this.nowSeconds(), nowMs: this.clock.now() });
  }

  async renewHolder(sessionId: string, gatewayIds: string[], until: number): Promise<void> {
    this.available();
    const inputs = { now: this.nowSeconds(), nowMs: this.clock.now(), until };
    for (const id of gatewayIds) this.transition(sessionId, id, 'renewHolder', inputs);
  }

  async deletePending(sessionId: string, gatewayIds: string[]): Promise<void> {
    this.available();
    const partition = this.stored(sessionId);
    if (!partition) return;
    for (const id of gatewayIds) partition.delete(pendingSk(id));
    this.dropIfEmpty(sessionId);
  }

  async getPending(sessionId: string, gatewayId: string, now = this.nowSeconds()): Promise<PendingRecord | undefined> {
    this.available();
    const item = this.stored(sessionId)?.get(pendingSk(gatewayId));
    const record = item && pendingOf(copy(item));
    return record && record.expiresAt > now ? record : undefined;
  }

  async detachHolder(sessionId: string, gatewayIds: string[]): Promise<void> {
    this.available();
    const inputs = { now: this.nowSeconds(), nowMs: this.clock.now() };
    for (const id of gatewayIds) this.transition(sessionId, id, 'detachHolder', inputs);
  }

  async getWaitingCall(
    sessionId: string,
    streamId: string,
    now = this.nowSeconds(),
  ): Promise<WaitingCallRecord | undefined> {
    this.available();
    const item = this.stored(sessionId)?.get(waitingCallSk(streamId));
    const record = item && waitingCallOf(copy(item));
    return record && record.expiresAt > now ? record : undefined;
  }

  async swapWaitingCall(
    sessionId: string,
    next: WaitingCallRecord,
    expectedVersion: number | undefined,
  ): Promise<boolean> {
    this.available();
    checkSize('the waiting call', next);
    const partition = this.partition(sessionPk(sessionId));
    const item = partition.get(waitingCallSk(next.streamId));
    if (expectedVersion === undefined ? item !== undefined : item?.version !== expectedVersion) return false;
    partition.set(waitingCallSk(next.streamId), itemOf(next));
    return true;
  }

  async deleteWaitingCall(sessionId: string, streamId: string, holder?: string): Promise<void> {
    this.available();
    const item = this.stored(sessionId)?.get(waitingCallSk(streamId));
    if (holder !== undefined && item?.holder !== holder) return; // another holder's now: not removed
    this.stored(sessionId)?.delete(waitingCallSk(streamId));
    this.dropIfEmpty(sessionId);
  }

  async answerPending(
    sessionId: string,
    gatewayId: string,
    answer: string,
    now = this.nowSeconds(),
    options: { principal?: string } = {},
  ): Promise<PendingWriteOutcome> {
    this.available();
    checkSize('the answer', { answer, gatewayId, pad: 'x'.repeat(1024) });
    const { principal } = options;
    const inputs = { now, nowMs: this.clock.now(), answer, principal };
    return this.outcome(sessionId, gatewayId, principal === undefined ? 'answer' : 'answerForPrincipal', inputs);
  }

  async recordAnswer(
    sessionId: string,
    gatewayId: string,
    answer: string,
    now = this.nowSeconds(),
    options: { principal?: string } = {},
  ): Promise<RecordOutcome> {
    this.available();
    checkSize('the answer', { answer, gatewayId, pad: 'x'.repeat(1024) });
    const { principal } = options;
    const inputs = { now, nowMs: this.clock.now(), answer, principal };
    return this.transition(sessionId, gatewayId, principal === undefined ? 'record' : 'recordForPrincipal', inputs);
  }

  async putStreamEvent(sessionId: string, event: StreamEventRecord): Promise<void> {
    this.available();
    checkSize('the stream event', event);
    this.partition(sessionPk(sessionId)).set(eventSk(event.streamId, event.seq), itemOf(event));
  }

  async putStreamEvents(sessionId: string, events: StreamEventRecord[], pending: PendingRecord[] = []): Promise<void> {
    this.available();
    for (const event of events) checkSize('the stream event', event);
    for (const record of pending) this.partition(sessionPk(sessionId)).set(pendingSk(record.gatewayId), itemOf(record));
    for (const event of events) await this.putStreamEvent(sessionId, event);
  }

  async endStream(
    sessionId: string,
    end: StreamEventRecord,
    drop: number[],
    pending: string[] = [],
    head?: StreamEventRecord,
  ): Promise<void> {
    await this.putStreamEvent(sessionId, end);
    if (head) await this.putStreamEvent(sessionId, { ...head, seq: 0 });
    const partition = this.stored(sessionId);
    for (const seq of drop) partition?.delete(eventSk(end.streamId, seq));
    for (const id of pending) partition?.delete(pendingSk(id));
  }

  async readStream(
    sessionId: string,
    streamId: string,
    fromSeq: number,
    now = this.nowSeconds(),
  ): Promise<StreamEventRecord[]> {
    this.available();
    const from = eventSk(streamId, fromSeq);
    const prefix = streamPrefix(streamId);
    return [...(this.stored(sessionId) ?? [])]
      .filter(([sk]) => sk.startsWith(prefix) && sk >= from)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([, item]) => streamEventOf(copy(item)))
      .filter((event) => event.expiresAt > now);
  }

  /** The sort keys of a partition (tests look at what is left in it). */
  keysOf(sessionId: string): string[] {
    return [...(this.stored(sessionId)?.keys() ?? [])].sort();
  }

  /** How many items the store holds (every partition); tests check what was cleaned up. */
  itemCount(): number {
    let count = 0;
    for (const partition of this.partitions.values()) count += partition.size;
    return count;
  }

  /** The pending records of a partition, expired ones included (tests look at what the gateway stored). */
  pendingRecords(sessionId: string): PendingRecord[] {
    return [...(this.stored(sessionId) ?? [])]
      .filter(([sk]) => sk.startsWith(PENDING_PREFIX))
      .map(([, item]) => pendingOf(copy(item)));
  }

  /**
   * One transition of a pending record (lambda/state/pending-transitions.ts), evaluated against the
   * stored item as DynamoDB evaluates the DynamoDB store's condition: true when applied.
   */
  private transition(sessionId: string, gatewayId: string, name: TransitionName, inputs: TransitionInputs): boolean {
    this.available();
    const item = this.stored(sessionId)?.get(pendingSk(gatewayId));
    const transition = PENDING_TRANSITIONS[name];
    if (!item || !transitionHolds(transition, item, inputs)) return false;
    applyTransition(transition, item, inputs);
    return true;
  }

  /** A transition whose refusal returns the record as it stands, even past its TTL, as DynamoDB returns it (ALL_OLD). */
  private outcome(
    sessionId: string,
    gatewayId: string,
    name: TransitionName,
    inputs: TransitionInputs,
  ): PendingWriteOutcome {
    if (this.transition(sessionId, gatewayId, name, inputs)) return { written: true };
    const item = this.stored(sessionId)?.get(pendingSk(gatewayId));
    return { written: false, current: item && pendingOf(copy(item)) };
  }

  async countInitialize(
    principal: string,
    windowStart: number,
    _windowSeconds: number,
    limit: number,
  ): Promise<boolean> {
    this.available();
    return this.conditionalCount(principalPk(principal), rateSk(windowStart), 1, (n) => n < limit);
  }

  async admitSession(
    principal: string,
    expiresAt: number,
    limits: { max: number; bucketSeconds: number },
    now = this.nowSeconds(),
  ): Promise<Admission> {
    return this.admitLive(LIVE_SESSIONS, principal, expiresAt, limits, now);
  }

  async releaseSession(principal: string, expiresAt: number, bucketSeconds: number): Promise<void> {
    this.releaseLive(LIVE_SESSIONS, principal, expiresAt, bucketSeconds);
  }

  async admitBridgedCall(
    principal: string,
    expiresAt: number,
    limits: { max: number; bucketSeconds: number },
    now = this.nowSeconds(),
  ): Promise<Admission> {
    return this.admitLive(BRIDGED_CALLS, principal, expiresAt, limits, now);
  }

  async releaseBridgedCall(principal: string, expiresAt: number, bucketSeconds: number): Promise<void> {
    this.releaseLive(BRIDGED_CALLS, principal, expiresAt, bucketSeconds);
  }

  /** As the DynamoDB store: read the live buckets of `counter`, grow only the new item's own. */
  private admitLive(
    counter: LiveCounter,
    principal: string,
    expiresAt: number,
    limits: { max: number; bucketSeconds: number },
    now: number,
  ): Admission {
    this.available();
    const partition = this.partition(principalPk(principal));
    const own = bucketStartOf(expiresAt, limits.bucketSeconds);
    const from = counter.sk(bucketStartOf(now, limits.bucketSeconds));
    let others = 0;
    let firstEnd = own + limits.bucketSeconds;
    for (const [sk, item] of partition) {
      if (sk < from || sk > counter.end) continue;
      const bucket = bucketOfSk(sk);
      const count = Number(item.count ?? 0);
      if (count > 0) firstEnd = Math.min(firstEnd, bucket + limits.bucketSeconds);
      if (bucket !== own) others += count;
    }
    const refused: Admission = { admitted: false, retryAfterSeconds: Math.max(1, firstEnd - now) };
    const room = limits.max - others;
    if (room <= 0) return refused;
    return this.conditionalCount(principalPk(principal), counter.sk(own), 1, (n) => n < room)
      ? { admitted: true }
      : refused;
  }

  private releaseLive(counter: LiveCounter, principal: string, expiresAt: number, bucketSeconds: number): void {
    this.available();
    this.conditionalCount(
      principalPk(principal),
      counter.sk(bucketStartOf(expiresAt, bucketSeconds)),
      -1,
      (n) => n > 0,
    );
  }

  /** `count += delta` on one counter item when `allowed(count)` (0 when absent), as the DynamoDB store's conditional ADD. */
  private conditionalCount(pk: string, sk: string, delta: number, allowed: (count: number) => boolean): boolean {
    const partition = this.partition(pk);
    const count = Number(partition.get(sk)?.count ?? 0);
    if (partition.has(sk) ? !allowed(count) : !allowed(0)) return false;
    partition.set(sk, { count: count + delta });
    return true;
  }

  /** A partition by its key (`S#<session id>`, `U#<principal hash>`), created when absent. */
  private partition(pk: string): Map<string, Item> {
    let partition = this.partitions.get(pk);
    if (!partition) {
      partition = new Map();
      this.partitions.set(pk, partition);
    }
    return partition;
  }

  /** A session's partition, if it holds anything. */
  private stored(sessionId: string): Map<string, Item> | undefined {
    return this.partitions.get(sessionPk(sessionId));
  }

  private dropIfEmpty(sessionId: string): void {
    if (this.stored(sessionId)?.size === 0) this.partitions.delete(sessionPk(sessionId));
  }

  private available(): void {
    if (this.down) throw new StoreUnavailableError(new Error('memory store is down'));
  }
}
