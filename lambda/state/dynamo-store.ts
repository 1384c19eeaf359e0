import {
  type AttributeValue,
  ConditionalCheckFailedException,
  QueryCommand as ItemsQueryCommand,
} from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { DYNAMODB_ITEM_LIMIT_BYTES, ItemTooLargeError } from '../protocol/errors';
import { itemOf } from './attribute-values';
import {
  CLIENT_STREAM_SK,
  cancelledSk,
  checkSize,
  endMarker,
  eventSk,
  type Item,
  nowSeconds,
  PENDING_PREFIX,
  pendingOf,
  pendingSk,
  sessionPk as pk,
  RESUME_PROOF_SK,
  resumeProofPk,
  SESSION_AND_TARGETS,
  SESSION_READ_PROJECTION,
  SESSION_SK,
  sessionOf,
  streamEndSk,
  streamEventOf,
  TARGET_PREFIX,
  targetSessionOf,
  targetSk,
  waitingCallOf,
  waitingCallSk,
} from './items';
import { dynamoUpdateOf, PENDING_TRANSITIONS, type TransitionInputs, type TransitionName } from './pending-transitions';
import {
  BRIDGED_CALLS,
  bucketOfSk,
  bucketStartOf,
  COUNTER_TTL_SLACK_SECONDS,
  LIVE_SESSIONS,
  type LiveCounter,
  principalPk,
  rateSk,
} from './principal-counters';
import { newClaimToken } from './records';
import {
  type Admission,
  type CallEndMarker,
  type LoadedAnswer,
  type LoadedSession,
  type PendingRecord,
  type PendingWriteOutcome,
  type SessionRecord,
  type SessionStore,
  StoreUnavailableError,
  type StreamEventRecord,
  type TargetSessionRecord,
  type WaitingCallRecord,
} from './store';

/**
 * The longest one DynamoDB operation may take by default, retries included (the client's own request
 * timeout and retries are in dynamo-client.ts): past it the operation is abandoned and the request
 * answers 503 + Retry-After. DynamoDB answers in milliseconds; this only bounds an outage.
 * Configurable as `storeOperationTimeoutMs`.
 */
export const STORE_OPERATION_TIMEOUT_MS = 5000;

export interface DynamoStoreOptions {
  /** The bound of one operation, retries included (default STORE_OPERATION_TIMEOUT_MS). */
  operationTimeoutMs?: number;
}

/**
 * Runs one operation within `timeoutMs`, and wraps SDK failures other than a refused condition, so
 * callers can answer "try again" — except DynamoDB's item size limit, which no retry fixes (4xx
 * naming the limit).
 */
async function guarded<T>(timeoutMs: number, operation: (signal: AbortSignal) => Promise<T>): Promise<T> {
  try {
    return await operation(AbortSignal.timeout(timeoutMs));
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException || error instanceof ItemTooLargeError) throw error;
    const { name, message } = error as { name?: string; message?: string };
    if (name === 'ValidationException' && /item size|maximum allowed size/i.test(message ?? '')) {
      throw new ItemTooLargeError('the item', DYNAMODB_ITEM_LIMIT_BYTES, { cause: error });
    }
    throw new StoreUnavailableError(error);
  }
}

/**
 * The item a refused conditional write found, as plain values, from the refusal itself: asked for with
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`, DynamoDB puts it on the exception (`Item`, left
 * marshalled by the document client, which converts only a command's output). Undefined when the
 * refusal carries none: there was no item — or a DynamoDB-compatible endpoint that ignores the option
 * (dynalite, the local and tests' DynamoDB, does), so a caller that needs the item reads it instead.
 */
function refusedItem(error: ConditionalCheckFailedException): Item | undefined {
  return error.Item ? itemOf(error.Item) : undefined;
}

export class DynamoSessionStore implements SessionStore {
  private readonly operationTimeoutMs: number;

  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    options: DynamoStoreOptions = {},
  ) {
    this.operationTimeoutMs = options.operationTimeoutMs ?? STORE_OPERATION_TIMEOUT_MS;
  }

  /** One operation, bounded by the store's operation timeout (see `guarded`). */
  private guarded<T>(operation: (signal: AbortSignal) => Promise<T>): Promise<T> {
    return guarded(this.operationTimeoutMs, operation);
  }

  async createSession(session: SessionRecord): Promise<void> {
    checkSize('the session (its client capabilities and clientInfo)', session);
    await this.guarded((abortSignal) =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: pk(session.id), sk: SESSION_SK, ...session },
          // Ids carry 256 random bits, but a collision must never overwrite another caller's session.
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
        { abortSignal },
      ),
    );
  }

  async loadSession(
    sessionId: string,
    now = nowSeconds(),
    options: { includeExpired?: boolean; withPending?: boolean } = {},
  ): Promise<LoadedSession | undefined> {
    // The plain client's Query, not the DocumentClient's: every 2025 request makes this read, and the
    // DocumentClient's generic walk of input and output is about a tenth of its CPU (./attribute-values.ts).
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.guarded((abortSignal) =>
        this.client.send(
          new ItemsQueryCommand({
            TableName: this.tableName,
            ConsistentRead: true,
            KeyConditionExpression: '#pk = :pk AND #p0 >= :from',
            // What the session, its target sessions and the pending count need: no answer is read.
            ProjectionExpression: SESSION_READ_PROJECTION.expression,
            ExpressionAttributeNames: { '#pk': 'pk', ...SESSION_READ_PROJECTION.names },
            ExpressionAttributeValues: {
              ':pk': { S: pk(sessionId) },
              ':from': { S: options.withPending ? PENDING_PREFIX : SESSION_AND_TARGETS },
            },
            ExclusiveStartKey: startKey,
          }),
          { abortSignal },
        ),
      );
      for (const item of page.Items ?? []) items.push(itemOf(item));
      startKey = page.LastEvaluatedKey;
    } while (startKey);

    const sessionItem = items.find((item) => item.sk === SESSION_SK);
    // DynamoDB deletes expired items lazily (and dynalite never): expiry is checked on every read.
    const session = sessionItem && sessionOf(sessionItem);
    if (!session || (session.expiresAt <= now && !options.includeExpired)) return undefined;
    const loaded: LoadedSession = { session, targets: new Map() };
    let pendingCount = 0;
    for (const item of items) {
      const sk = String(item.sk);
      if (sk.startsWith(TARGET_PREFIX)) loaded.targets.set(sk.slice(TARGET_PREFIX.length), targetSessionOf(item));
      else if (sk.startsWith(PENDING_PREFIX) && Number(item.expiresAt) > now) pendingCount++;
    }
    if (options.withPending) loaded.pendingCount = pendingCount;
    return loaded;
  }

  async loadForAnswer(sessionId: string, gatewayId: string, now = nowSeconds()): Promise<LoadedAnswer | undefined> {
    const keys = [
      { pk: pk(sessionId), sk: SESSION_SK },
      { pk: pk(sessionId), sk: pendingSk(gatewayId) },
    ];
    let items: Item[] = [];
    // Unprocessed keys (throttling) are read again, a bounded number of times.
    for (let attempt = 0, wanted = keys; wanted.length > 0; attempt++) {
      if (attempt === 3) throw new StoreUnavailableError(new Error('unprocessed reads after 3 attempts'));
      const out = await this.guarded((abortSignal) =>
        this.client.send(
          new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: wanted, ConsistentRead: true } } }),
          { abortSignal },
        ),
      );
      items = [...items, ...(out.Responses?.[this.tableName] ?? [])];
      wanted = (out.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as typeof keys;
      if (wanted.length) await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
    }
    const sessionItem = items.find((item) => item.sk === SESSION_SK);
    const session = sessionItem && sessionOf(sessionItem);
    if (!session || session.expiresAt <= now) return undefined;
    const pendingItem = items.find((item) => item.sk === pendingSk(gatewayId));
    const pending = pendingItem ? pendingOf(pendingItem) : undefined;
    return { session, pending: pending && pending.expiresAt > now ? pending : undefined };
  }

  async putTargetSession(
    session: SessionRecord,
    target: TargetSessionRecord,
    options: { replacing?: string } = {},
  ): Promise<TargetSessionRecord> {
    const Key = { pk: pk(session.id), sk: targetSk(target.target) };
    let found: Item | undefined;
    try {
      await this.guarded((abortSignal) =>
        this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { ...Key, ...target, expiresAt: session.expiresAt },
            ConditionExpression:
              options.replacing === undefined
                ? 'attribute_not_exists(sk)'
                : 'attribute_not_exists(sk) OR targetSessionId = :replacing',
            ...(options.replacing === undefined
              ? {}
              : { ExpressionAttributeValues: { ':replacing': options.replacing } }),
            // The one kept instead comes back with the refusal: no second request to learn it.
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
          { abortSignal },
        ),
      );
      return target;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      found = refusedItem(error);
    }
    // Another instance kept one first: that one is used. This condition is refused only when an item
    // is there, so DynamoDB always returns it; without it (dynalite ignores the option), one
    // consistent read, on this race only.
    found ??= (
      await this.guarded((abortSignal) =>
        this.client.send(new GetCommand({ TableName: this.tableName, Key, ConsistentRead: true }), { abortSignal }),
      )
    ).Item;
    if (!found) return this.putTargetSession(session, target, options); // removed meanwhile: try again
    const { expiresAt: _expiresAt, ...kept } = targetSessionOf(found);
    return kept;
  }

  async setLogLevel(session: SessionRecord, level: string): Promise<void> {
    await this.guarded((abortSignal) =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: pk(session.id), sk: SESSION_SK },
          UpdateExpression: 'SET logLevel = :level',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':level': level },
        }),
        { abortSignal },
      ),
    );
  }

  async markClientResumes(sessionId: string, proof?: { key: string; expiresAt: number }): Promise<void> {
    const marked = this.guarded((abortSignal) =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: pk(sessionId), sk: SESSION_SK },
          UpdateExpression: 'SET clientResumes = :yes',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':yes': true },
        }),
        { abortSignal },
      ),
    ).catch((error) => {
      // A session deleted meanwhile has nothing to mark; its client's record is still written.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    });
    const recorded = proof
      ? this.guarded((abortSignal) =>
          this.client.send(
            new PutCommand({
              TableName: this.tableName,
              Item: { pk: resumeProofPk(proof.key), sk: RESUME_PROOF_SK, expiresAt: proof.expiresAt },
            }),
            { abortSignal },
          ),
        )
      : undefined;
    await Promise.all([marked, recorded]);
  }

  async hasResumeProof(key: string, now = nowSeconds()): Promise<boolean> {
    const found = await this.guarded((abortSignal) =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: { pk: resumeProofPk(key), sk: RESUME_PROOF_SK } }),
        { abortSignal },
      ),
    );
    const expiresAt = found.Item?.expiresAt;
    return typeof expiresAt === 'number' && expiresAt > now;
  }

  async acquireClientStream(session: SessionRecord, token: string, untilMs: number): Promise<boolean> {
    try {
      await this.guarded((abortSignal) =>
        this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { pk: pk(session.id), sk: CLIENT_STREAM_SK, token, untilMs, expiresAt: session.expiresAt },
            ConditionExpression: 'attribute_not_exists(sk) OR untilMs <= :nowMs',
            ExpressionAttributeValues: { ':nowMs': Date.now() },
          }),
          { abortSignal },
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async releaseClientStream(sessionId: string, token: string): Promise<void> {
    try {
      await this.guarded((abortSignal) =>
        this.client.send(
          new DeleteCommand({
            TableName: this.tableName,
            Key: { pk: pk(sessionId), sk: CLIENT_STREAM_SK },
            ConditionExpression: '#token = :token',
            ExpressionAttributeNames: { '#token': 'token' },
            ExpressionAttributeValues: { ':token': token },
          }),
          { abortSignal },
        ),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async saveTargetEventId(sessionId: string, target: string, targetSessionId: string, eventId: string): Promise<void> {
    try {
      await this.guarded((abortSignal) =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: pk(sessionId), sk: targetSk(target) },
            UpdateExpression: 'SET lastEventId = :eventId',
            ConditionExpression: 'targetSessionId = :targetSessionId',
            ExpressionAttributeValues: { ':eventId': eventId, ':targetSessionId': targetSessionId },
          }),
          { abortSignal },
        ),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async deleteSession(sessionId: string): Promise<void> {
    // Everything in the partition (pending records and markers included): only DELETE pays for this read.
    const keys: Array<{ pk: string; sk: string }> = [];
    for await (const page of this.pages({
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk(sessionId) },
      ProjectionExpression: 'pk, sk',
    })) {
      keys.push(...((page.Items ?? []) as Array<{ pk: string; sk: string }>));
    }
    // The session item first: once it is gone no request can use the partition, whatever else fails.
    keys.sort((a, b) => (a.sk === SESSION_SK ? -1 : b.sk === SESSION_SK ? 1 : 0));
    await this.batchDelete(keys);
  }

  async markCancelled(
    sessionId: string,
    upstreamId: string,
    expiresAt: number,
    reason: CallEndMarker = 'client-cancelled',
  ): Promise<void> {
    await this.guarded((abortSignal) =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: pk(sessionId), sk: cancelledSk(upstreamId), expiresAt, reason },
        }),
        { abortSignal },
      ),
    );
  }

  async isCancelled(sessionId: string, upstreamId: string): Promise<CallEndMarker | undefined> {
    const out = await this.guarded((abortSignal) =>
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: pk(sessionId), sk: cancelledSk(upstreamId) },
          ConsistentRead: true,
        }),
        { abortSignal },
      ),
    );
    if (!out.Item) return undefined;
    return endMarker(out.Item.reason);
  }

  async putPending(session: Pick<SessionRecord, 'id'>, pending: PendingRecord): Promise<void> {
    await this.guarded((abortSignal) =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: pk(session.id), sk: pendingSk(pending.gatewayId), ...pending },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
        { abortSignal },
      ),
    );
  }

  async countPending(sessionId: string, limit: number, now = nowSeconds()): Promise<number> {
    let count = 0;
    for await (const page of this.pages({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
      FilterExpression: 'expiresAt > :now',
      ExpressionAttributeValues: { ':pk': pk(sessionId), ':p': PENDING_PREFIX, ':now': now },
      Select: 'COUNT',
    })) {
      count += page.Count ?? 0;
      if (count >= limit) break;
    }
    return count;
  }

  /** A consistent Query of this table, page by page (each page bounded by the store's timeouts). */
  private async *pages(input: Omit<QueryCommandInput, 'TableName' | 'ConsistentRead' | 'ExclusiveStartKey'>) {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.guarded((abortSignal) =>
        this.client.send(
          new QueryCommand({ ...input, TableName: this.tableName, ConsistentRead: true, ExclusiveStartKey: startKey }),
          { abortSignal },
        ),
      );
      yield page;
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }

  async claimPending(sessionId: string, gatewayId: string, now = nowSeconds()): Promise<string | undefined> {
    const token = newClaimToken();
    return (await this.applied(sessionId, gatewayId, 'claim', { now, nowMs: Date.now(), token })) ? token : undefined;
  }

  async settleClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean> {
    return this.applied(sessionId, gatewayId, 'settle', { now: nowSeconds(), nowMs: Date.now(), token });
  }

  async releaseClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean> {
    return this.applied(sessionId, gatewayId, 'release', { now: nowSeconds(), nowMs: Date.now(), token });
  }

  async ackClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean> {
    return this.applied(sessionId, gatewayId, 'ack', { now: nowSeconds(), nowMs: Date.now(), token });
  }

  async expirePending(sessionId: string, gatewayId: string): Promise<PendingWriteOutcome> {
    // Why it was refused (answered, a delivery in flight, expired) comes back with the refusal.
    const refusal = await this.transition(sessionId, gatewayId, 'expire', { now: nowSeconds(), nowMs: Date.now() });
    return this.outcome(sessionId, gatewayId, refusal);
  }

  /** A pending record's conditional write: written, or refused with the record it found (see `refusedItem`). */
  private async outcome(
    sessionId: string,
    gatewayId: string,
    refusal: ConditionalCheckFailedException | undefined,
  ): Promise<PendingWriteOutcome> {
    if (!refusal) return { written: true };
    const item = refusedItem(refusal);
    if (item) return { written: false, current: pendingOf(item) };
    // No item on the refusal: DynamoDB found none (the read below finds none either), or the endpoint
    // ignored ALL_OLD (dynalite): read it, past its TTL as the refusal would have returned it.
    return { written: false, current: await this.getPending(sessionId, gatewayId, 0) };
  }

  async renewHolder(sessionId: string, gatewayIds: string[], until: number): Promise<void> {
    const inputs = { now: nowSeconds(), nowMs: Date.now(), until };
    await Promise.all(gatewayIds.map((gatewayId) => this.transition(sessionId, gatewayId, 'renewHolder', inputs)));
  }

  async deletePending(sessionId: string, gatewayIds: string[]): Promise<void> {
    const [only] = gatewayIds;
    if (only !== undefined && gatewayIds.length === 1) {
      await this.guarded((abortSignal) =>
        this.client.send(
          new DeleteCommand({ TableName: this.tableName, Key: { pk: pk(sessionId), sk: pendingSk(only) } }),
          { abortSignal },
        ),
      );
      return;
    }
    await this.batchDelete(gatewayIds.map((id) => ({ pk: pk(sessionId), sk: pendingSk(id) })));
  }

  async getPending(sessionId: string, gatewayId: string, now = nowSeconds()): Promise<PendingRecord | undefined> {
    const out = await this.guarded((abortSignal) =>
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: pk(sessionId), sk: pendingSk(gatewayId) },
          ConsistentRead: true,
        }),
        { abortSignal },
      ),
    );
    const record = out.Item && pendingOf(out.Item);
    return record && record.expiresAt > now ? record : undefined;
  }

  async detachHolder(sessionId: string, gatewayIds: string[]): Promise<void> {
    const inputs = { now: nowSeconds(), nowMs: Date.now() };
    await Promise.all(gatewayIds.map((gatewayId) => this.transition(sessionId, gatewayId, 'detachHolder', inputs)));
  }

  async getWaitingCall(
    sessionId: string,
    streamId: string,
    now = nowSeconds(),
  ): Promise<WaitingCallRecord | undefined> {
    const out = await this.guarded((abortSignal) =>
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: pk(sessionId), sk: waitingCallSk(streamId) },
          ConsistentRead: true,
        }),
        { abortSignal },
      ),
    );
    const record = out.Item && waitingCallOf(out.Item);
    return record && record.expiresAt > now ? record : undefined;
  }

  async swapWaitingCall(
    sessionId: string,
    next: WaitingCallRecord,
    expectedVersion: number | undefined,
  ): Promise<boolean> {
    try {
      await this.guarded((abortSignal) =>
        this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { pk: pk(sessionId), sk: waitingCallSk(next.streamId), ...next },
            ...(expectedVersion === undefined
              ? { ConditionExpression: 'attribute_not_exists(pk)' }
              : {
                  // Attribute names are placeholders: DynamoDB reserves many plain words.
                  ConditionExpression: '#v = :v',
                  ExpressionAttributeNames: { '#v': 'version' },
                  ExpressionAttributeValues: { ':v': expectedVersion },
                }),
          }),
          { abortSignal },
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async deleteWaitingCall(sessionId: string, streamId: string, holder?: string): Promise<void> {
    try {
      await this.guarded((abortSignal) =>
        this.client.send(
          new DeleteCommand({
            TableName: this.tableName,
            Key: { pk: pk(sessionId), sk: waitingCallSk(streamId) },
            ...(holder === undefined
              ? {}
              : {
                  ConditionExpression: '#holder = :holder',
                  ExpressionAttributeNames: { '#holder': 'holder' },
                  ExpressionAttributeValues: { ':holder': holder },
                }),
          }),
          { abortSignal },
        ),
      );
    } catch (error) {
      // Another holder's now (or gone): it is not this holder's to remove.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async answerPending(
    sessionId: string,
    gatewayId: string,
    answer: string,
    now = nowSeconds(),
  ): Promise<PendingWriteOutcome> {
    // The answer is kept in the record: it must fit one item with the record's other attributes.
    checkSize('the answer', { answer, gatewayId, pad: 'x'.repeat(1024) });
    // Who answered first (or that this very write was applied, its reply lost) comes back with the refusal.
    const refusal = await this.transition(sessionId, gatewayId, 'answer', { now, nowMs: Date.now(), answer });
    return this.outcome(sessionId, gatewayId, refusal);
  }

  async recordAnswer(sessionId: string, gatewayId: string, answer: string, now = nowSeconds()): Promise<boolean> {
    checkSize('the answer', { answer, gatewayId, pad: 'x'.repeat(1024) });
    return this.applied(sessionId, gatewayId, 'record', { now, nowMs: Date.now(), answer });
  }

  async putStreamEvent(sessionId: string, event: StreamEventRecord): Promise<void> {
    const item = { pk: pk(sessionId), sk: eventSk(event.streamId, event.seq), ...event };
    checkSize('the stream event', item);
    await this.guarded((abortSignal) =>
      this.client.send(new PutCommand({ TableName: this.tableName, Item: item }), { abortSignal }),
    );
  }

  async putStreamEvents(sessionId: string, events: StreamEventRecord[], pending: PendingRecord[] = []): Promise<void> {
    const items = events.map((event) => ({ pk: pk(sessionId), sk: eventSk(event.streamId, event.seq), ...event }));
    for (const item of items) checkSize('the stream event', item);
    // The pending records first: a chunk that fails leaves no event asking what was never recorded.
    await this.batchWrite([
      ...pending.map((record) => ({
        PutRequest: { Item: { pk: pk(sessionId), sk: pendingSk(record.gatewayId), ...record } },
      })),
      ...items.map((Item) => ({ PutRequest: { Item } })),
    ]);
  }

  async endStream(
    sessionId: string,
    end: StreamEventRecord,
    drop: number[],
    pending: string[] = [],
    head?: StreamEventRecord,
  ): Promise<void> {
    const item = { pk: pk(sessionId), sk: eventSk(end.streamId, end.seq), ...end };
    checkSize('the stream event', item);
    if (drop.length === 0 && pending.length === 0 && !head) {
      await this.guarded((abortSignal) =>
        this.client.send(new PutCommand({ TableName: this.tableName, Item: item }), { abortSignal }),
      );
      return;
    }
    // The end first: a reader that comes between two batches finds it and stops there.
    await this.batchWrite([
      { PutRequest: { Item: item } },
      ...(head ? [{ PutRequest: { Item: { pk: pk(sessionId), sk: eventSk(head.streamId, 0), ...head } } }] : []),
      ...drop.map((seq) => ({ DeleteRequest: { Key: { pk: pk(sessionId), sk: eventSk(end.streamId, seq) } } })),
      ...pending.map((id) => ({ DeleteRequest: { Key: { pk: pk(sessionId), sk: pendingSk(id) } } })),
    ]);
  }

  async readStream(
    sessionId: string,
    streamId: string,
    fromSeq: number,
    now = nowSeconds(),
  ): Promise<StreamEventRecord[]> {
    const events: StreamEventRecord[] = [];
    for await (const page of this.pages({
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': pk(sessionId),
        ':from': eventSk(streamId, fromSeq),
        ':to': streamEndSk(streamId),
      },
    })) {
      for (const item of page.Items ?? []) {
        const event = streamEventOf(item);
        if (event.expiresAt > now) events.push(event);
      }
    }
    return events;
  }

  /** One transition of a pending record: false when the condition refused it. */
  private async applied(
    sessionId: string,
    gatewayId: string,
    name: TransitionName,
    inputs: TransitionInputs,
  ): Promise<boolean> {
    return (await this.transition(sessionId, gatewayId, name, inputs)) === undefined;
  }

  /**
   * One transition of a pending record (./pending-transitions.ts) as one conditional UpdateItem:
   * undefined when applied, else the refusal (with the record it found, when the transition asks for it).
   */
  private async transition(
    sessionId: string,
    gatewayId: string,
    name: TransitionName,
    inputs: TransitionInputs,
  ): Promise<ConditionalCheckFailedException | undefined> {
    const update = dynamoUpdateOf(PENDING_TRANSITIONS[name], inputs);
    try {
      await this.guarded((abortSignal) =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: pk(sessionId), sk: pendingSk(gatewayId) },
            ...update,
          }),
          { abortSignal },
        ),
      );
      return undefined;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return error;
      throw error;
    }
  }

  async countInitialize(
    principal: string,
    windowStart: number,
    windowSeconds: number,
    limit: number,
  ): Promise<boolean> {
    return this.conditionalCount({ pk: principalPk(principal), sk: rateSk(windowStart) }, 1, {
      condition: 'attribute_not_exists(#n) OR #n < :bound',
      bound: limit,
      ttl: windowStart + windowSeconds + COUNTER_TTL_SLACK_SECONDS,
    });
  }

  admitSession(
    principal: string,
    expiresAt: number,
    limits: { max: number; bucketSeconds: number },
    now = nowSeconds(),
  ): Promise<Admission> {
    return this.admitLive(LIVE_SESSIONS, principal, expiresAt, limits, now);
  }

  async releaseSession(principal: string, expiresAt: number, bucketSeconds: number): Promise<void> {
    await this.releaseLive(LIVE_SESSIONS, principal, expiresAt, bucketSeconds);
  }

  admitBridgedCall(
    principal: string,
    expiresAt: number,
    limits: { max: number; bucketSeconds: number },
    now = nowSeconds(),
  ): Promise<Admission> {
    return this.admitLive(BRIDGED_CALLS, principal, expiresAt, limits, now);
  }

  async releaseBridgedCall(principal: string, expiresAt: number, bucketSeconds: number): Promise<void> {
    await this.releaseLive(BRIDGED_CALLS, principal, expiresAt, bucketSeconds);
  }

  /** One more live item of `counter` (./principal-counters.ts): read the live buckets, grow only its own. */
  private async admitLive(
    counter: LiveCounter,
    principal: string,
    expiresAt: number,
    limits: { max: number; bucketSeconds: number },
    now: number,
  ): Promise<Admission> {
    const partition = principalPk(principal);
    const own = bucketStartOf(expiresAt, limits.bucketSeconds);
    let others = 0;
    let firstEnd = own + limits.bucketSeconds;
    for await (const page of this.pages({
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': partition,
        ':from': counter.sk(bucketStartOf(now, limits.bucketSeconds)),
        ':to': counter.end,
      },
    })) {
      for (const item of page.Items ?? []) {
        const bucket = bucketOfSk(item.sk as string);
        const count = Number(item.count ?? 0);
        if (count > 0) firstEnd = Math.min(firstEnd, bucket + limits.bucketSeconds);
        if (bucket !== own) others += count;
      }
    }
    const refused: Admission = { admitted: false, retryAfterSeconds: Math.max(1, firstEnd - now) };
    const room = limits.max - others;
    if (room <= 0) return refused;
    const admitted = await this.conditionalCount({ pk: partition, sk: counter.sk(own) }, 1, {
      condition: 'attribute_not_exists(#n) OR #n < :bound',
      bound: room,
      ttl: own + limits.bucketSeconds + COUNTER_TTL_SLACK_SECONDS,
    });
    return admitted ? { admitted: true } : refused;
  }

  private async releaseLive(
    counter: LiveCounter,
    principal: string,
    expiresAt: number,
    bucketSeconds: number,
  ): Promise<void> {
    const own = bucketStartOf(expiresAt, bucketSeconds);
    await this.conditionalCount({ pk: principalPk(principal), sk: counter.sk(own) }, -1, {
      condition: '#n > :bound',
      bound: 0,
      ttl: own + bucketSeconds + COUNTER_TTL_SLACK_SECONDS,
    });
  }

  /** `ADD count delta` on one counter item when `condition` holds (its TTL set with it); false when it did not. */
  private async conditionalCount(
    key: { pk: string; sk: string },
    delta: number,
    options: { condition: string; bound: number; ttl: number },
  ): Promise<boolean> {
    try {
      await this.guarded((abortSignal) =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: key,
            UpdateExpression: 'ADD #n :delta SET expiresAt = :ttl',
            ConditionExpression: options.condition,
            ExpressionAttributeNames: { '#n': 'count' },
            ExpressionAttributeValues: { ':delta': delta, ':ttl': options.ttl, ':bound': options.bound },
          }),
          { abortSignal },
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  private batchDelete(keys: Array<{ pk: string; sk: string }>): Promise<void> {
    return this.batchWrite(keys.map((Key) => ({ DeleteRequest: { Key } })));
  }

  private async batchWrite(
    writes: Array<
      { DeleteRequest: { Key: Record<string, unknown> } } | { PutRequest: { Item: Record<string, unknown> } }
    >,
  ): Promise<void> {
    for (let i = 0; i < writes.length; i += 25) {
      let requests = writes.slice(i, i + 25);
      // Unprocessed items are retried a bounded number of times (throttling), then reported.
      for (let attempt = 0; requests.length > 0; attempt++) {
        if (attempt === 5) throw new StoreUnavailableError(new Error('unprocessed writes after 5 attempts'));
        const result = await this.guarded((abortSignal) =>
          this.client.send(new BatchWriteCommand({ RequestItems: { [this.tableName]: requests } }), { abortSignal }),
        );
        requests = (result.UnprocessedItems?.[this.tableName] ?? []) as typeof requests;
        if (requests.length) await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
      }
    }
  }
}
