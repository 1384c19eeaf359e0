import { type DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';
import { systemClock } from '../../lambda/scheduling/clock';
import { createDocumentClient, ensureTable } from '../../lambda/state/dynamo-client';
import { DynamoSessionStore } from '../../lambda/state/dynamo-store';
import type { SessionRecord } from '../../lambda/state/store';

/**
 * The AWS SDK sends a request again when its answer is lost (a timeout, a connection reset), although
 * DynamoDB may already have applied it (state/exactly-once-writes.ts). A conditional write then meets
 * its own effect, and an ADD counts twice: the session the gateway just created was reported refused
 * (an initialize answered 500 under load, where a 2 s attempt timed out after dynalite had written
 * the item), a waiting call's record "moved on" by its own holder's write, a session counted twice.
 */
describe('a write whose answer was lost, sent again by the SDK', () => {
  let client: DynamoDBDocumentClient;
  let close: () => Promise<void>;
  /** Commands whose first answer is dropped after DynamoDB applied them (the SDK then retries). */
  const losing = new Set<string>();
  beforeAll(async () => {
    const dynamo = await startEmbeddedDynamo();
    client = createDocumentClient({ endpoint: dynamo.endpoint });
    await ensureTable(client, 'lost-answers');
    // Inside the retry step: an error here is what a reset connection is to the SDK (retryable).
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (losing.delete(String(context.commandName))) {
          throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
        }
        return out;
      },
      { step: 'deserialize', name: 'loseFirstAnswer' },
    );
    close = async () => {
      client.destroy();
      await dynamo.close();
    };
  });
  afterAll(() => close?.());

  const session = (id: string, principal = 'alice'): SessionRecord => ({
    id,
    principal,
    protocolVersion: '2025-11-25',
    clientCapabilities: {},
    clientInfo: { name: 'c', version: '1' },
    createdAt: Math.floor(Date.now() / 1000),
    expiresAt: Math.floor(Date.now() / 1000) + 600,
  });

  it('creates the session once: the retry finding the session it wrote is no refusal', async () => {
    const store = new DynamoSessionStore(client, 'lost-answers', { clock: systemClock });
    losing.add('PutItemCommand');
    await store.createSession(session('s-lost'));
    expect(losing.size).toBe(0); // the answer was lost, and the SDK sent the write again
    expect((await store.loadSession('s-lost'))?.session.principal).toBe('alice');
  });

  it('counts a session once: an ADD sent again after it applied is not applied twice', async () => {
    const store = new DynamoSessionStore(client, 'lost-answers', { clock: systemClock });
    const now = Math.floor(Date.now() / 1000);
    const limits = { max: 2, bucketSeconds: 60 };
    losing.add('UpdateItemCommand');
    expect(await store.admitSession('carol', now + 600, limits, now)).toEqual({ admitted: true });
    expect(losing.size).toBe(0);
    // Counted twice, the second session would find the principal's two places taken.
    expect(await store.admitSession('carol', now + 600, limits, now)).toEqual({ admitted: true });
    expect((await store.admitSession('carol', now + 600, limits, now)).admitted).toBe(false);
  });

  it("swaps a waiting call's record once: the versioned write sent again is not 'taken by another'", async () => {
    const store = new DynamoSessionStore(client, 'lost-answers', { clock: systemClock });
    const record = {
      streamId: 'st-1',
      version: 1,
      state: 'held' as const,
      holder: 'h-1',
      holderUntil: Date.now() + 30_000,
      seq: 0,
      snapshot: '{}',
      expiresAt: Math.floor(Date.now() / 1000) + 600,
    };
    expect(await store.swapWaitingCall('s-wait', record, undefined)).toBe(true);
    losing.add('PutItemCommand');
    expect(await store.swapWaitingCall('s-wait', { ...record, version: 2, seq: 5 }, 1)).toBe(true);
    expect(losing.size).toBe(0);
    // The version moved on once: a writer still expecting 1 is refused, one expecting 2 is not.
    expect(await store.swapWaitingCall('s-wait', { ...record, version: 3 }, 1)).toBe(false);
    expect(await store.swapWaitingCall('s-wait', { ...record, version: 3 }, 2)).toBe(true);
  });

  it('an update that asked for the item it wrote gets it as the document client gives every item, not in wire form', async () => {
    await client.send(new PutCommand({ TableName: 'lost-answers', Item: { pk: 'counter', sk: 'C', n: 1 } }));
    losing.add('UpdateItemCommand');
    const out = await client.send(
      new UpdateCommand({
        TableName: 'lost-answers',
        Key: { pk: 'counter', sk: 'C' },
        UpdateExpression: 'SET n = :two',
        ConditionExpression: 'n = :one',
        ExpressionAttributeValues: { ':one': 1, ':two': 2 },
        ReturnValues: 'ALL_NEW',
      }),
    );
    expect(losing.size).toBe(0); // the answer was lost, the write sent again and found applied
    expect(out.Attributes).toEqual({ pk: 'counter', sk: 'C', n: 2, writeToken: expect.any(String) });
  });

  it('still refuses a session id another caller holds', async () => {
    const store = new DynamoSessionStore(client, 'lost-answers', { clock: systemClock });
    await store.createSession(session('s-taken', 'alice'));
    await expect(store.createSession(session('s-taken', 'mallory'))).rejects.toMatchObject({
      kind: 'StoreUnavailable',
    });
    expect((await store.loadSession('s-taken'))?.session.principal).toBe('alice');
  });
});
