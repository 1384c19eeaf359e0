import {
  type AttributeValue,
  ConditionalCheckFailedException,
  QueryCommand as ItemsQueryCommand,
} from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { StoreUnavailableError } from '../../protocol/errors';
import { itemOf } from '../attribute-values';
import {
  CLIENT_STREAM_SK,
  cancelledSk,
  checkSize,
  endMarker,
  type Item,
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
  TARGET_PREFIX,
  targetSessionOf,
  targetSk,
} from '../items';
import type {
  CallEndMarker,
  LoadedAnswer,
  LoadedSession,
  SessionRecord,
  SessionRecordStore,
  TargetSessionRecord,
} from '../store';
import { pendingTransition } from './pending';
import { type DynamoTable, refusedItem, untilProcessed } from './table';

/**
 * The session part of the DynamoDB store: the session item, its target sessions, the markers and the
 * client GET stream in its partition, and what a session's calls do with its pending records.
 */
export class DynamoSessionRecords implements SessionRecordStore {
  constructor(private readonly table: DynamoTable) {}

  async createSession(session: SessionRecord): Promise<void> {
    checkSize('the session (its client capabilities and clientInfo)', session);
    const refusal = await this.table.refusal((abortSignal) =>
      this.table.client.send(
        new PutCommand({
          TableName: this.table.name,
          Item: { pk: pk(session.id), sk: SESSION_SK, ...session },
          // Ids carry 256 random bits, but a collision must never overwrite another caller's session.
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
        { abortSignal },
      ),
    );
    // Ids carry 256 random bits: another caller's item under this id is refused as retryable (a new
    // initialize draws a new id). A retry of this very write is not refused (../exactly-once-writes.ts).
    if (refusal) throw new StoreUnavailableError(refusal);
  }

  async loadSession(
    sessionId: string,
    now = this.table.nowSeconds(),
    options: { includeExpired?: boolean; withPending?: boolean } = {},
  ): Promise<LoadedSession | undefined> {
    // The plain client's Query, not the DocumentClient's: every 2025 request makes this read, and the
    // DocumentClient's generic walk of input and output is about a tenth of its CPU (./attribute-values.ts).
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.table.guarded((abortSignal) =>
        this.table.client.send(
          new ItemsQueryCommand({
            TableName: this.table.name,
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

  async loadForAnswer(
    sessionId: string,
    gatewayId: string,
    now = this.table.nowSeconds(),
  ): Promise<LoadedAnswer | undefined> {
    const keys = [
      { pk: pk(sessionId), sk: SESSION_SK },
      { pk: pk(sessionId), sk: pendingSk(gatewayId) },
    ];
    const items: Item[] = [];
    // Unprocessed keys (throttling) are read again, a bounded number of times.
    await untilProcessed(this.table.clock, keys, 3, 'reads', async (wanted) => {
      const out = await this.table.guarded((abortSignal) =>
        this.table.client.send(
          new BatchGetCommand({ RequestItems: { [this.table.name]: { Keys: wanted, ConsistentRead: true } } }),
          { abortSignal },
        ),
      );
      items.push(...(out.Responses?.[this.table.name] ?? []));
      return (out.UnprocessedKeys?.[this.table.name]?.Keys ?? []) as typeof keys;
    });
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
      await this.table.guarded((abortSignal) =>
        this.table.client.send(
          new PutCommand({
            TableName: this.table.name,
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
      await this.table.guarded((abortSignal) =>
        this.table.client.send(new GetCommand({ TableName: this.table.name, Key, ConsistentRead: true }), {
          abortSignal,
        }),
      )
    ).Item;
    if (!found) return this.putTargetSession(session, target, options); // removed meanwhile: try again
    const { expiresAt: _expiresAt, ...kept } = targetSessionOf(found);
    return kept;
  }

  async setLogLevel(session: SessionRecord, level: string): Promise<void> {
    await this.table.guarded((abortSignal) =>
      this.table.client.send(
        new UpdateCommand({
          TableName: this.table.name,
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
    const marked = this.table
      .guarded((abortSignal) =>
        this.table.client.send(
          new UpdateCommand({
            TableName: this.table.name,
            Key: { pk: pk(sessionId), sk: SESSION_SK },
            UpdateExpression: 'SET clientResumes = :yes',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeValues: { ':yes': true },
          }),
          { abortSignal },
        ),
      )
      .catch((error) => {
        // A session deleted meanwhile has nothing to mark; its client's record is still written.
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      });
    const recorded = proof
      ? this.table.guarded((abortSignal) =>
          this.table.client.send(
            new PutCommand({
              TableName: this.table.name,
              Item: { pk: resumeProofPk(proof.key), sk: RESUME_PROOF_SK, expiresAt: proof.expiresAt },
            }),
            { abortSignal },
          ),
        )
      : undefined;
    await Promise.all([marked, recorded]);
  }

  async hasResumeProof(key: string, now = this.table.nowSeconds()): Promise<boolean> {
    const found = await this.table.guarded((abortSignal) =>
      this.table.client.send(
        new GetCommand({ TableName: this.table.name, Key: { pk: resumeProofPk(key), sk: RESUME_PROOF_SK } }),
        { abortSignal },
      ),
    );
    const expiresAt = found.Item?.expiresAt;
    return typeof expiresAt === 'number' && expiresAt > now;
  }

  async acquireClientStream(session: SessionRecord, token: string, untilMs: number): Promise<boolean> {
    try {
      await this.table.guarded((abortSignal) =>
        this.table.client.send(
          new PutCommand({
            TableName: this.table.name,
            Item: { pk: pk(session.id), sk: CLIENT_STREAM_SK, token, untilMs, expiresAt: session.expiresAt },
            ConditionExpression: 'attribute_not_exists(sk) OR untilMs <= :nowMs',
            ExpressionAttributeValues: { ':nowMs': this.table.nowMs() },
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
      await this.table.guarded((abortSignal) =>
        this.table.client.send(
          new DeleteCommand({
            TableName: this.table.name,
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
      await this.table.guarded((abortSignal) =>
        this.table.client.send(
          new UpdateCommand({
            TableName: this.table.name,
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
    for await (const page of this.table.pages({
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk(sessionId) },
      ProjectionExpression: 'pk, sk',
    })) {
      keys.push(...((page.Items ?? []) as Array<{ pk: string; sk: string }>));
    }
    // The pending records first, by a write of their own, then the session item before the rest: once
    // the session item is gone no request can use the partition, whatever else fails. Every request
    // reads the session item first, but an answer POST records its answer for the holder with one
    // conditional write on the pending record alone (recordAnswer with a principal): a record left
    // behind a deleted session item would take it, so none is.
    const pending = keys.filter((key) => key.sk.startsWith(PENDING_PREFIX));
    const rest = keys.filter((key) => !key.sk.startsWith(PENDING_PREFIX));
    rest.sort((a, b) => (a.sk === SESSION_SK ? -1 : b.sk === SESSION_SK ? 1 : 0));
    if (pending.length > 0) await this.table.batchDelete(pending);
    await this.table.batchDelete(rest);
  }

  async markCancelled(
    sessionId: string,
    targetCallId: string,
    expiresAt: number,
    reason: CallEndMarker = 'client-cancelled',
  ): Promise<void> {
    await this.table.guarded((abortSignal) =>
      this.table.client.send(
        new PutCommand({
          TableName: this.table.name,
          Item: { pk: pk(sessionId), sk: cancelledSk(targetCallId), expiresAt, reason },
        }),
        { abortSignal },
      ),
    );
  }

  async isCancelled(sessionId: string, targetCallId: string): Promise<CallEndMarker | undefined> {
    const out = await this.table.guarded((abortSignal) =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.name,
          Key: { pk: pk(sessionId), sk: cancelledSk(targetCallId) },
          ConsistentRead: true,
        }),
        { abortSignal },
      ),
    );
    if (!out.Item) return undefined;
    return endMarker(out.Item.reason);
  }

  async countPending(sessionId: string, limit: number, now = this.table.nowSeconds()): Promise<number> {
    let count = 0;
    for await (const page of this.table.pages({
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

  async detachHolder(sessionId: string, gatewayIds: string[]): Promise<void> {
    const inputs = { now: this.table.nowSeconds(), nowMs: this.table.nowMs() };
    await Promise.all(
      gatewayIds.map((gatewayId) => pendingTransition(this.table, sessionId, gatewayId, 'detachHolder', inputs)),
    );
  }
}
