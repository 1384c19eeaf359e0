import type { ServerResponse } from 'node:http';
import { createLogger } from '../../lambda/observability/logger';
import type { JSONRPCNotification, JSONRPCRequest } from '../../lambda/protocol/types';
import type { Scheduler } from '../../lambda/scheduling/call-timers';
import { systemClock } from '../../lambda/scheduling/clock';
import { TargetEndpoint } from '../../lambda/targets/endpoint';
import { LegacyTargetClient } from '../../lambda/targets/legacy-client';
import {
  type SessionStreamListener,
  StandaloneStreams,
  type StandaloneStreamsOptions,
} from '../../lambda/targets/standalone-streams';
import { FakeClock } from '../support/fake-clock';
import { eventually } from '../support/mcp-http';
import { openSse, type ScriptedTarget, type Step, scriptedTarget, sse } from '../support/scripted-target';

/**
 * The GET streams of legacy target sessions on one instance (targets/standalone-streams.ts), against a
 * scripted loopback target: one connection shared by a session's calls and closed with the last,
 * where what the target sends on it goes, and how 405, 409, 404, a refused event id and an ended
 * stream are handled. The 405 memory is aged by an injected clock; retry waits are injected (short).
 */

const SESSION = { targetSessionId: 'ts-1', protocolVersion: '2025-11-25' };
const RETRY_MS = 20;
const UNSUPPORTED_TTL_MS = 60_000;

const targets: ScriptedTarget[] = [];
afterAll(async () => {
  for (const target of targets) await target.close();
});

/** A scripted target whose open GET responses are kept, to write events on them later. */
async function start(steps: Step[]) {
  const target = await scriptedTarget(steps);
  targets.push(target);
  return target;
}

function setUp(url: string, options: StandaloneStreamsOptions & { scheduler?: Scheduler } = {}) {
  let now = 1_000_000;
  const { scheduler = systemClock, ...rest } = options;
  const streams = new StandaloneStreams(
    createLogger('SILENT'),
    { ...scheduler, now: () => now },
    {
      retryMs: RETRY_MS,
      openTimeoutMs: 2000,
      unsupportedTtlMs: UNSUPPORTED_TTL_MS,
      ...rest,
    },
  );
  const endpoint = new TargetEndpoint(
    { name: 't', url } as ConstructorParameters<typeof TargetEndpoint>[0],
    systemClock,
  );
  const client = new LegacyTargetClient(endpoint, { name: 'gw', version: '1' });
  return {
    streams,
    client,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

const event = (message: object, id?: string) => `${id ? `id: ${id}\n` : ''}data: ${JSON.stringify(message)}\n\n`;
const elicit = (id: string): JSONRPCRequest => ({
  jsonrpc: '2.0',
  id,
  method: 'elicitation/create',
  params: { mode: 'form', message: 'ok?', requestedSchema: { type: 'object', properties: {} } },
});
const progress = (token: string): JSONRPCNotification => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: token, progress: 1 },
});
const log: JSONRPCNotification = {
  jsonrpc: '2.0',
  method: 'notifications/message',
  params: { level: 'info', data: 'hi' },
};

/** Retry waits on a clock the test moves. */
function fakeScheduler(): { clock: FakeClock; scheduler: Scheduler } {
  const clock = new FakeClock();
  return {
    clock,
    scheduler: {
      setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
      clearTimeout: (handle) => clock.clearTimeout(handle),
    },
  };
}

/** A listener that records what reached it. */
function recorder(progressToken?: string) {
  const got: string[] = [];
  return {
    got,
    listener: {
      progressToken,
      onServerRequest: (r: JSONRPCRequest) => got.push(`request ${String(r.id)}`),
      onNotification: (n: JSONRPCNotification) => got.push(n.method),
    },
  };
}

describe('one GET per target session, shared by its calls', () => {
  it('opens one GET for two calls of a session, and closes it when the last call detaches', async () => {
    let closed = 0;
    let stream: ServerResponse | undefined;
    const target = await start([
      (_req, res) => {
        stream = res;
        res.once('close', () => closed++);
        openSse(res);
      },
    ]);
    const { streams, client } = setUp(target.url);
    const first = await streams.attach(client, SESSION, recorder().listener);
    const staying = recorder();
    const second = await streams.attach(client, SESSION, staying.listener);
    expect(streams.opened).toBe(1);
    expect(target.seen.map((s) => [s.method, s.sessionId])).toEqual([['GET', 'ts-1']]);
    await first();
    // Still open after the first detached: what the target sends next reaches the second call.
    stream?.write(event(log));
    await eventually(() => expect(staying.got).toEqual(['notifications/message']));
    expect(closed).toBe(0);
    await second();
    await eventually(() => expect(closed).toBe(1));
  });

  it('opens nothing for a session the target gave no id (a stateless target)', async () => {
    const target = await start([(_req, res) => openSse(res)]);
    const { streams, client } = setUp(target.url);
    const detach = await streams.attach(client, { protocolVersion: '2025-11-25' }, recorder().listener);
    await detach();
    expect(streams.opened).toBe(0);
    expect(target.seen).toEqual([]);
  });
});

describe('where what the target sends on the stream goes', () => {
  it('a request to the call that attached first; progress to the call whose token it names; other notifications to the first', async () => {
    let stream: ServerResponse | undefined;
    const target = await start([
      (_req, res) => {
        stream = res;
        openSse(res);
      },
    ]);
    const { streams, client } = setUp(target.url);
    const a = recorder('pa');
    const b = recorder('pb');
    const detachA = await streams.attach(client, SESSION, a.listener);
    const detachB = await streams.attach(client, SESSION, b.listener);
    stream?.write(event(elicit('e1')) + event(progress('pb')) + event(log) + event(progress('nobody')));
    await eventually(() => expect(a.got).toEqual(['request e1', 'notifications/message']));
    expect(b.got).toEqual(['notifications/progress']);
    await detachB();
    await detachA();
  });

  it("the session's client GET stream, while it listens, takes requests and every notification but progress", async () => {
    let stream: ServerResponse | undefined;
    const target = await start([
      (_req, res) => {
        stream = res;
        openSse(res);
      },
    ]);
    const { streams, client } = setUp(target.url);
    const call = recorder('pc');
    const owned: string[] = [];
    const owner: SessionStreamListener = {
      onServerRequest: (r) => owned.push(`request ${String(r.id)}`),
      onNotification: (n) => owned.push(n.method),
      onGone: () => owned.push('gone'),
    };
    const handle = await streams.listen(client, SESSION, owner);
    const detach = await streams.attach(client, SESSION, call.listener);
    stream?.write(event(elicit('e2'), 'g7') + event(log) + event(progress('pc')));
    await eventually(() => expect(owned).toEqual(['request e2', 'notifications/message']));
    expect(call.got).toEqual(['notifications/progress']);
    expect(handle.lastEventId()).toBe('g7');
    await detach();
    handle.close();
    expect(streams.opened).toBe(1);
  });

  it('a 404 (the target forgot the session) tells the client GET stream, and is not reopened', async () => {
    const target = await start([(_req, res) => res.writeHead(404).end()]);
    const { clock, scheduler } = fakeScheduler();
    const { streams, client } = setUp(target.url, { scheduler });
    const owned: string[] = [];
    const handle = await streams.listen(client, SESSION, {
      onServerRequest: () => undefined,
      onNotification: () => undefined,
      onGone: () => owned.push('gone'),
    });
    expect(owned).toEqual(['gone']);
    await clock.advance(RETRY_MS * 3); // any retry it had set would fire, and open a GET
    expect(streams.opened).toBe(1);
    expect(target.seen).toHaveLength(1);
    handle.close();
  });
});

describe('a GET the target refuses', () => {
  it('405 (no GET stream) is remembered per target for unsupportedTtlMs: calls go ahead without one, then it is tried again', async () => {
    const target = await start([(_req, res) => res.writeHead(405).end()]);
    const { streams, client, advance } = setUp(target.url);
    await (await streams.attach(client, SESSION, recorder().listener))();
    await (await streams.attach(client, { ...SESSION, targetSessionId: 'ts-2' }, recorder().listener))();
    expect(target.seen).toHaveLength(1);
    advance(UNSUPPORTED_TTL_MS);
    await (await streams.attach(client, SESSION, recorder().listener))();
    expect(target.seen).toHaveLength(2);
  });

  it('409 (another instance holds the stream) is tried again every retryMs while a call is attached, and not after', async () => {
    const target = await start([
      (_req, res) => res.writeHead(409).end(),
      (_req, res) => res.writeHead(409).end(),
      (_req, res) => openSse(res),
    ]);
    const { clock, scheduler } = fakeScheduler();
    const { streams, client } = setUp(target.url, { scheduler });
    const detach = await streams.attach(client, SESSION, recorder().listener);
    // Each retry is set once the 409 is in: the clock moves a retry at a time until the third GET.
    await eventually(async () => {
      await clock.advance(RETRY_MS);
      expect(target.seen).toHaveLength(3);
    });
    await detach();
    await clock.advance(RETRY_MS * 3); // any retry still set would fire, and open a GET
    expect(streams.opened).toBe(3);
    expect(target.seen).toHaveLength(3);
  });

  it('409 right after this instance closed the stream (back-to-back calls): retried at once, and the call waits for the stream', async () => {
    const target = await start([
      (_req, res) => openSse(res),
      (_req, res) => res.writeHead(409).end(),
      (_req, res) => res.writeHead(409).end(),
      (_req, res) => openSse(res),
    ]);
    // A long regular retry: only the own-close rule can reopen within this test.
    const { streams, client } = setUp(target.url, { retryMs: 60_000 });
    await (await streams.attach(client, SESSION, recorder().listener))();
    const detach = await streams.attach(client, SESSION, recorder().listener);
    expect(target.seen.map((s) => s.method)).toEqual(['GET', 'GET', 'GET', 'GET']);
    await detach();
  });

  it('409 after the own-close window is another instance holding the stream: the call goes ahead without waiting', async () => {
    const target = await start([(_req, res) => openSse(res), (_req, res) => res.writeHead(409).end()]);
    const { streams, client, advance } = setUp(target.url, { retryMs: 60_000 });
    await (await streams.attach(client, SESSION, recorder().listener))();
    advance(1000);
    const detach = await streams.attach(client, SESSION, recorder().listener);
    expect(target.seen).toHaveLength(2);
    await detach();
  });

  it('an event id the target refuses (4xx): the next GET starts afresh, without Last-Event-ID', async () => {
    const target = await start([(_req, res) => res.writeHead(400).end(), (_req, res) => openSse(res)]);
    const { streams, client } = setUp(target.url);
    const handle = await streams.listen(
      client,
      SESSION,
      { onServerRequest: () => undefined, onNotification: () => undefined, onGone: () => undefined },
      { lastEventId: 'forgotten' },
    );
    await eventually(() => expect(target.seen).toHaveLength(2));
    expect(target.seen.map((s) => s.lastEventId)).toEqual(['forgotten', undefined]);
    handle.close();
  });
});

describe("reopening a target session's GET stream that the target ended", () => {
  it("waits the target's retry before reopening with Last-Event-ID", async () => {
    const target = await start([(_req, res) => sse(res, 'id: g1\nretry: 300\ndata:\n\n'), (_req, res) => openSse(res)]);
    const { streams, client } = setUp(target.url);
    const detach = await streams.attach(client, SESSION, recorder().listener);
    try {
      await eventually(() => expect(target.seen).toHaveLength(2));
      expect(target.seen.map((s) => [s.method, s.lastEventId])).toEqual([
        ['GET', undefined],
        ['GET', 'g1'],
      ]);
      expect(target.seen[1]?.gapMs).toBeGreaterThanOrEqual(300);
    } finally {
      await detach();
    }
  });

  it('reopens a stream that ended without a retry, with Last-Event-ID, while calls are attached', async () => {
    const target = await start([(_req, res) => sse(res, 'id: g2\ndata:\n\n'), (_req, res) => openSse(res)]);
    const { streams, client } = setUp(target.url);
    const detach = await streams.attach(client, SESSION, recorder().listener);
    await eventually(() => expect(target.seen).toHaveLength(2));
    expect(target.seen[1]?.lastEventId).toBe('g2');
    await detach();
  });
});

describe('what the target sends just before it answers (the two streams have no common order)', () => {
  /** A scheduler whose timers the test fires: the settle window passes only when the test says so. */
  function manualScheduler() {
    const timers: Array<{ fn: () => void; ms: number }> = [];
    const manual = {
      timers,
      fired: 0,
      scheduler: {
        setTimeout: (fn: () => void, ms: number) => timers.push({ fn, ms }),
        clearTimeout: () => undefined,
      },
      /** Fires the oldest settle window (10 ms) once one is set. */
      fire: async () => {
        await eventually(() => expect(timers.some((t) => t.ms === 10)).toBe(true));
        manual.fired++;
        const at = timers.findIndex((t) => t.ms === 10);
        timers.splice(at, 1)[0]!.fn();
      },
    };
    return manual;
  }

  it('a call waits for the stream to be quiet for settleMs while the instance learns, and for a target seen talking; not for one heard from in none of 20 calls', async () => {
    let stream: ServerResponse | undefined;
    const target = await start([
      (_req, res) => {
        stream = res;
        openSse(res);
      },
    ]);
    const manual = manualScheduler();
    const { streams, client } = setUp(target.url, { settleMs: 10, scheduler: manual.scheduler });
    const settleWindows = () => manual.timers.filter((t) => t.ms === 10).length;
    /** One call that hears nothing: its end waits one quiet window (fired here) when it settles. */
    const quietCall = async () => {
      const detaching = (await streams.attach(client, SESSION, recorder().listener))();
      if (
        await Promise.race([
          detaching.then(() => false),
          eventually(() => expect(settleWindows()).toBe(1)).then(() => true),
        ])
      )
        await manual.fire();
      await detaching;
    };
    // Learning: the answer came first; a log message the target sent before it arrives during the window.
    stream = undefined;
    const first = recorder();
    const detachFirst = await streams.attach(client, SESSION, first.listener);
    await eventually(() => expect(stream).toBeDefined());
    const detaching = detachFirst();
    await eventually(() => expect(settleWindows()).toBe(1));
    stream!.write(event(log));
    await eventually(() => expect(first.got).toEqual(['notifications/message']));
    await manual.fire(); // something arrived in that window: one more
    await manual.fire(); // quiet for a whole window: done
    await detaching;
    expect(first.got).toEqual(['notifications/message']);
    // Seen talking: every call settles (for 10 minutes), quiet or not.
    for (let i = 0; i < 25; i++) await quietCall();
    expect(manual.timers.filter((t) => t.ms === 10)).toEqual([]);
    const settledBefore = manual.fired;
    await quietCall();
    expect(manual.fired).toBe(settledBefore + 1);
  });

  it('a target heard nothing from in 20 settled calls is no longer waited for', async () => {
    const target = await start([(_req, res) => openSse(res)]);
    const manual = manualScheduler();
    const { streams, client } = setUp(target.url, { settleMs: 10, scheduler: manual.scheduler });
    const settleWindows = () => manual.timers.filter((t) => t.ms === 10).length;
    for (let i = 0; i < 20; i++) {
      const detaching = (await streams.attach(client, SESSION, recorder().listener))();
      await eventually(() => expect(settleWindows()).toBe(1));
      await manual.fire();
      await detaching;
    }
    expect(manual.fired).toBe(20);
    // The 21st call's end waits for nothing.
    await (await streams.attach(client, SESSION, recorder().listener))();
    expect(settleWindows()).toBe(0);
    expect(manual.fired).toBe(20);
  });

  it('a request goes to a call that can relay it, not to one that listens for notifications only', async () => {
    let stream: ServerResponse | undefined;
    const target = await start([
      (_req, res) => {
        stream = res;
        openSse(res);
      },
    ]);
    const { streams, client } = setUp(target.url);
    const hearing = recorder();
    const relaying = recorder();
    const detachHearing = await streams.attach(client, SESSION, hearing.listener);
    const detachRelaying = await streams.attach(client, SESSION, { ...relaying.listener, relaysRequests: true });
    await eventually(() => expect(stream).toBeDefined());
    stream!.write(event(elicit('q1')));
    stream!.write(event(log));
    await eventually(() => expect(relaying.got).toEqual(['request q1']));
    await eventually(() => expect(hearing.got).toEqual(['notifications/message']));
    await detachHearing();
    await detachRelaying();
  });
});
