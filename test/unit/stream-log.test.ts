import { type SseEventLog, SseStream, STREAM_HIGH_WATER_BYTES } from '../../lambda/http/sse';
import { followStream, openStreamLog, parseEventId } from '../../lambda/legacy/stream-log';
import { systemClock } from '../../lambda/scheduling/clock';
import { newPendingRecord } from '../../lambda/state/records';
import type { PendingRecord, StreamEventRecord } from '../../lambda/state/store';
import { QUIET } from '../support/in-process';
import { MemorySessionStore } from '../support/memory-store';

/**
 * The pieces of resumable streams without HTTP: the SSE writer with an event log, the log over the
 * store (its bounds), and the follower a reconnect reads from.
 */

const SESSION = { id: 'session-under-test', expiresAt: Math.floor(Date.now() / 1000) + 3600 };
const SETTINGS = { ttlSeconds: 600, retainSeconds: 60, maxBytes: 100, clock: systemClock };
const message = (text: string) => ({
  jsonrpc: '2.0' as const,
  method: 'notifications/message',
  params: { data: text },
});

async function bodyText(sse: SseStream): Promise<string> {
  return new Response(sse.body).text();
}

describe('SseStream with an event log', () => {
  it('primes, then keeps each event before writing it with its id; one the log refuses goes out without an id', async () => {
    const calls: string[] = [];
    const log: SseEventLog = {
      streamId: 'S',
      keep: async (seq, data) => {
        calls.push(`keep ${seq} ${data === '' ? 'priming' : 'event'}`);
        return seq !== 2;
      },
      end: async (seq, final) => {
        calls.push(`end ${seq} ${final ? 'final' : 'none'}`);
        return true;
      },
    };
    const sse = new SseStream({ log, retryMs: 1500 });
    sse.send(message('one'));
    sse.send(message('two'));
    sse.end({ jsonrpc: '2.0', id: 7, result: {} });
    sse.send(message('after the end')); // dropped
    const text = await bodyText(sse);
    expect(calls).toEqual(['keep 0 priming', 'keep 1 event', 'keep 2 event', 'end 3 final']);
    expect(text).toBe(
      'id: S.0\nretry: 1500\ndata: \n\n' +
        `id: S.1\nevent: message\ndata: ${JSON.stringify(message('one'))}\n\n` +
        `event: message\ndata: ${JSON.stringify(message('two'))}\n\n` +
        `id: S.3\nevent: message\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\n\n`,
    );
  });

  it('keeps the priming event with the messages that follow it at once, with one write of a log that can (keepAll)', async () => {
    const calls: string[] = [];
    const log: SseEventLog = {
      streamId: 'S',
      keep: async (seq) => {
        calls.push(`keep ${seq}`);
        return true;
      },
      keepAll: async (events) => {
        calls.push(`keepAll ${events.map((e) => e.seq).join(',')}`);
        return events.map(() => true);
      },
      end: async (seq) => {
        calls.push(`end ${seq}`);
        return true;
      },
    };
    // The priming event's 50 ms wait for a message runs on Node's timers (the stream's, not the gateway's
    // clock): faked here, so "a few ms later" is moved to, not waited for.
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const sse = new SseStream({ log });
    try {
      // The stream opened for a message that takes a write to prepare, and comes a few ms later (inside
      // the priming event's wait for it).
      await jest.advanceTimersByTimeAsync(5);
      sse.send(message('one'));
      sse.send(message('two'));
      await sse.flushed();
    } finally {
      jest.useRealTimers();
    }
    sse.send(message('three'));
    sse.end({ jsonrpc: '2.0', id: 7, result: {} });
    const text = await bodyText(sse);
    expect(calls).toEqual(['keepAll 0,1,2', 'keep 3', 'end 4']);
    expect(text.match(/^id: S\.\d+/gm)).toEqual(['id: S.0', 'id: S.1', 'id: S.2', 'id: S.3', 'id: S.4']);
  });

  it('does not send an event whose `unless` came true with its keep (its request could not be recorded)', async () => {
    const log: SseEventLog = { streamId: 'S', keep: async () => true, end: async () => true };
    const sse = new SseStream({ log });
    sse.send(message('asked'), { unless: Promise.resolve(true) });
    sse.send(message('sent'), { unless: Promise.resolve(false) });
    sse.end({ jsonrpc: '2.0', id: 7, result: {} });
    const text = await bodyText(sse);
    expect(text).not.toContain('asked');
    expect(text).toContain('sent');
  });

  it('keeps a priming event alone when no message follows (a stream opened for keep-alives), and an end does not wait for one', async () => {
    const calls: string[] = [];
    const log: SseEventLog = {
      streamId: 'S',
      keep: async (seq) => {
        calls.push(`keep ${seq}`);
        return true;
      },
      keepAll: async (events) => {
        calls.push(`keepAll ${events.map((e) => e.seq).join(',')}`);
        return events.map(() => true);
      },
      end: async (seq) => {
        calls.push(`end ${seq}`);
        return true;
      },
    };
    const alone = new SseStream({ log });
    await alone.flushed();
    expect(calls).toEqual(['keep 0']);
    calls.length = 0;
    const ended = new SseStream({ log });
    ended.end({ jsonrpc: '2.0', id: 7, result: {} });
    await bodyText(ended);
    expect(calls).toEqual(['keep 0', 'end 1']);
  });

  it('asks its writer to wait while events waiting for a slow log fill the mark, and lets it go on when they are written', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const log: SseEventLog = {
      streamId: 'S',
      keep: async () => {
        await gate; // a store that takes its time
        return true;
      },
      end: async () => true,
    };
    const sse = new SseStream({ log });
    const big = 'x'.repeat(STREAM_HIGH_WATER_BYTES / 4);
    for (let i = 0; i < 3; i++) sse.send(message(big));
    expect(sse.room()).toBeUndefined(); // three quarters of the mark wait for the log
    sse.send(message(big));
    const room = sse.room();
    expect(room).toBeDefined(); // the whole mark waits in memory, though nothing reached the stream yet
    let freed = false;
    void room?.then(() => (freed = true));
    const reader = sse.body.getReader(); // the client reads everything written
    const reading = (async () => {
      while (!(await reader.read()).done);
    })();
    await new Promise((resolve) => setImmediate(resolve));
    expect(freed).toBe(false);
    open();
    await sse.flushed();
    await room;
    expect(freed).toBe(true);
    sse.close();
    await reading;
  });

  it('without a log writes no priming event and no ids', async () => {
    const sse = new SseStream();
    sse.send(message('one'));
    sse.end({ jsonrpc: '2.0', id: 1, result: {} });
    expect(await bodyText(sse)).toBe(
      `event: message\ndata: ${JSON.stringify(message('one'))}\n\nevent: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n`,
    );
  });
});

describe('the stream log over the store', () => {
  const events = (store: MemorySessionStore, streamId: string) => store.readStream(SESSION.id, streamId, 0);

  it('keeps events up to maxBytes per stream; beyond it they are not kept, but the final message always is', async () => {
    const store = new MemorySessionStore();
    const log = openStreamLog(store, SESSION, SETTINGS, QUIET);
    expect(await log.keep(0, '')).toBe(true);
    expect(await log.keep(1, 'x'.repeat(60))).toBe(true);
    expect(await log.keep(2, 'y'.repeat(60))).toBe(false); // 120 > 100
    expect((await events(store, log.streamId)).map((e) => e.seq)).toEqual([0, 1]);
    const final = { jsonrpc: '2.0' as const, id: 1, result: { text: 'z'.repeat(200) } };
    expect(await log.end(3, { message: final, data: JSON.stringify(final) })).toBe(true);
    // The end alone is left, kept for retainSeconds.
    const left = await events(store, log.streamId);
    expect(left).toEqual([
      { streamId: log.streamId, seq: 3, data: JSON.stringify(final), end: true, expiresAt: expect.any(Number) },
    ]);
    expect(left[0]!.expiresAt).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + SETTINGS.retainSeconds);
  });

  it('keeps a final message too large for one item as a retryable error for the same request id', async () => {
    const store = new MemorySessionStore();
    const log = openStreamLog(store, SESSION, { ...SETTINGS, maxBytes: 16 * 1024 * 1024 }, QUIET);
    const final = { jsonrpc: '2.0' as const, id: 'big', result: { text: 'z'.repeat(500 * 1024) } };
    expect(await log.end(1, { message: final, data: JSON.stringify(final) })).toBe(false);
    const [end] = await events(store, log.streamId);
    expect(JSON.parse(end!.data)).toMatchObject({
      id: 'big',
      error: { code: -32603, data: { type: 'ResponseNotKept', retryable: true } },
    });
  });

  it('never throws when the store fails: the event is reported not kept', async () => {
    const store = new MemorySessionStore();
    const log = openStreamLog(store, SESSION, SETTINGS, QUIET);
    store.down = true;
    expect(await log.keep(0, '')).toBe(false);
    expect(await log.end(1, undefined)).toBe(false);
  });

  it("gives up a write still running past the invocation's deadline (plus 500 ms): the event is sent unkept", async () => {
    const hanging = {
      putStreamEvent: () => new Promise<void>(() => undefined),
      endStream: () => new Promise<void>(() => undefined),
      readStream: async () => [],
    };
    const log = openStreamLog(hanging, SESSION, SETTINGS, QUIET, { deadline: Date.now() - 400 });
    expect(await log.keep(0, '')).toBe(false);
    expect(await log.end(1, undefined)).toBe(false);
  });

  it('after a failed write sends later events at once, unkept, and still tries the end, for at most 1 s', async () => {
    let puts = 0;
    let ends = 0;
    const failing = {
      putStreamEvent: async () => {
        puts++;
        throw new Error('DynamoDB is down');
      },
      endStream: () => {
        ends++;
        return new Promise<void>(() => undefined); // never answers
      },
      readStream: async () => [],
    };
    const log = openStreamLog(failing, SESSION, SETTINGS, QUIET);
    expect(await log.keep(0, '')).toBe(false);
    expect(await log.keep(1, '{}')).toBe(false);
    expect(puts).toBe(1);
    expect(await log.end(2, undefined)).toBe(false);
    expect(ends).toBe(1);
  });

  it("removes the call's pending records with its end; when that write fails, on their own", async () => {
    const removed: string[][] = [];
    const store = new MemorySessionStore();
    const withEnd = openStreamLog(store, SESSION, SETTINGS, QUIET, { removeAtEnd: () => ['gw-a'] });
    const ends: string[][] = [];
    const recording = Object.assign(Object.create(store) as MemorySessionStore, {
      endStream: async (_: string, __: StreamEventRecord, ___: number[], pending: string[] = []) => {
        ends.push(pending);
      },
    });
    await openStreamLog(recording, SESSION, SETTINGS, QUIET, { removeAtEnd: () => ['gw-a'] }).end(1, undefined);
    expect(ends).toEqual([['gw-a']]);
    const failing = Object.assign(Object.create(store) as MemorySessionStore, {
      endStream: async () => {
        throw new Error('DynamoDB down');
      },
      deletePending: async (_: string, ids: string[]) => {
        removed.push(ids);
      },
    });
    await openStreamLog(failing, SESSION, SETTINGS, QUIET, { removeAtEnd: () => ['gw-b'] }).end(1, undefined);
    expect(removed).toEqual([['gw-b']]);
    expect(await withEnd.end(0, undefined)).toBe(false); // no final message
  });

  it('writes a pending record with the next events (one request), and says whether it was written', async () => {
    const store = new MemorySessionStore();
    const batches: Array<{ events: number[]; pending: string[] }> = [];
    const counting = Object.assign(Object.create(store) as MemorySessionStore, {
      putStreamEvents: async (id: string, events: StreamEventRecord[], pending: PendingRecord[] = []) => {
        batches.push({ events: events.map((e) => e.seq), pending: pending.map((p) => p.gatewayId) });
        await store.putStreamEvents(id, events, pending);
      },
    });
    const log = openStreamLog(counting, SESSION, SETTINGS, QUIET);
    const record = newPendingRecord(Date.now(), 60, {
      kind: 'relayed',
      method: 'elicitation/create',
      target: 'demo',
      clientRequestId: 1,
    });
    const written: boolean[] = [];
    log.keepWithNext(record, (ok) => written.push(ok));
    expect(
      await log.keepAll?.([
        { seq: 0, data: '' },
        { seq: 1, data: '{"q":1}' },
      ]),
    ).toEqual([true, true]);
    expect(batches).toEqual([{ events: [0, 1], pending: [record.gatewayId] }]);
    expect(written).toEqual([true]);
    expect(await store.getPending(SESSION.id, record.gatewayId)).toEqual(record);
    // Over the stream's cap the event is not kept, but the record still is; a stream that ends first never asked it.
    const second = newPendingRecord(Date.now(), 60, {
      kind: 'relayed',
      method: 'elicitation/create',
      target: 'demo',
      clientRequestId: 1,
    });
    log.keepWithNext(second, (ok) => written.push(ok));
    expect(await log.keep(2, 'x'.repeat(SETTINGS.maxBytes + 1))).toBe(false);
    expect(await store.getPending(SESSION.id, second.gatewayId)).toEqual(second);
    log.keepWithNext(record, (ok) => written.push(ok));
    await log.end(3, undefined);
    expect(written).toEqual([true, true, false]);
  });

  it('never keeps an event past the session expiry', async () => {
    const store = new MemorySessionStore();
    const soon = { id: SESSION.id, expiresAt: Math.floor(Date.now() / 1000) + 5 };
    const log = openStreamLog(store, soon, SETTINGS, QUIET);
    await log.keep(0, '');
    expect((await events(store, log.streamId))[0]!.expiresAt).toBe(soon.expiresAt);
  });
});

describe('following a stream', () => {
  const put = (store: MemorySessionStore, event: Partial<StreamEventRecord> & { seq: number }) =>
    store.putStreamEvent(SESSION.id, {
      streamId: 'streamAAAAAAAAAA',
      data: `{"n":${event.seq}}`,
      expiresAt: SESSION.expiresAt,
      ...event,
    });

  it('parses only the ids the gateway issues', () => {
    expect(parseEventId('streamAAAAAAAAAA.12')).toEqual({ streamId: 'streamAAAAAAAAAA', seq: 12 });
    for (const id of ['streamAAAAAAAAAA', 'short.1', 'streamAAAAAAAAAA.-1', 'streamAAAAAAAAAA.1.2', 'a#b.1']) {
      expect(parseEventId(id)).toBeUndefined();
    }
  });

  it('yields what came after the id, then polls for new events at the given interval until the end', async () => {
    const store = new MemorySessionStore();
    await put(store, { seq: 0, data: '' });
    await put(store, { seq: 1 });
    await put(store, { seq: 2 });
    const start = await followStream(
      store,
      SESSION.id,
      { streamId: 'streamAAAAAAAAAA', seq: 1 },
      {
        until: Date.now() + 10_000,
        clock: systemClock,
        signal: new AbortController().signal,
        pollMs: { minMs: 5, maxMs: 20 },
      },
    );
    if (start.kind !== 'live') throw new Error('the stream should be live');
    const seen: number[] = [];
    setTimeout(() => void put(store, { seq: 3 }), 30);
    setTimeout(() => void put(store, { seq: 4, end: true }), 60);
    for await (const event of start.events) seen.push(event.seq);
    expect(seen).toEqual([2, 3, 4]);
  });

  it('stops at `until` without the end, and knows no stream of which nothing is kept at or after the id', async () => {
    const store = new MemorySessionStore();
    await put(store, { seq: 0, data: '' });
    const start = await followStream(
      store,
      SESSION.id,
      { streamId: 'streamAAAAAAAAAA', seq: 0 },
      {
        until: Date.now() + 50,
        clock: systemClock,
        signal: new AbortController().signal,
        pollMs: { minMs: 5, maxMs: 10 },
      },
    );
    if (start.kind !== 'live') throw new Error('the stream should be live');
    const seen: number[] = [];
    for await (const event of start.events) seen.push(event.seq);
    expect(seen).toEqual([]);
    const other = { streamId: 'streamBBBBBBBBBB', seq: 0 };
    const options = {
      until: Date.now() + 50,
      clock: systemClock,
      signal: new AbortController().signal,
      pollMs: { minMs: 5, maxMs: 10 },
    };
    expect((await followStream(store, SESSION.id, other, options)).kind).toBe('unknown');
    expect((await followStream(store, 'another-session', { streamId: 'streamAAAAAAAAAA', seq: 0 }, options)).kind).toBe(
      'unknown',
    );
  });

  describe('how a reconnect ends when the stream is over', () => {
    const options = () => ({
      until: Date.now() + 50,
      clock: systemClock,
      signal: new AbortController().signal,
      pollMs: { minMs: 5, maxMs: 10 },
    });
    const stream = 'streamAAAAAAAAAA';

    it('an id naming the end itself: over (the client has the final message)', async () => {
      const store = new MemorySessionStore();
      await put(store, { seq: 0, data: '', requestId: 'call-1', ended: true });
      await put(store, { seq: 3, end: true });
      const start = await followStream(store, SESSION.id, { streamId: stream, seq: 3 }, options());
      expect(start.kind).toBe('over');
    });

    it('an id before the end: the end is replayed', async () => {
      const store = new MemorySessionStore();
      await put(store, { seq: 0, data: '', requestId: 'call-1', ended: true });
      await put(store, { seq: 3, end: true });
      const start = await followStream(store, SESSION.id, { streamId: stream, seq: 1 }, options());
      if (start.kind !== 'live') throw new Error('the stream should be live');
      const seen: number[] = [];
      for await (const event of start.events) seen.push(event.seq);
      expect(seen).toEqual([3]);
    });

    it('only the head left, ended: expired, with the request it answered (from its id or a later one)', async () => {
      const store = new MemorySessionStore();
      await put(store, { seq: 0, data: '', requestId: 'call-1', ended: true });
      expect(await followStream(store, SESSION.id, { streamId: stream, seq: 0 }, options())).toEqual({
        kind: 'expired',
        requestId: 'call-1',
      });
      expect(await followStream(store, SESSION.id, { streamId: stream, seq: 5 }, options())).toEqual({
        kind: 'expired',
        requestId: 'call-1',
      });
    });

    it('only a head that is not ended, resumed from it: live (the call still runs)', async () => {
      const store = new MemorySessionStore();
      await put(store, { seq: 0, data: '', requestId: 'call-1' });
      expect((await followStream(store, SESSION.id, { streamId: stream, seq: 0 }, options())).kind).toBe('live');
    });
  });
});
