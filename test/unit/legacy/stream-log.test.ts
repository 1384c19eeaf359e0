import { parseConfig } from '../../../lambda/config/schema';
import {
  followStream,
  newStreamId,
  openStreamLog,
  parseEventId,
  type StreamStore,
  streamLogSettings,
} from '../../../lambda/legacy/stream-log';
import { systemClock } from '../../../lambda/scheduling/clock';
import type { StreamEventRecord } from '../../../lambda/state/store';
import { QUIET } from '../../support/in-process';
import { MemorySessionStore } from '../../support/memory-store';

/**
 * The event log of resumable streams (legacy/stream-log.ts), beyond test/unit/stream-log.test.ts:
 * the stream's head (the request it answers, kept with the first write for the session's life), a
 * continued stream's end, events asked together, and how a reconnect follows the log.
 */

const NOW_S = Math.floor(Date.now() / 1000);
const SESSION = { id: 'session-log', expiresAt: NOW_S + 3600 };
const SETTINGS = { ttlSeconds: 600, retainSeconds: 60, maxBytes: 1000, clock: systemClock };
const STREAM = 'streamAAAAAAAAAA';

/** The store, with every write it was asked for, in order. */
function recordingStore() {
  const store = new MemorySessionStore();
  const writes: string[] = [];
  const spy = Object.assign(Object.create(store) as MemorySessionStore, {
    putStreamEvent: async (id: string, event: StreamEventRecord) => {
      writes.push(`put ${event.seq}`);
      await store.putStreamEvent(id, event);
    },
    putStreamEvents: async (id: string, events: StreamEventRecord[], pending = []) => {
      writes.push(`batch ${events.map((e) => e.seq).join(',')}${pending.length ? ` +${pending.length}` : ''}`);
      await store.putStreamEvents(id, events, pending);
    },
    endStream: async (
      id: string,
      end: StreamEventRecord,
      drop: number[],
      pending: string[] = [],
      head?: StreamEventRecord,
    ) => {
      writes.push(`end ${end.seq} drop ${drop.join(',') || '-'}${head ? ' head' : ''}`);
      await store.endStream(id, end, drop, pending, head);
    },
  });
  return { store, spy, writes };
}

describe('ids and settings of the stream log', () => {
  it('makes a stream id that no two streams share and that event ids of the gateway carry', () => {
    const a = newStreamId();
    const b = newStreamId();
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(parseEventId(`${a}.42`)).toEqual({ streamId: a, seq: 42 });
  });

  it('reads an id with spaces around it, and refuses a seq longer than nine digits', () => {
    expect(parseEventId(`  ${STREAM}.3 `)).toEqual({ streamId: STREAM, seq: 3 });
    expect(parseEventId(`${STREAM}.1234567890`)).toBeUndefined();
  });

  it('takes its bounds from the configuration', () => {
    const config = parseConfig({ streamLogTtlSeconds: 900, streamLogRetainSeconds: 30, streamLogMaxBytes: 65_536 });
    expect(streamLogSettings(config, systemClock)).toEqual({
      ttlSeconds: 900,
      retainSeconds: 30,
      maxBytes: 65_536,
      clock: systemClock,
    });
  });
});

describe("a stream's head", () => {
  it('is written with the first event in one request, carrying the request id, expiring with the session', async () => {
    const { store, spy, writes } = recordingStore();
    const log = openStreamLog(spy, SESSION, SETTINGS, QUIET, { requestId: 'call-9', streamId: STREAM });
    // A stream without a priming event starts at 1 (a client not trusted to resume).
    expect(await log.keep(1, '{"a":1}')).toBe(true);
    expect(await log.keep(2, '{"a":2}')).toBe(true);
    expect(writes).toEqual(['batch 0,1', 'put 2']);
    const [head, first] = await store.readStream(SESSION.id, STREAM, 0);
    expect(head).toMatchObject({ seq: 0, data: '', requestId: 'call-9', expiresAt: SESSION.expiresAt });
    expect(first!.expiresAt).toBeLessThanOrEqual(NOW_S + SETTINGS.ttlSeconds + 1);
  });

  it('is the priming event itself when there is one: its data stays empty and it carries the request id', async () => {
    const { store, spy, writes } = recordingStore();
    const log = openStreamLog(spy, SESSION, SETTINGS, QUIET, { requestId: 7, streamId: STREAM });
    await log.keep(0, '');
    expect(writes).toEqual(['put 0']);
    expect((await store.readStream(SESSION.id, STREAM, 0))[0]).toMatchObject({ seq: 0, requestId: 7, data: '' });
  });

  it("stays at the stream's end, marked ended, while every other event is dropped", async () => {
    const { store, spy, writes } = recordingStore();
    const log = openStreamLog(spy, SESSION, SETTINGS, QUIET, { requestId: 7, streamId: STREAM });
    await log.keep(0, '');
    await log.keep(1, '{"n":1}');
    const final = { jsonrpc: '2.0' as const, id: 7, result: {} };
    expect(await log.end(2, { message: final, data: JSON.stringify(final) })).toBe(true);
    expect(writes.at(-1)).toBe('end 2 drop 1 head');
    const left = await store.readStream(SESSION.id, STREAM, 0);
    expect(left.map((e) => [e.seq, e.end === true, e.ended === true])).toEqual([
      [0, false, true],
      [2, true, false],
    ]);
  });

  it('is not written again by a continued stream whose first invocation kept it; the end drops what that one kept', async () => {
    const { spy, writes } = recordingStore();
    const log = openStreamLog(spy, SESSION, SETTINGS, QUIET, { requestId: 7, streamId: STREAM, kept: [0, 1, 2] });
    await log.keep(3, '{"n":3}');
    expect(writes).toEqual(['put 3']);
    await log.end(4, undefined);
    expect(writes.at(-1)).toBe('end 4 drop 1,2,3 head');
  });

  it('a stream that answers no request id has no head: nothing but its events is written, and all are dropped at its end', async () => {
    const { spy, writes } = recordingStore();
    const log = openStreamLog(spy, SESSION, SETTINGS, QUIET, { streamId: STREAM });
    await log.keep(0, '');
    await log.keep(1, '{}');
    await log.end(2, undefined);
    expect(writes).toEqual(['put 0', 'put 1', 'end 2 drop 0,1']);
  });
});

describe('events asked together', () => {
  it('are written in one request; one over the cap is left out, the others kept', async () => {
    const { store, spy, writes } = recordingStore();
    const log = openStreamLog(spy, SESSION, { ...SETTINGS, maxBytes: 50 }, QUIET, { streamId: STREAM });
    const kept = await log.keepAll?.([
      { seq: 0, data: '' },
      { seq: 1, data: 'x'.repeat(60) },
      { seq: 2, data: '{"small":1}' },
    ]);
    expect(kept).toEqual([true, false, true]);
    expect(writes).toEqual(['batch 0,2']);
    expect((await store.readStream(SESSION.id, STREAM, 0)).map((e) => e.seq)).toEqual([0, 2]);
  });

  it('are all reported unkept when the write fails', async () => {
    const store = new MemorySessionStore();
    const log = openStreamLog(store, SESSION, SETTINGS, QUIET, { streamId: STREAM });
    store.down = true;
    expect(
      await log.keepAll?.([
        { seq: 0, data: '' },
        { seq: 1, data: '{}' },
      ]),
    ).toEqual([false, false]);
  });

  it('a pending record cannot ride on a store that writes no batches: it is reported unwritten at once', () => {
    const single: StreamStore = {
      putStreamEvent: async () => undefined,
      endStream: async () => undefined,
      readStream: async () => [],
    };
    const log = openStreamLog(single, SESSION, SETTINGS, QUIET);
    const written: boolean[] = [];
    log.keepWithNext({} as never, (ok) => written.push(ok));
    expect(written).toEqual([false]);
  });
});

describe("a stream's end", () => {
  it('without a final message is still written (the reconnect learns the stream is over), and reported as no final kept', async () => {
    const store = new MemorySessionStore();
    const log = openStreamLog(store, SESSION, SETTINGS, QUIET, { streamId: STREAM });
    expect(await log.end(1, undefined)).toBe(false);
    expect(await store.readStream(SESSION.id, STREAM, 0)).toEqual([
      expect.objectContaining({ seq: 1, data: '', end: true }),
    ]);
  });

  it('expires after retainSeconds, never after the session', async () => {
    const store = new MemorySessionStore();
    const soon = { id: SESSION.id, expiresAt: NOW_S + 10 };
    const log = openStreamLog(store, soon, { ...SETTINGS, retainSeconds: 60 }, QUIET, { streamId: STREAM });
    await log.end(1, undefined);
    expect((await store.readStream(SESSION.id, STREAM, 0))[0]!.expiresAt).toBe(soon.expiresAt);
  });
});

describe('following a stream from an event id', () => {
  const put = (store: MemorySessionStore, event: Partial<StreamEventRecord> & { seq: number }) =>
    store.putStreamEvent(SESSION.id, {
      streamId: STREAM,
      data: `{"n":${event.seq}}`,
      expiresAt: SESSION.expiresAt,
      ...event,
    });
  const options = (extra: Partial<Parameters<typeof followStream>[3]> = {}) => ({
    until: Date.now() + 60_000,
    clock: systemClock,
    signal: new AbortController().signal,
    pollMs: { minMs: 100, maxMs: 400 },
    ...extra,
  });

  afterEach(() => jest.useRealTimers());

  it('follows a stream still going whose events at and after the id expired (its head not ended): live, not expired', async () => {
    const store = new MemorySessionStore();
    await put(store, { seq: 0, data: '', requestId: 7 });
    // The event the client last got outlived streamLogTtlSeconds while the call went on (a long silence).
    await put(store, { seq: 1, expiresAt: NOW_S - 1 });
    const start = await followStream(store, SESSION.id, { streamId: STREAM, seq: 1 }, options({ until: Date.now() }));
    expect(start.kind).toBe('live');
    // Once the call has ended (its head marked so) and only the head is left: expired, with its request.
    await put(store, { seq: 0, data: '', requestId: 7, ended: true });
    expect(await followStream(store, SESSION.id, { streamId: STREAM, seq: 1 }, options())).toEqual({
      kind: 'expired',
      requestId: 7,
    });
  });

  it('knows no stream whose head answers no request once it ended (a stream from before heads were kept)', async () => {
    const store = new MemorySessionStore();
    await put(store, { seq: 0, data: '', ended: true });
    expect(await followStream(store, SESSION.id, { streamId: STREAM, seq: 0 }, options())).toEqual({ kind: 'unknown' });
  });

  it('stops following when the reader has caught up and the caller goes on with the stream (a takeover)', async () => {
    const store = new MemorySessionStore();
    await put(store, { seq: 0, data: '', requestId: 7 });
    await put(store, { seq: 1 });
    await put(store, { seq: 2 });
    const caughtUp = jest.fn(async () => true);
    const start = await followStream(store, SESSION.id, { streamId: STREAM, seq: 0 }, options({ caughtUp }));
    if (start.kind !== 'live') throw new Error('not live');
    const seen: number[] = [];
    for await (const event of start.events) seen.push(event.seq);
    expect(seen).toEqual([1, 2]);
    expect(caughtUp).toHaveBeenCalledTimes(1);
    expect(caughtUp).toHaveBeenCalledWith(2);
  });

  it('ends when its reader leaves, without reading again', async () => {
    const store = new MemorySessionStore();
    await put(store, { seq: 0, data: '', requestId: 7 });
    const reader = new AbortController();
    const reads = jest.spyOn(store, 'readStream');
    const start = await followStream(
      store,
      SESSION.id,
      { streamId: STREAM, seq: 0 },
      options({ signal: reader.signal }),
    );
    if (start.kind !== 'live') throw new Error('not live');
    reader.abort();
    const seen: number[] = [];
    for await (const event of start.events) seen.push(event.seq);
    expect(seen).toEqual([]);
    expect(reads).toHaveBeenCalledTimes(1); // the first read only
  });

  it('polls after twice the least while nothing comes, doubling to the most; after progress, after the least again', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const store = new MemorySessionStore();
    await put(store, { seq: 0, data: '', requestId: 7 });
    const start0 = Date.now();
    const readsAt: number[] = [];
    const read = store.readStream.bind(store);
    jest.spyOn(store, 'readStream').mockImplementation(async (...args) => {
      readsAt.push(Date.now() - start0);
      return read(...args);
    });
    const begun = await followStream(store, SESSION.id, { streamId: STREAM, seq: 0 }, options());
    if (begun.kind !== 'live') throw new Error('not live');
    const seen: number[] = [];
    const following = (async () => {
      for await (const event of begun.events) seen.push(event.seq);
    })();
    await jest.advanceTimersByTimeAsync(1500);
    // First read at 0; then 200, 400, 400 … apart (min 100 doubled, capped at 400).
    expect(readsAt.slice(0, 5)).toEqual([0, 200, 600, 1000, 1400]);
    await put(store, { seq: 1 }); // found by the read at 1800: progress, so the next read comes after the least
    await jest.advanceTimersByTimeAsync(1000);
    expect(readsAt).toEqual([0, 200, 600, 1000, 1400, 1800, 1900, 2100, 2500]);
    expect(seen).toEqual([1]);
    await put(store, { seq: 2, end: true });
    await jest.advanceTimersByTimeAsync(400);
    await following;
    expect(seen).toEqual([1, 2]);
  });

  it('stops at the deadline without the end, cutting the last wait to it', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const store = new MemorySessionStore();
    await put(store, { seq: 0, data: '', requestId: 7 });
    const reads = jest.spyOn(store, 'readStream');
    const begun = await followStream(
      store,
      SESSION.id,
      { streamId: STREAM, seq: 0 },
      options({ until: Date.now() + 300 }),
    );
    if (begun.kind !== 'live') throw new Error('not live');
    let done = false;
    const following = (async () => {
      for await (const _ of begun.events);
      done = true;
    })();
    await jest.advanceTimersByTimeAsync(299);
    expect(done).toBe(false);
    await jest.advanceTimersByTimeAsync(200);
    await following;
    expect(done).toBe(true);
    // The reads at 0 and 200, and one at 300 (the wait cut to the deadline); none after it.
    expect(reads).toHaveBeenCalledTimes(3);
  });
});
