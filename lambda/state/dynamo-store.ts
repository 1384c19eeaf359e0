import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  type LoadedSession,
  type PendingRecord,
  type SessionRecord,
  type SessionStore,
  StoreUnavailableError,
  type TargetSessionRecord,
} from './store';

/** Item layout: see DESIGN.md "State: one table, one partition per session". */
const pk = (sessionId: string) => `S#${sessionId}`;
const SESSION_SK = 'SESSION';
const targetSk = (target: string) => `T#${target}`;
const pendingSk = (gatewayId: string) => `P#${gatewayId}`;
const cancelledSk = (upstreamId: string) => `C#${upstreamId}`;

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Wraps SDK failures other than a refused condition, so callers can answer "try again". */
async function guarded<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw error;
    throw new StoreUnavailableError(error);
  }
}

export class DynamoSessionStore implements SessionStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async createSession(session: SessionRecord): Promise<void> {
    await guarded(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: pk(session.id), sk: SESSION_SK, ...session },
          // Ids carry 256 random bits, but a collision must never overwrite another caller's session.
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }

  async loadSession(sessionId: string, now = nowSeconds()): Promise<LoadedSession | undefined> {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await guarded(() =>
        this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': pk(sessionId) },
            ConsistentRead: true,
            ExclusiveStartKey: startKey,
          }),
        ),
      );
      items.push(...((page.Items ?? []) as Record<string, unknown>[]));
      startKey = page.LastEvaluatedKey;
    } while (startKey);

    const sessionItem = items.find((item) => item.sk === SESSION_SK);
    // DynamoDB deletes expired items lazily (and dynalite never): expiry is checked on every read.
    if (!sessionItem || (sessionItem.expiresAt as number) <= now) return undefined;
    const { pk: _pk, sk: _sk, ...session } = sessionItem;
    const loaded: LoadedSession = {
      session: session as unknown as SessionRecord,
      targets: new Map(),
      pending: new Map(),
      cancelled: new Set(),
    };
    for (const item of items) {
      const sk = item.sk as string;
      const { pk: _p, sk: _s, ...rest } = item;
      if (sk.startsWith('T#')) loaded.targets.set(sk.slice(2), rest as unknown as TargetSessionRecord);
      else if (sk.startsWith('P#') && (item.expiresAt as number) > now) {
        loaded.pending.set(sk.slice(2), rest as unknown as PendingRecord);
      } else if (sk.startsWith('C#')) loaded.cancelled?.add(sk.slice(2));
    }
    return loaded;
  }

  async putTargetSession(session: SessionRecord, target: TargetSessionRecord): Promise<void> {
    await guarded(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: pk(session.id), sk: targetSk(target.target), ...target, expiresAt: session.expiresAt },
        }),
      ),
    );
  }

  async setLogLevel(session: SessionRecord, level: string): Promise<void> {
    await guarded(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: pk(session.id), sk: SESSION_SK },
          UpdateExpression: 'SET logLevel = :level',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':level': level },
        }),
      ),
    );
  }

  async deleteSession(loaded: LoadedSession): Promise<void> {
    const keys = [
      { pk: pk(loaded.session.id), sk: SESSION_SK },
      ...[...loaded.targets.keys()].map((name) => ({ pk: pk(loaded.session.id), sk: targetSk(name) })),
      ...[...loaded.pending.keys()].map((id) => ({ pk: pk(loaded.session.id), sk: pendingSk(id) })),
      ...[...(loaded.cancelled ?? [])].map((id) => ({ pk: pk(loaded.session.id), sk: cancelledSk(id) })),
    ];
    await this.batchDelete(keys);
  }

  async markCancelled(sessionId: string, upstreamId: string, expiresAt: number): Promise<void> {
    await guarded(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: pk(sessionId), sk: cancelledSk(upstreamId), expiresAt },
        }),
      ),
    );
  }

  async isCancelled(sessionId: string, upstreamId: string): Promise<boolean> {
    const out = await guarded(() =>
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: pk(sessionId), sk: cancelledSk(upstreamId) },
          ConsistentRead: true,
        }),
      ),
    );
    return out.Item !== undefined;
  }

  async putPending(session: Pick<SessionRecord, 'id'>, pending: PendingRecord): Promise<void> {
    await guarded(() =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: pk(session.id), sk: pendingSk(pending.gatewayId), ...pending },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }

  async claimPending(sessionId: string, gatewayId: string, now = nowSeconds()): Promise<boolean> {
    return this.settlePending(sessionId, gatewayId, now);
  }

  async deletePending(sessionId: string, gatewayIds: string[]): Promise<void> {
    const [only] = gatewayIds;
    if (only !== undefined && gatewayIds.length === 1) {
      await guarded(() =>
        this.client.send(
          new DeleteCommand({ TableName: this.tableName, Key: { pk: pk(sessionId), sk: pendingSk(only) } }),
        ),
      );
      return;
    }
    await this.batchDelete(gatewayIds.map((id) => ({ pk: pk(sessionId), sk: pendingSk(id) })));
  }

  async getPending(sessionId: string, gatewayId: string, now = nowSeconds()): Promise<PendingRecord | undefined> {
    const out = await guarded(() =>
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: pk(sessionId), sk: pendingSk(gatewayId) },
          ConsistentRead: true,
        }),
      ),
    );
    if (!out.Item || (out.Item.expiresAt as number) <= now) return undefined;
    const { pk: _pk, sk: _sk, ...record } = out.Item;
    return record as PendingRecord;
  }

  async answerPending(sessionId: string, gatewayId: string, answer: string, now = nowSeconds()): Promise<boolean> {
    return this.settlePending(sessionId, gatewayId, now, answer);
  }

  /** pending → answered, at most once and only before expiry; optionally keeping the answer. */
  private async settlePending(sessionId: string, gatewayId: string, now: number, answer?: string): Promise<boolean> {
    const keepAnswer = answer !== undefined;
    try {
      await guarded(() =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: pk(sessionId), sk: pendingSk(gatewayId) },
            UpdateExpression: keepAnswer ? 'SET #status = :answered, #answer = :answer' : 'SET #status = :answered',
            ConditionExpression: '#status = :pending AND expiresAt > :now',
            ExpressionAttributeNames: { '#status': 'status', ...(keepAnswer ? { '#answer': 'answer' } : {}) },
            ExpressionAttributeValues: {
              ':answered': 'answered',
              ':pending': 'pending',
              ':now': now,
              ...(keepAnswer ? { ':answer': answer } : {}),
            },
          }),
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  private async batchDelete(keys: Array<{ pk: string; sk: string }>): Promise<void> {
    for (let i = 0; i < keys.length; i += 25) {
      let requests = keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } }));
      // Unprocessed items are retried a bounded number of times (throttling), then reported.
      for (let attempt = 0; requests.length > 0; attempt++) {
        if (attempt === 5) throw new StoreUnavailableError(new Error('unprocessed deletes after 5 attempts'));
        const result = await guarded(() =>
          this.client.send(new BatchWriteCommand({ RequestItems: { [this.tableName]: requests } })),
        );
        requests = (result.UnprocessedItems?.[this.tableName] ?? []) as typeof requests;
        if (requests.length) await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
      }
    }
  }
}
