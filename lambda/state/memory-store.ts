import {
  type LoadedSession,
  type PendingRecord,
  type SessionRecord,
  type SessionStore,
  StoreUnavailableError,
  type TargetSessionRecord,
} from './store';

/**
 * A `SessionStore` in this process's memory, for in-process tests and local experiments: the same
 * semantics as `DynamoSessionStore` (test/state/session-store-contract.test.ts runs the same cases
 * against both). One partition per session keyed like the table (`SESSION`, `T#<target>`,
 * `P#<gatewayId>`); conditional writes refuse exactly where DynamoDB's conditions would; expiry is
 * checked on every read, nothing expires by itself; records are copied in and out, so a caller
 * mutating what it got changes nothing stored. Never part of the Lambda: it forgets everything
 * when the process ends and is not shared between instances (two gateway cores in one process can
 * share one).
 */

type Item = Record<string, unknown>;

const SESSION_SK = 'SESSION';
const targetSk = (target: string) => `T#${target}`;
const pendingSk = (gatewayId: string) => `P#${gatewayId}`;
const cancelledSk = (upstreamId: string) => `C#${upstreamId}`;

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** What the document client stores: a deep copy without `undefined` attributes (removeUndefinedValues). */
function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
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

  async createSession(session: SessionRecord): Promise<void> {
    this.available();
    const partition = this.partition(session.id);
    if (partition.has(SESSION_SK)) throw new ConditionRefusedError('createSession');
    partition.set(SESSION_SK, copy(session) as unknown as Item);
  }

  async loadSession(sessionId: string, now = nowSeconds()): Promise<LoadedSession | undefined> {
    this.available();
    const partition = this.partitions.get(sessionId);
    const sessionItem = partition?.get(SESSION_SK);
    if (!partition || !sessionItem || (sessionItem.expiresAt as number) <= now) return undefined;
    const loaded: LoadedSession = {
      session: copy(sessionItem) as unknown as SessionRecord,
      targets: new Map(),
      pending: new Map(),
      cancelled: new Set(),
    };
    // Sorted by sort key, as a Query returns a partition.
    for (const [sk, item] of [...partition].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (sk.startsWith('T#')) loaded.targets.set(sk.slice(2), copy(item) as unknown as TargetSessionRecord);
      else if (sk.startsWith('P#') && (item.expiresAt as number) > now) {
        loaded.pending.set(sk.slice(2), copy(item) as unknown as PendingRecord);
      } else if (sk.startsWith('C#')) loaded.cancelled?.add(sk.slice(2));
    }
    return loaded;
  }

  async putTargetSession(session: SessionRecord, target: TargetSessionRecord): Promise<void> {
    this.available();
    // Like the table item: the target session expires with its gateway session.
    this.partition(session.id).set(targetSk(target.target), copy({ ...target, expiresAt: session.expiresAt }));
  }

  async setLogLevel(session: SessionRecord, level: string): Promise<void> {
    this.available();
    const item = this.partitions.get(session.id)?.get(SESSION_SK);
    if (!item) throw new ConditionRefusedError('setLogLevel');
    item.logLevel = level;
  }

  async deleteSession(loaded: LoadedSession): Promise<void> {
    this.available();
    const partition = this.partitions.get(loaded.session.id);
    if (!partition) return;
    // Exactly the items the caller loaded, as the DynamoDB store deletes them (by key).
    partition.delete(SESSION_SK);
    for (const name of loaded.targets.keys()) partition.delete(targetSk(name));
    for (const id of loaded.pending.keys()) partition.delete(pendingSk(id));
    for (const id of loaded.cancelled ?? []) partition.delete(cancelledSk(id));
    this.dropIfEmpty(loaded.session.id);
  }

  async markCancelled(sessionId: string, upstreamId: string, expiresAt: number): Promise<void> {
    this.available();
    this.partition(sessionId).set(cancelledSk(upstreamId), { expiresAt });
  }

  async isCancelled(sessionId: string, upstreamId: string): Promise<boolean> {
    this.available();
    return this.partitions.get(sessionId)?.has(cancelledSk(upstreamId)) ?? false;
  }

  async putPending(session: Pick<SessionRecord, 'id'>, pending: PendingRecord): Promise<void> {
    this.available();
    const partition = this.partition(session.id);
    const sk = pendingSk(pending.gatewayId);
    if (partition.has(sk)) throw new ConditionRefusedError('putPending');
    partition.set(sk, copy(pending) as unknown as Item);
  }

  async claimPending(sessionId: string, gatewayId: string, now = nowSeconds()): Promise<boolean> {
    return this.settle(sessionId, gatewayId, now);
  }

  async deletePending(sessionId: string, gatewayIds: string[]): Promise<void> {
    this.available();
    const partition = this.partitions.get(sessionId);
    if (!partition) return;
    for (const id of gatewayIds) partition.delete(pendingSk(id));
    this.dropIfEmpty(sessionId);
  }

  async getPending(sessionId: string, gatewayId: string, now = nowSeconds()): Promise<PendingRecord | undefined> {
    this.available();
    const item = this.partitions.get(sessionId)?.get(pendingSk(gatewayId));
    if (!item || (item.expiresAt as number) <= now) return undefined;
    return copy(item) as unknown as PendingRecord;
  }

  async answerPending(sessionId: string, gatewayId: string, answer: string, now = nowSeconds()): Promise<boolean> {
    return this.settle(sessionId, gatewayId, now, answer);
  }

  /** How many items the store holds (every partition); tests check what was cleaned up. */
  itemCount(): number {
    let count = 0;
    for (const partition of this.partitions.values()) count += partition.size;
    return count;
  }

  /** pending → answered, at most once and only before expiry; optionally keeping the answer. */
  private settle(sessionId: string, gatewayId: string, now: number, answer?: string): boolean {
    this.available();
    const item = this.partitions.get(sessionId)?.get(pendingSk(gatewayId));
    if (item?.status !== 'pending' || !((item.expiresAt as number) > now)) return false;
    item.status = 'answered';
    if (answer !== undefined) item.answer = answer;
    return true;
  }

  private partition(sessionId: string): Map<string, Item> {
    let partition = this.partitions.get(sessionId);
    if (!partition) {
      partition = new Map();
      this.partitions.set(sessionId, partition);
    }
    return partition;
  }

  private dropIfEmpty(sessionId: string): void {
    if (this.partitions.get(sessionId)?.size === 0) this.partitions.delete(sessionId);
  }

  private available(): void {
    if (this.down) throw new StoreUnavailableError(new Error('memory store is down'));
  }
}
