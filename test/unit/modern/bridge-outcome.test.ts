import {
  type BridgePayload,
  OUTCOME_PART_BYTES,
  partKey,
  readOutcome,
  splitUtf8,
  writeOutcome,
} from '../../../lambda/modern/bridge-outcome';
import type { InputRequest } from '../../../lambda/protocol/types';
import { newPendingRecord } from '../../../lambda/state/records';
import { MemorySessionStore } from '../../support/memory-store';

/**
 * What a bridged call's holder hands the retry through the store (modern/bridge-outcome.ts): the round's
 * record filled once, in parts when larger than one item, an OutcomeTooLarge failure beyond
 * maxBridgedOutcomeBytes, and nothing when the record is gone; read back whole, or not at all when a
 * part expired.
 */

const BRIDGE = 'mrtr-test';
const KEY = `${BRIDGE}.n2`;
const MAX = 2 * 1024 * 1024;

async function roundRecord(store: MemorySessionStore) {
  const record = newPendingRecord(Date.now(), 300, {
    kind: 'question',
    method: 'bridge/next',
    target: 'legacy',
    clientRequestId: 1,
  });
  record.gatewayId = KEY;
  record.targetRequestId = KEY;
  delete record.holderUntil;
  await store.putPending({ id: BRIDGE }, record);
  return record;
}

const template = (expiresAt: number) => ({
  target: 'legacy',
  clientRequestId: 1,
  createdAt: Math.floor(Date.now() / 1000),
  expiresAt,
});

const resultPayload = (text: string): BridgePayload => ({
  kind: 'result',
  response: { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text }] } },
});

async function stored(store: MemorySessionStore): Promise<Record<string, unknown>> {
  const answer = (await store.getPending(BRIDGE, KEY))?.answer;
  if (!answer) throw new Error('not filled');
  return (JSON.parse(answer) as { result: Record<string, unknown> }).result;
}

describe("a bridged round's outcome", () => {
  it('is stored in the round’s record when it fits, and read back as it was', async () => {
    const store = new MemorySessionStore();
    const record = await roundRecord(store);
    const payload = resultPayload('small');
    expect(
      await writeOutcome(store, BRIDGE, KEY, payload, {
        maxBytes: MAX,
        attempt: 0,
        template: template(record.expiresAt),
      }),
    ).toBe('stored');
    expect(await stored(store)).toEqual(payload);
    expect(await readOutcome(store, BRIDGE, KEY, await stored(store))).toEqual(payload);
  });

  it('is stored in parts when larger than one item (escapes counted), and read back whole', async () => {
    const store = new MemorySessionStore();
    const record = await roundRecord(store);
    // Quotes double in the stored JSON text: under the part size raw, over it as stored.
    const payload = resultPayload('"'.repeat(Math.ceil(OUTCOME_PART_BYTES * 0.6)));
    expect(
      await writeOutcome(store, BRIDGE, KEY, payload, {
        maxBytes: MAX,
        attempt: 3,
        template: template(record.expiresAt),
      }),
    ).toBe('stored');
    const pointer = await stored(store);
    expect(pointer).toEqual({ kind: 'parts', attempt: 3, parts: expect.any(Number) });
    expect(pointer.parts).toBeGreaterThan(1);
    expect(await store.getPending(BRIDGE, partKey(KEY, 3, 0))).toMatchObject({ status: 'answered', kind: 'question' });
    expect(await readOutcome(store, BRIDGE, KEY, pointer)).toEqual(payload);
  });

  it('is not read when one of its parts is gone (expired meanwhile)', async () => {
    const store = new MemorySessionStore();
    const record = await roundRecord(store);
    await writeOutcome(store, BRIDGE, KEY, resultPayload('x'.repeat(OUTCOME_PART_BYTES + 10)), {
      maxBytes: MAX,
      attempt: 0,
      template: template(record.expiresAt),
    });
    await store.deletePending(BRIDGE, [partKey(KEY, 0, 1)]);
    expect(await readOutcome(store, BRIDGE, KEY, await stored(store))).toBeUndefined();
  });

  it('over maxBridgedOutcomeBytes becomes an OutcomeTooLarge failure saying the target did act', async () => {
    const store = new MemorySessionStore();
    const record = await roundRecord(store);
    expect(
      await writeOutcome(store, BRIDGE, KEY, resultPayload('x'.repeat(2_000)), {
        maxBytes: 1_000,
        attempt: 0,
        template: template(record.expiresAt),
      }),
    ).toBe('too-large');
    expect(await stored(store)).toEqual({
      kind: 'error',
      failure: {
        kind: 'OutcomeTooLarge',
        message: expect.stringContaining('the target did act, but its result cannot be returned'),
      },
    });
  });

  it('names the next input round when that is what is too large', async () => {
    const store = new MemorySessionStore();
    const record = await roundRecord(store);
    const payload: BridgePayload = { kind: 'input', inputRequests: { a: { method: 'roots/list' } as InputRequest } };
    await writeOutcome(store, BRIDGE, KEY, payload, { maxBytes: 10, attempt: 0, template: template(record.expiresAt) });
    expect(JSON.stringify(await stored(store))).toContain('next input round');
  });

  it("is 'not-stored' when the round's record is gone, and filled only once", async () => {
    const store = new MemorySessionStore();
    const options = { maxBytes: MAX, attempt: 0, template: template(Math.floor(Date.now() / 1000) + 300) };
    expect(await writeOutcome(store, BRIDGE, KEY, resultPayload('a'), options)).toBe('not-stored');
    await roundRecord(store);
    expect(await writeOutcome(store, BRIDGE, KEY, resultPayload('a'), options)).toBe('stored');
    // The same write sent again (its first reply lost) finds its own answer stored: stored.
    expect(await writeOutcome(store, BRIDGE, KEY, resultPayload('a'), options)).toBe('stored');
    // Another outcome for a filled round is not stored.
    expect(await writeOutcome(store, BRIDGE, KEY, resultPayload('b'), options)).toBe('not-stored');
    expect(await stored(store)).toEqual(resultPayload('a'));
  });

  it('throws when the store fails (the holder writes it again)', async () => {
    const store = new MemorySessionStore();
    const record = await roundRecord(store);
    store.down = true;
    await expect(
      writeOutcome(store, BRIDGE, KEY, resultPayload('a'), {
        maxBytes: MAX,
        attempt: 0,
        template: template(record.expiresAt),
      }),
    ).rejects.toThrow();
  });
});

describe('cutting an outcome into parts', () => {
  it('never cuts inside a character, and the parts join to the text', () => {
    const text = `ab${'€'.repeat(10)}😀c`;
    const parts = splitUtf8(text, 4);
    expect(parts.join('')).toBe(text);
    for (const part of parts) expect(Buffer.byteLength(part)).toBeLessThanOrEqual(4);
    expect(parts).not.toContain('');
  });

  it('gives one part for a text that fits, none for an empty one', () => {
    expect(splitUtf8('hello', 100)).toEqual(['hello']);
    expect(splitUtf8('', 100)).toEqual([]);
  });

  it("keys each attempt's parts apart, so a failed attempt's leftovers are never read", () => {
    expect(partKey(KEY, 0, 1)).not.toBe(partKey(KEY, 1, 1));
    expect(partKey(KEY, 2, 5)).toBe(`${KEY}.a2.p5`);
  });
});
