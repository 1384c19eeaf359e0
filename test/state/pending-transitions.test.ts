import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';
import { createDocumentClient, ensureTable } from '../../lambda/state/dynamo-client';
import { WRITE_TOKEN } from '../../lambda/state/exactly-once-writes';
import type { Item } from '../../lambda/state/items';
import {
  applyTransition,
  dynamoUpdateOf,
  PENDING_TRANSITIONS,
  type TransitionInputs,
  type TransitionName,
  transitionHolds,
} from '../../lambda/state/pending-transitions';
import { CLAIM_LEASE_MS } from '../../lambda/state/records';

/**
 * Each pending-record transition means the same to DynamoDB and to the memory store: on a grid of
 * records (every status; expiry, holder lease and claim on each side of their boundaries; no record),
 * the transition's UpdateItem on dynalite is applied exactly where the memory evaluation says it holds,
 * and leaves the item the memory store's writes leave.
 */

const NOW = 1_900_000_000;
const NOW_MS = NOW * 1000 + 500;
const TOKEN = 'mine';

const inputs: TransitionInputs = {
  now: NOW,
  nowMs: NOW_MS,
  token: TOKEN,
  answer: '{"result":{}}',
  until: NOW_MS + 9,
  principal: 'alice',
};

/** Every combination of the dimensions' values (undefined: the attribute is absent). */
function grid(dimensions: Record<string, readonly unknown[]>): Item[] {
  let items: Item[] = [{}];
  for (const [attribute, values] of Object.entries(dimensions)) {
    items = items.flatMap((item) =>
      values.map((value) => (value === undefined ? { ...item } : { ...item, [attribute]: value })),
    );
  }
  return items;
}

const claims = [
  {},
  { claim: TOKEN, claimedAt: NOW_MS },
  { claim: TOKEN, claimedAt: NOW_MS - CLAIM_LEASE_MS },
  { claim: TOKEN, claimedAt: NOW_MS - CLAIM_LEASE_MS - 1, ack: TOKEN },
  { claim: 'theirs', claimedAt: NOW_MS - CLAIM_LEASE_MS - 1 },
];

const base = {
  gatewayId: 'gw',
  method: 'elicitation/create',
  target: 'demo',
  targetRequestId: 1,
  clientRequestId: 7,
  createdAt: NOW - 10,
};

const records: Item[] = grid({
  status: ['pending', 'delivering', 'recorded', 'answered', 'expired'],
  expiresAt: [NOW + 1, NOW],
  holderUntil: [undefined, NOW_MS + 1, NOW_MS, NOW_MS - 1],
  claimIndex: claims.map((_, i) => i),
}).map(({ claimIndex, ...rest }) => ({
  ...base,
  kind: 'relayed',
  principal: 'alice',
  sessionExpiresAt: NOW + 1,
  ...rest,
  ...claims[claimIndex as number],
}));

/** What only the answer's record without the session read looks at: the kind, the principal, the session's expiry. */
const sessionRecords: Item[] = grid({
  status: ['pending', 'recorded'],
  expiresAt: [NOW + 1, NOW],
  holderUntil: [undefined, NOW_MS + 1, NOW_MS],
  kind: ['relayed', 'question', 'held'],
  principal: [undefined, 'alice', 'bob'],
  sessionExpiresAt: [undefined, NOW + 1, NOW],
}).map((record) => ({ ...base, ...record }));

describe('the pending-record transitions on DynamoDB (dynalite) and in memory', () => {
  let client: DynamoDBDocumentClient;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const dynamo = await startEmbeddedDynamo();
    client = createDocumentClient({ endpoint: dynamo.endpoint });
    await ensureTable(client, 'transitions');
    close = async () => {
      client.destroy();
      await dynamo.close();
    };
  });
  afterAll(() => close?.());

  /** Puts the records under fresh keys of `partition`, runs the transition on each (and on one key with no record). */
  async function onDynamo(name: TransitionName, partition: string, items: Item[]) {
    const keyOf = (i: number) => ({ pk: partition, sk: `P#${i}` });
    for (let i = 0; i < items.length; i += 25) {
      await client.send(
        new BatchWriteCommand({
          RequestItems: {
            transitions: items
              .slice(i, i + 25)
              .map((item, j) => ({ PutRequest: { Item: { ...keyOf(i + j), ...item } } })),
          },
        }),
      );
    }
    const update = dynamoUpdateOf(PENDING_TRANSITIONS[name], inputs);
    const results: Array<{ applied: boolean; after?: Item }> = [];
    const indices = [...items.keys(), items.length]; // the last one: no record there
    for (let i = 0; i < indices.length; i += 20) {
      const chunk = await Promise.all(
        indices.slice(i, i + 20).map(async (index) => {
          try {
            const out = await client.send(
              new UpdateCommand({ TableName: 'transitions', Key: keyOf(index), ReturnValues: 'ALL_NEW', ...update }),
            );
            // The key, and the token every write leaves (state/exactly-once-writes.ts), are DynamoDB's alone.
            const { pk: _pk, sk: _sk, [WRITE_TOKEN]: _written, ...after } = out.Attributes ?? {};
            return { applied: true, after };
          } catch (error) {
            if (error instanceof ConditionalCheckFailedException) return { applied: false };
            throw error;
          }
        }),
      );
      results.push(...chunk);
    }
    return results;
  }

  it.each(Object.keys(PENDING_TRANSITIONS) as TransitionName[])(
    '%s',
    async (name) => {
      const transition = PENDING_TRANSITIONS[name];
      const withSession = ['record', 'recordForPrincipal', 'answer', 'answerForPrincipal'].includes(name);
      const cases = withSession ? [...records, ...sessionRecords] : records;
      const onDynamoDb = await onDynamo(name, `S#${name}`, cases);
      const inMemory = [...cases, undefined].map((record) => {
        if (!transitionHolds(transition, record, inputs)) return { applied: false };
        const after = { ...record };
        applyTransition(transition, after, inputs);
        return { applied: true, after };
      });
      expect(onDynamoDb).toEqual(inMemory);
      // The grid reaches both sides of each transition.
      expect(inMemory.some((r) => r.applied)).toBe(true);
      expect(inMemory.some((r) => !r.applied)).toBe(true);
    },
    120_000, // hundreds of conditional writes on one dynalite: beside a second copy of the suite one took over 30 s
  );
});
