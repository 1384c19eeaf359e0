import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';
import { systemClock } from '../../lambda/scheduling/clock';
import { createDocumentClient, ensureTable } from '../../lambda/state/dynamo-client';
import { DynamoSessionStore } from '../../lambda/state/dynamo-store';
import type { SessionRecord } from '../../lambda/state/store';

/**
 * The AWS SDK sends a request again when its answer is lost (a timeout, a connection reset), although
 * DynamoDB may already have applied it. A conditional write that created an item then meets its own
 * item: the session the gateway just created must not be reported as refused (an initialize that
 * answered 500 under load, where a 2 s attempt timed out after dynalite had written the item).
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

  it('still refuses a session id another caller holds', async () => {
    const store = new DynamoSessionStore(client, 'lost-answers', { clock: systemClock });
    await store.createSession(session('s-taken', 'alice'));
    await expect(store.createSession(session('s-taken', 'mallory'))).rejects.toMatchObject({
      kind: 'StoreUnavailable',
    });
    expect((await store.loadSession('s-taken'))?.session.principal).toBe('alice');
  });
});
