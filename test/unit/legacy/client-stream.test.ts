import { CLIENT_STREAM_KEY, NO_CLIENT_REQUEST, openClientStream } from '../../../lambda/legacy/client-stream';
import type { JSONRPCNotification, JSONRPCRequest } from '../../../lambda/protocol/types';
import type { SessionRecord, TargetSessionRecord } from '../../../lambda/state/store';
import { exchange, type LegacyTestDeps, legacyDeps, storedSession, targetSession } from '../../support/legacy-deps';
import { SseText } from '../../support/sse-text';

/**
 * A 2025 session's standalone GET stream (legacy/client-stream.ts) with scripted target streams: one
 * per session (on this instance and across instances), what the targets send outside calls relayed
 * (requests with gateway ids and records no holder holds), and its bounded end — `retry` after the hold,
 * where each target stream stopped kept for the next GET, the session's stream item released.
 */

const HOLD_S = 5;

async function open(
  options: {
    config?: Parameters<typeof legacyDeps>[0];
    session?: Partial<SessionRecord>;
    targets?: TargetSessionRecord[];
    deadlineMs?: number;
    t?: LegacyTestDeps;
  } = {},
) {
  const t =
    options.t ??
    legacyDeps({
      clientStreamHoldSeconds: HOLD_S,
      clientStreamRetryMs: 7000,
      targets: [
        { name: 'demo', url: 'https://demo.invalid/mcp' },
        { name: 'other', url: 'https://other.invalid/mcp' },
      ],
      ...options.config,
    });
  const loaded = await storedSession(t.store, options.session, options.targets ?? [targetSession('demo')]);
  const ex = exchange(options.deadlineMs ?? 60_000);
  const response = await openClientStream(t.deps, loaded, ex, { 'mcp-session-id': loaded.session.id });
  return { ...t, loaded, ex, response };
}

const notification = (method: string, params: Record<string, unknown> = {}): JSONRPCNotification => ({
  jsonrpc: '2.0',
  method,
  params,
});
const elicitation = (id: number): JSONRPCRequest => ({
  jsonrpc: '2.0',
  id,
  method: 'elicitation/create',
  params: { mode: 'form', message: 'Your name?', requestedSchema: { type: 'object', properties: {} } },
});

/** Lets the work a stream started unawaited (a relayed request, its end) settle. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
}

beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
afterEach(() => jest.useRealTimers());

describe('opening the GET stream of a session', () => {
  it('is an SSE response with the session id, listening to each target session from where the last stream left it', async () => {
    const { response, fake, loaded } = await open({
      targets: [targetSession('demo', { lastEventId: 'demo-event-4' }), targetSession('other')],
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.get('mcp-session-id')).toBe(loaded.session.id);
    expect(fake.listened.map((l) => [l.target, l.session.targetSessionId, l.lastEventIdGiven])).toEqual([
      ['demo', 'demo-session', 'demo-event-4'],
      ['other', 'other-session', undefined],
    ]);
  });

  it('does not open a target session that has none yet (the client opens it), nor listen to an unknown target', async () => {
    const { fake } = await open({
      targets: [targetSession('demo', { targetSessionId: undefined }), targetSession('gone-from-config')],
    });
    expect(fake.listened).toEqual([]);
  });

  it('holds the stream item until the hold ends, never past the deadline less 3 s', async () => {
    const t = legacyDeps({ clientStreamHoldSeconds: 60 });
    const acquire = jest.spyOn(t.store, 'acquireClientStream');
    const start = Date.now();
    await open({ t, deadlineMs: 10_000 });
    expect(acquire.mock.calls[0]?.[2]).toBe(start + 7000);
  });

  it('refuses a second stream of the session on this instance: 409, nothing acquired', async () => {
    const first = await open();
    const acquire = jest.spyOn(first.store, 'acquireClientStream');
    const second = await openClientStream(first.deps, first.loaded, exchange(), {});
    expect(second.status).toBe(409);
    expect(await second.json()).toMatchObject({
      error: { code: -32000, message: expect.stringContaining('Only one SSE stream') },
    });
    expect(acquire).not.toHaveBeenCalled();
  });

  it('refuses a stream another instance holds (its G#stream item): 409', async () => {
    const t = legacyDeps();
    const loaded = await storedSession(t.store, {}, [targetSession('demo')]);
    await t.store.acquireClientStream(loaded.session, 'another-instance', Date.now() + 60_000);
    const response = await openClientStream(t.deps, loaded, exchange(), {});
    expect(response.status).toBe(409);
    expect(t.fake.listened).toEqual([]);
    expect(t.deps.activeCalls.get(loaded.session.id, CLIENT_STREAM_KEY)).toBeUndefined();
  });

  it('answers 503 when the stream item cannot be written', async () => {
    const t = legacyDeps();
    const loaded = await storedSession(t.store, {}, [targetSession('demo')]);
    t.store.down = true;
    const response = await openClientStream(t.deps, loaded, exchange(), {});
    expect(response.status).toBe(503);
    expect(t.logger.messages('warn')).toEqual(['the client stream could not be recorded']);
  });
});

describe('what the targets send on the stream', () => {
  it('relays their notifications, and tells the catalog of each (list changes invalidate its cache)', async () => {
    const { response, fake, noticed } = await open();
    const sse = new SseText(response);
    fake.listened[0]!.listener.onNotification(notification('notifications/tools/list_changed'));
    await sse.until((text) => text.includes('list_changed'));
    expect(sse.messages()).toEqual([notification('notifications/tools/list_changed')]);
    expect(noticed).toEqual([{ target: 'demo', method: 'notifications/tools/list_changed' }]);
  });

  it("holds back a log message below the session's level, and relays one at or above it", async () => {
    const { response, fake } = await open({ session: { logLevel: 'warning' } });
    const sse = new SseText(response);
    const { listener } = fake.listened[0]!;
    listener.onNotification(notification('notifications/message', { level: 'info', data: 'quiet' }));
    listener.onNotification(notification('notifications/message', { level: 'error', data: 'loud' }));
    await sse.until((text) => text.includes('loud'));
    expect(sse.text).not.toContain('quiet');
  });

  it("relays a request with a gateway id, its record held by nobody and tied to no call, the target's id kept in it", async () => {
    const { response, fake, store, loaded } = await open();
    const sse = new SseText(response);
    fake.listened[0]!.listener.onServerRequest(elicitation(41));
    await sse.until((text) => text.includes('elicitation/create'));
    const [sent] = sse.messages();
    expect(sent).toMatchObject({ method: 'elicitation/create', id: expect.stringMatching(/^gw-D/) });
    const record = await store.getPending(loaded.session.id, sent!.id as string);
    expect(record).toMatchObject({
      kind: 'relayed',
      target: 'demo',
      targetSessionId: 'demo-session',
      targetRequestId: 41,
      clientRequestId: NO_CLIENT_REQUEST,
      status: 'pending',
    });
    expect(record?.holderUntil).toBeUndefined();
    expect(fake.delivered).toEqual([]);
  });

  it('answers a ping at the target itself; the client sees nothing', async () => {
    const { fake, store, loaded } = await open();
    fake.listened[0]!.listener.onServerRequest({ jsonrpc: '2.0', id: 5, method: 'ping' });
    await settle();
    expect(fake.delivered).toEqual([
      {
        target: 'demo',
        session: expect.objectContaining({ targetSessionId: 'demo-session' }),
        message: { jsonrpc: '2.0', id: 5, result: {} },
      },
    ]);
    expect(await store.countPending(loaded.session.id, 100)).toBe(0);
  });

  it('refuses at the target a request the client did not declare (-32601), storing nothing', async () => {
    const { fake, store, loaded } = await open();
    fake.listened[0]!.listener.onServerRequest({
      jsonrpc: '2.0',
      id: 6,
      method: 'sampling/createMessage',
      params: { messages: [], maxTokens: 10 },
    });
    await settle();
    expect(fake.delivered.map((d) => d.message)).toEqual([
      expect.objectContaining({ id: 6, error: expect.objectContaining({ code: -32601 }) }),
    ]);
    expect(await store.countPending(loaded.session.id, 100)).toBe(0);
  });

  it("refuses at the target a request past the session's cap of pending requests", async () => {
    const { fake, store, loaded, response } = await open({ config: { maxPendingRequestsPerSession: 1 } });
    const sse = new SseText(response);
    fake.listened[0]!.listener.onServerRequest(elicitation(1));
    await sse.until((text) => text.includes('elicitation/create'));
    fake.listened[0]!.listener.onServerRequest(elicitation(2));
    await settle();
    expect(fake.delivered.map((d) => d.message)).toEqual([
      expect.objectContaining({
        id: 2,
        error: expect.objectContaining({
          code: -32603,
          data: expect.objectContaining({ type: 'TooManyPendingRequests' }),
        }),
      }),
    ]);
    expect(await store.countPending(loaded.session.id, 100)).toBe(1);
  });

  it('refuses a request at the target when its record cannot be written (the answer could not be matched)', async () => {
    const { fake, store } = await open();
    store.down = true;
    fake.listened[0]!.listener.onServerRequest(elicitation(3));
    await settle();
    expect(fake.delivered.map((d) => d.message)).toEqual([
      expect.objectContaining({
        id: 3,
        error: expect.objectContaining({ code: -32603, message: expect.stringContaining('could not relay') }),
      }),
    ]);
  });
});

describe('the end of the GET stream', () => {
  it('after the hold: `retry`, each target stream let go with where it stopped kept, the stream item released', async () => {
    const { response, fake, store, loaded } = await open({
      targets: [targetSession('demo', { lastEventId: 'e-1' }), targetSession('other', { lastEventId: 'o-1' })],
    });
    const sse = new SseText(response);
    const [demo, other] = fake.listened;
    demo!.lastEventId = 'e-9'; // the demo target sent more; the other did not
    const saves = jest.spyOn(store, 'saveTargetEventId');
    await jest.advanceTimersByTimeAsync(HOLD_S * 1000);
    expect(await sse.all()).toMatch(/retry: 7000\n\n$/);
    expect(demo!.closed && other!.closed).toBe(true);
    expect(saves.mock.calls).toEqual([[loaded.session.id, 'demo', 'demo-session', 'e-9']]);
    expect((await store.loadSession(loaded.session.id))?.targets.get('demo')?.lastEventId).toBe('e-9');
    // The next GET (any instance) is not refused.
    expect(await store.acquireClientStream(loaded.session, 'next', Date.now() + 1000)).toBe(true);
  });

  it('when the client leaves: no retry to write, but the stream item is released and event ids kept', async () => {
    const { response, fake, store, loaded, deps } = await open();
    const sse = new SseText(response);
    fake.listened[0]!.lastEventId = 'e-2';
    await sse.cancel();
    await settle();
    expect(fake.listened[0]!.closed).toBe(true);
    expect((await store.loadSession(loaded.session.id))?.targets.get('demo')?.lastEventId).toBe('e-2');
    expect(await store.acquireClientStream(loaded.session, 'next', Date.now() + 1000)).toBe(true);
    expect(deps.activeCalls.get(loaded.session.id, CLIENT_STREAM_KEY)).toBeUndefined();
  });

  it('when the session is deleted on this instance: closed without retry, nothing written for a session that is gone', async () => {
    const { response, fake, store, loaded, deps } = await open();
    const sse = new SseText(response);
    fake.listened[0]!.lastEventId = 'e-3';
    const saves = jest.spyOn(store, 'saveTargetEventId');
    const releases = jest.spyOn(store, 'releaseClientStream');
    deps.activeCalls.get(loaded.session.id, CLIENT_STREAM_KEY)?.cancelByClient(undefined);
    const text = await sse.all();
    expect(text).not.toContain('retry:');
    expect(saves).not.toHaveBeenCalled();
    expect(releases).not.toHaveBeenCalled();
  });

  it('refuses at the target a request that arrives after the stream ended', async () => {
    const { response, fake } = await open();
    const sse = new SseText(response);
    const { listener } = fake.listened[0]!;
    await sse.cancel();
    await settle();
    listener.onServerRequest(elicitation(8));
    await settle();
    expect(fake.delivered.map((d) => d.message)).toEqual([
      expect.objectContaining({ id: 8, error: expect.objectContaining({ code: -32601 }) }),
    ]);
  });

  it('at a shutdown: `retry`, so the client comes back to another environment', async () => {
    const { response, deps, loaded } = await open();
    const sse = new SseText(response);
    await deps.activeCalls.get(loaded.session.id, CLIENT_STREAM_KEY)?.shutdown();
    expect(await sse.all()).toMatch(/retry: 7000\n\n$/);
  });
});

describe('the session read again while the stream is open', () => {
  it('every 2 s: a target session opened meanwhile (any instance) is listened to', async () => {
    const { store, loaded, fake, response } = await open({ targets: [targetSession('demo')] });
    const sse = new SseText(response);
    await store.putTargetSession(loaded.session, targetSession('other'));
    await jest.advanceTimersByTimeAsync(1999);
    await settle();
    expect(fake.listened.map((l) => l.target)).toEqual(['demo']);
    await jest.advanceTimersByTimeAsync(1);
    await settle();
    expect(fake.listened.map((l) => l.target)).toEqual(['demo', 'other']);
    await sse.cancel();
  });

  it('a target session replaced meanwhile: the old stream let go, the new one listened to', async () => {
    const { store, loaded, fake, response } = await open();
    const sse = new SseText(response);
    await store.putTargetSession(loaded.session, targetSession('demo', { targetSessionId: 'demo-2' }), {
      replacing: 'demo-session',
    });
    await jest.advanceTimersByTimeAsync(2000);
    await settle();
    expect(fake.listened.map((l) => [l.session.targetSessionId, l.closed])).toEqual([
      ['demo-session', true],
      ['demo-2', false],
    ]);
    await sse.cancel();
  });

  it("follows the session's log level set meanwhile (on any instance)", async () => {
    const { store, loaded, fake, response } = await open();
    const sse = new SseText(response);
    await store.setLogLevel(loaded.session, 'error');
    await jest.advanceTimersByTimeAsync(2000);
    await settle();
    const { listener } = fake.listened[0]!;
    listener.onNotification(notification('notifications/message', { level: 'warning', data: 'held back' }));
    listener.onNotification(notification('notifications/message', { level: 'error', data: 'relayed' }));
    await sse.until((text) => text.includes('relayed'));
    expect(sse.text).not.toContain('held back');
    await sse.cancel();
  });

  it('the session deleted on another instance ends the stream, without retry', async () => {
    const { store, loaded, response } = await open();
    const sse = new SseText(response);
    await store.deleteSession(loaded.session.id);
    await jest.advanceTimersByTimeAsync(2000);
    await settle();
    const text = await sse.all();
    expect(text).not.toContain('retry:');
  });

  it('at once when a target forgot its session (its stream said gone)', async () => {
    const { store, fake, response } = await open();
    const sse = new SseText(response);
    const reads = jest.spyOn(store, 'loadSession');
    fake.listened[0]!.listener.onGone();
    await settle();
    expect(reads).toHaveBeenCalledTimes(1);
    await sse.cancel();
  });

  it("the stream's end waits for a read under way (nothing of the stream runs after its response)", async () => {
    const { store, response } = await open();
    const sse = new SseText(response);
    let finishRead!: () => void;
    const held = new Promise<void>((resolve) => {
      finishRead = resolve;
    });
    const load = store.loadSession.bind(store);
    jest.spyOn(store, 'loadSession').mockImplementation(async (...args) => {
      await held; // DynamoDB takes its time
      return load(...args);
    });
    const releases = jest.spyOn(store, 'releaseClientStream');
    await jest.advanceTimersByTimeAsync(2000); // the rescan's read starts
    await jest.advanceTimersByTimeAsync(HOLD_S * 1000); // the hold ends meanwhile
    await settle();
    expect(releases).not.toHaveBeenCalled();
    finishRead();
    expect(await sse.all()).toMatch(/retry: 7000\n\n$/);
    expect(releases).toHaveBeenCalledTimes(1);
  });

  it('a read that fails leaves the stream open, and reads again later', async () => {
    const { store, response, logger, deps, loaded } = await open();
    const sse = new SseText(response);
    store.down = true;
    await jest.advanceTimersByTimeAsync(2000);
    await settle();
    expect(logger.messages('warn')).toContain('client stream: session not read');
    store.down = false;
    const reads = jest.spyOn(store, 'loadSession');
    await jest.advanceTimersByTimeAsync(2000);
    await settle();
    expect(reads).toHaveBeenCalledTimes(1);
    // Still open: it ends (and leaves this registry) only at its hold, its client's leaving or the session's end.
    expect(deps.activeCalls.get(loaded.session.id, CLIENT_STREAM_KEY)).toBeDefined();
    await sse.cancel();
  });
});
