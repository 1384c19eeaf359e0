import { systemClock } from '../../lambda/scheduling/clock';
import type { ConnectionTable, StoredConnection } from '../../lambda/state/connection-table';
import { DynamoConnectionTable } from '../../lambda/state/dynamo/connections';
import { DynamoTable } from '../../lambda/state/dynamo/table';
import { createDocumentClient, ensureTable } from '../../lambda/state/dynamo-client';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { MemoryConnectionTable } from '../support/memory-connection-table';

/**
 * The connection table's refresh lease and conditional writes, against the in-memory table the focused
 * tests use and the DynamoDB one on dynalite (through the real AWS SDK): the fake behaves as the real
 * one. Times are epoch ms passed as `now`, so a lease lapses without waiting.
 */

const NOW = 1_700_000_000_000;
const EXPIRES = Math.floor(NOW / 1000) + 3600;

const implementations: Array<[string, () => Promise<{ table: ConnectionTable; close(): Promise<void> }>]> = [
  ['the memory table', async () => ({ table: new MemoryConnectionTable(), close: async () => undefined })],
  [
    'the DynamoDB table on dynalite',
    async () => {
      const dynamo: CountedDynamo = await startCountedDynamo();
      const client = createDocumentClient({ endpoint: dynamo.endpoint });
      await ensureTable(client, 'connections-contract');
      return {
        table: new DynamoConnectionTable(new DynamoTable(client, 'connections-contract', { clock: systemClock })),
        close: async () => {
          client.destroy();
          await dynamo.close();
        },
      };
    },
  ],
];

describe.each(implementations)('%s: the refresh lease and conditional writes', (_name, start) => {
  let table: ConnectionTable;
  let close: () => Promise<void>;
  let n = 0;
  beforeAll(async () => {
    ({ table, close } = await start());
  });
  afterAll(() => close());

  /** A write of its own (each has its own data key, as every write has). */
  const written = (updatedAt: number): StoredConnection => ({
    ciphertext: `ciphertext-${++n}`,
    wrappedKey: `wrapped-${n}`,
    keyId: 'local:k1',
    updatedAt,
  });
  const versionOf = ({ updatedAt, wrappedKey }: StoredConnection) => ({ updatedAt, wrappedKey });

  it('is taken on the write read, once while it lasts, and taken over once it lapsed', async () => {
    const first = written(NOW);
    await table.write('p1', 'docs', first, EXPIRES);
    expect((await table.read('p1', 'docs'))?.lease).toBeUndefined();

    const lease = { holder: 'a', until: NOW + 15_000 };
    expect(await table.takeLease('p1', 'docs', versionOf(first), lease, NOW)).toBe(true);
    expect((await table.read('p1', 'docs'))?.lease).toEqual(lease);
    expect(
      await table.takeLease('p1', 'docs', versionOf(first), { holder: 'b', until: NOW + 20_000 }, NOW + 14_999),
    ).toBe(false);
    expect(
      await table.takeLease('p1', 'docs', versionOf(first), { holder: 'b', until: NOW + 30_000 }, NOW + 15_000),
    ).toBe(true);
    expect((await table.read('p1', 'docs'))?.lease?.holder).toBe('b');
    // The envelope is as it was: a lease is not a write.
    expect(versionOf((await table.read('p1', 'docs'))!)).toEqual(versionOf(first));
  });

  it('is not taken on a write that is no longer the stored one, nor on a removed connection', async () => {
    const old = written(NOW);
    await table.write('p2', 'docs', old, EXPIRES);
    const replaced = written(NOW + 1);
    await table.write('p2', 'docs', replaced, EXPIRES);
    expect(await table.takeLease('p2', 'docs', versionOf(old), { holder: 'a', until: NOW + 15_000 }, NOW)).toBe(false);
    // Same time, another data key: another write.
    expect(
      await table.takeLease('p2', 'docs', { ...versionOf(replaced), wrappedKey: 'x' }, { holder: 'a', until: 1 }, NOW),
    ).toBe(false);
    expect(await table.takeLease('nobody', 'docs', versionOf(old), { holder: 'a', until: NOW + 15_000 }, NOW)).toBe(
      false,
    );
  });

  it("a write on a lease is stored only while that lease is still its holder's, and drops it", async () => {
    const first = written(NOW);
    await table.write('p3', 'docs', first, EXPIRES);
    await table.takeLease('p3', 'docs', versionOf(first), { holder: 'a', until: NOW + 15_000 }, NOW);

    expect(await table.write('p3', 'docs', written(NOW + 1), EXPIRES, 'b')).toBe(false);
    expect(versionOf((await table.read('p3', 'docs'))!)).toEqual(versionOf(first));
    const refreshed = written(NOW + 2);
    expect(await table.write('p3', 'docs', refreshed, EXPIRES, 'a')).toBe(true);
    const stored = await table.read('p3', 'docs');
    expect(versionOf(stored!)).toEqual(versionOf(refreshed));
    expect(stored?.lease).toBeUndefined();
    // Its lease went with the write: a second write on it is refused, and nothing is written for a removed one.
    expect(await table.write('p3', 'docs', written(NOW + 3), EXPIRES, 'a')).toBe(false);
    expect(await table.write('nobody', 'docs', written(NOW + 3), EXPIRES, 'a')).toBe(false);
    expect(await table.read('nobody', 'docs')).toBeUndefined();
  });

  it('is released only by its holder', async () => {
    const first = written(NOW);
    await table.write('p4', 'docs', first, EXPIRES);
    await table.takeLease('p4', 'docs', versionOf(first), { holder: 'a', until: NOW + 15_000 }, NOW);
    await table.releaseLease('p4', 'docs', 'b');
    expect((await table.read('p4', 'docs'))?.lease?.holder).toBe('a');
    await table.releaseLease('p4', 'docs', 'a');
    expect((await table.read('p4', 'docs'))?.lease).toBeUndefined();
    expect(await table.takeLease('p4', 'docs', versionOf(first), { holder: 'b', until: NOW + 15_000 }, NOW)).toBe(true);
    await table.releaseLease('nobody', 'docs', 'a'); // nothing there: nothing to do
  });

  it('a removal of a given write removes only that write; a plain removal removes whatever is there', async () => {
    const old = written(NOW);
    await table.write('p5', 'docs', old, EXPIRES);
    const current = written(NOW + 1);
    await table.write('p5', 'docs', current, EXPIRES);
    expect(await table.remove('p5', 'docs', versionOf(old))).toBe(false);
    expect(await table.read('p5', 'docs')).toBeDefined();
    // A lease on it does not stand in the way.
    await table.takeLease('p5', 'docs', versionOf(current), { holder: 'a', until: NOW + 15_000 }, NOW);
    expect(await table.remove('p5', 'docs', versionOf(current))).toBe(true);
    expect(await table.read('p5', 'docs')).toBeUndefined();
    expect(await table.remove('p5', 'docs', versionOf(current))).toBe(false);

    await table.write('p5', 'docs', written(NOW + 2), EXPIRES);
    expect(await table.remove('p5', 'docs')).toBe(true);
    expect(await table.remove('p5', 'docs')).toBe(false);
  });
});
