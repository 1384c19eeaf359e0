import { ANONYMOUS_IDENTITY } from '../../../lambda/auth/identity';
import { recordBeforeReading } from '../../../lambda/legacy/answer';
import { type RelayInput, relayCall } from '../../../lambda/legacy/call-relay';
import { sessionCaller } from '../../../lambda/legacy/session-caller';
import { DependencyFailedError } from '../../../lambda/protocol/errors';
import type { JSONRPCResponse } from '../../../lambda/protocol/jsonrpc';
import type { JSONRPCMessage } from '../../../lambda/protocol/types';
import type { SessionRecord } from '../../../lambda/state/store';
import type { TargetCallOptions } from '../../../lambda/targets/target-link';
import { FakeClock } from '../../support/fake-clock';
import {
  exchange,
  legacyDeps,
  request,
  ScriptedLink,
  storedSession,
  type TargetScript,
} from '../../support/legacy-deps';
import { SseText } from '../../support/sse-text';

/**
 * One relayed call of a 2025 session (legacy/call-relay.ts) against a scripted target, the memory
 * store and a fake clock: JSON when the target just answers, SSE when something reaches the client
 * first; the target's requests and a 2026-07-28 target's input rounds relayed; the deadline, a
 * cancellation, a client gone; and nothing of the call left in the store once it is over.
 */

const ASKS = {
  jsonrpc: '2.0' as const,
  id: 5,
  method: 'elicitation/create',
  params: { mode: 'form', message: 'Go?', requestedSchema: { type: 'object', properties: {} } },
};

/** A target call that only ends when the gateway aborts it (as a real link rejects then). */
const hangs: TargetScript = (_request, options) =>
  new Promise((_resolve, reject) => options.signal.addEventListener('abort', () => reject(new Error('aborted'))));

async function setUp(
  script: TargetScript,
  options: {
    session?: Partial<SessionRecord>;
    accept?: { json: boolean; sse: boolean };
    deadlineMs?: number;
    era?: 'legacy' | 'modern';
    config?: Parameters<typeof legacyDeps>[0];
    /** The call on Node's clock (faked with jest's timers): the polls of the gateway's questions run on it. */
    nodeClock?: boolean;
  } = {},
) {
  const clock = new FakeClock();
  const t = legacyDeps(
    { pendingRequestTimeoutSeconds: 60, ...options.config },
    { clock: options.nodeClock ? undefined : clock },
  );
  t.fake.links.set('demo', new ScriptedLink('demo', script, options.era ?? 'legacy'));
  const loaded = await storedSession(t.store, options.session);
  const ex = exchange(options.deadlineMs ?? 120_000, options.nodeClock ? Date.now() : clock.now());
  const input: RelayInput = {
    deps: t.deps,
    loaded,
    caller: sessionCaller(t.deps, loaded, ANONYMOUS_IDENTITY, true),
    accept: options.accept ?? { json: true, sse: true },
    exchange: ex,
    request: request(7, 'tools/call', { name: 'deploy', arguments: {} }),
    target: 'demo',
    params: { name: 'deploy', arguments: {} },
    responseHeaders: { 'mcp-session-id': loaded.session.id },
  };
  return { ...t, clock, loaded, ex, input, link: t.fake.links.get('demo')! };
}

describe('a relayed call whose target just answers', () => {
  it("is one JSON response with the client's id; the target saw the derived id; nothing is left of the call", async () => {
    const h = await setUp(async (req) => ({
      jsonrpc: '2.0',
      id: req.id ?? 0,
      result: { content: [{ type: 'text', text: 'ok' }] },
    }));
    const response = await relayCall(h.input);
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(response.headers.get('mcp-session-id')).toBe(h.loaded.session.id);
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: 7,
      result: { content: [{ type: 'text', text: 'ok' }] },
    });
    expect(h.link.calls[0]!.request).toEqual({
      id: 'c.n.7',
      method: 'tools/call',
      params: { name: 'deploy', arguments: {} },
    });
    expect(h.deps.activeCalls.size).toBe(0);
    expect(h.store.keysOf(h.loaded.session.id)).toEqual(['SESSION']);
  });

  it("relays the target's error response as it came, with the client's id", async () => {
    const h = await setUp(async (req) => ({
      jsonrpc: '2.0',
      id: req.id ?? 0,
      error: { code: -32602, message: 'Unknown tool' },
    }));
    expect(await (await relayCall(h.input)).json()).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32602, message: 'Unknown tool' },
    });
  });

  it('a target that fails: the client gets the error in-band, retryable', async () => {
    const h = await setUp(async () => {
      throw new DependencyFailedError('demo', 'HTTP 502');
    });
    const body = (await (await relayCall(h.input)).json()) as JSONRPCResponse;
    expect(body).toMatchObject({ id: 7, error: { code: -32603, data: { retryable: true } } });
  });
});

describe('a relayed call that streams', () => {
  it('sends what the target sent first, then the result; every event of a 2025-11-25 stream carries an id', async () => {
    const h = await setUp(async (req, options) => {
      options.onNotification?.({
        jsonrpc: '2.0',
        method: 'notifications/message',
        params: { level: 'info', data: 'working' },
      });
      return { jsonrpc: '2.0', id: req.id ?? 0, result: { content: [] } };
    });
    const response = await relayCall(h.input);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const sse = new SseText(response);
    const text = await sse.all();
    expect(sse.messages()).toEqual([
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } },
      { jsonrpc: '2.0', id: 7, result: { content: [] } },
    ]);
    // A client not trusted to resume gets no priming event; its events still carry ids (seq 1, 2).
    expect(text.match(/^id: [A-Za-z0-9_-]{16}\.(\d+)$/gm)?.map((line) => line.split('.').pop())).toEqual(['1', '2']);
    expect(text.startsWith('id:')).toBe(true);
  });

  it('opens with a priming event for a client trusted to resume', async () => {
    const h = await setUp(async (req) => ({ jsonrpc: '2.0', id: req.id ?? 0, result: {} }), {
      session: { clientResumes: true },
      accept: { json: false, sse: true },
    });
    const text = await new SseText(await relayCall(h.input)).all();
    expect(text).toMatch(/^id: [A-Za-z0-9_-]{16}\.0\n(retry: \d+\n)?data: \n\n/);
  });

  it('a session of an earlier version gets no ids (its streams cannot be resumed)', async () => {
    const h = await setUp(async (req) => ({ jsonrpc: '2.0', id: req.id ?? 0, result: {} }), {
      session: { protocolVersion: '2025-06-18' },
      accept: { json: false, sse: true },
    });
    const text = await new SseText(await relayCall(h.input)).all();
    expect(text).not.toContain('id:');
    expect(h.store.keysOf(h.loaded.session.id)).toEqual(['SESSION']);
  });

  it("relays the target's question with a gateway id; the answer reaches the target through the holder; then the result", async () => {
    let delivered!: (message: JSONRPCMessage) => void;
    const answered = new Promise<JSONRPCMessage>((resolve) => {
      delivered = resolve;
    });
    const h = await setUp(async (req, options: TargetCallOptions) => {
      options.onServerRequest?.(ASKS);
      const answer = await answered;
      return { jsonrpc: '2.0', id: req.id ?? 0, result: { content: [{ type: 'text', text: JSON.stringify(answer) }] } };
    });
    const deliver = h.fake.targets.deliver.bind(h.fake.targets);
    h.fake.targets.deliver = async (target, session, message) => {
      await deliver(target, session, message);
      delivered(message);
    };
    const sse = new SseText(await relayCall({ ...h.input, accept: { json: false, sse: true } }));
    await sse.until(() => sse.messages().some((m) => m.method === 'elicitation/create'));
    const asked = sse.messages().find((m) => m.method === 'elicitation/create')!;
    expect(asked.id).toMatch(/^gw-/);
    const answer: JSONRPCResponse = {
      jsonrpc: '2.0',
      id: asked.id as string,
      result: { action: 'accept', content: {} },
    };
    expect((await recordBeforeReading(h.deps, h.loaded.session.id, 'alice', answer, 'post-1'))?.status).toBe(202);
    await h.clock.advance(1000); // the holder's looks find it
    await sse.all();
    const result = sse.messages().at(-1)!;
    expect(result).toMatchObject({ id: 7 });
    expect(h.fake.delivered.map((d) => d.message)).toEqual([
      { jsonrpc: '2.0', id: 5, result: { action: 'accept', content: {} } },
    ]);
    // The call's records went with the stream's end.
    expect(await h.store.countPending(h.loaded.session.id, 100)).toBe(0);
  });
});

describe("a 2026-07-28 target's input rounds", () => {
  afterEach(() => jest.useRealTimers());

  it('asks the round as questions, then calls the target again with the answers under its keys and its requestState', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const h = await setUp(
      async (req) =>
        req.params.inputResponses
          ? { jsonrpc: '2.0', id: req.id ?? 0, result: { content: [{ type: 'text', text: 'done' }] } }
          : {
              jsonrpc: '2.0',
              id: req.id ?? 0,
              result: {
                resultType: 'input_required',
                requestState: 'opaque-1',
                inputRequests: {
                  env: {
                    method: 'elicitation/create',
                    params: { mode: 'form', message: 'Env?', requestedSchema: { type: 'object', properties: {} } },
                  },
                },
              },
            },
      { era: 'modern', accept: { json: false, sse: true }, nodeClock: true },
    );
    const sse = new SseText(await relayCall(h.input));
    await sse.until(() => sse.messages().some((m) => m.method === 'elicitation/create'));
    const asked = sse.messages().find((m) => m.method === 'elicitation/create')!;
    await h.store.answerPending(
      h.loaded.session.id,
      asked.id as string,
      JSON.stringify({ jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { env: 'prod' } } }),
    );
    await jest.advanceTimersByTimeAsync(2000);
    await sse.all();
    expect(sse.messages().at(-1)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      result: { content: [{ type: 'text', text: 'done' }] },
    });
    const retry = h.link.calls[1]!.request;
    expect(retry.id).toBe('c.n.7.r1');
    expect(retry.params).toEqual({
      name: 'deploy',
      arguments: {},
      inputResponses: { env: { action: 'accept', content: { env: 'prod' } } },
      requestState: 'opaque-1',
    });
  });

  /** A 2026-07-28 target's round nobody answers, its call on Node's (faked) timers with a 10 s deadline. */
  async function unansweredRound() {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    return setUp(
      async (req) => ({
        jsonrpc: '2.0',
        id: req.id ?? 0,
        result: {
          resultType: 'input_required',
          inputRequests: {
            env: {
              method: 'elicitation/create',
              params: { mode: 'form', message: 'Env?', requestedSchema: { type: 'object', properties: {} } },
            },
          },
        },
      }),
      { era: 'modern', accept: { json: false, sse: true }, nodeClock: true, deadlineMs: 10_000 },
    );
  }

  it('unanswered, is released just before the deadline: the stream ends with retry, the record says where it stands', async () => {
    const h = await unansweredRound();
    const sse = new SseText(await relayCall(h.input));
    await sse.until(() => sse.messages().some((m) => m.method === 'elicitation/create'));
    const streamId = /^id: ([A-Za-z0-9_-]{16})\./m.exec(sse.text)?.[1];
    await jest.advanceTimersByTimeAsync(10_000 - 1500 - 1);
    expect(await h.store.getWaitingCall(h.loaded.session.id, streamId!)).toMatchObject({ state: 'held' });
    await jest.advanceTimersByTimeAsync(1);
    const text = await sse.all();
    expect(text).toMatch(/retry: 2000\n\n$/);
    expect(sse.messages().some((m) => m.id === 7)).toBe(false); // no final message: the call goes on elsewhere
    const record = await h.store.getWaitingCall(h.loaded.session.id, streamId!);
    expect(record).toMatchObject({ state: 'released' });
    expect(JSON.parse(record!.snapshot)).toMatchObject({ step: { kind: 'input', round: 1 } });
    const [question] = h.store.pendingRecords(h.loaded.session.id);
    expect(question).toMatchObject({ kind: 'question', status: 'pending' });
    expect(question!.holderUntil).toBeUndefined();
    expect(h.deps.activeCalls.size).toBe(0);
  });

  it('released just before the deadline although the first release write fails: the release is tried again, no -32001', async () => {
    const h = await unansweredRound();
    // The store refuses the first release write (a throttled or unavailable table answers so).
    const swap = h.store.swapWaitingCall.bind(h.store);
    let refused = 0;
    h.store.swapWaitingCall = async (sessionId, next, version) => {
      if (next.state === 'released' && refused === 0) {
        refused++;
        throw new Error('the table is unavailable');
      }
      return swap(sessionId, next, version);
    };
    const sse = new SseText(await relayCall(h.input));
    await sse.until(() => sse.messages().some((m) => m.method === 'elicitation/create'));
    const streamId = /^id: ([A-Za-z0-9_-]{16})\./m.exec(sse.text)?.[1];
    await jest.advanceTimersByTimeAsync(10_000 - 1500);
    expect(refused).toBe(1);
    expect(await h.store.getWaitingCall(h.loaded.session.id, streamId!)).toMatchObject({ state: 'held' });
    await jest.advanceTimersByTimeAsync(1500); // the deadline
    const text = await sse.all();
    expect(sse.messages().find((m) => m.id === 7)).toBeUndefined(); // not -32001: the call goes on elsewhere
    expect(text).toMatch(/retry: 2000\n\n$/);
    expect(await h.store.getWaitingCall(h.loaded.session.id, streamId!)).toMatchObject({ state: 'released' });
  });

  it('stops a target that keeps asking after the most rounds allowed', async () => {
    const h = await setUp(
      async (req) => ({ jsonrpc: '2.0', id: req.id ?? 0, result: { resultType: 'input_required', requestState: 's' } }),
      {
        era: 'modern',
      },
    );
    const body = (await (await relayCall(h.input)).json()) as { error: { message: string } };
    expect(body.error.message).toContain('still asked for input after 8 rounds');
    expect(h.link.calls).toHaveLength(9);
  });
});

describe('a relayed call ended by the gateway', () => {
  it("at the invocation's deadline: -32001, the target told, not a moment before", async () => {
    const h = await setUp(hangs, {
      session: { protocolVersion: '2025-06-18' },
      accept: { json: false, sse: true },
      deadlineMs: 10_000,
    });
    const sse = new SseText(await relayCall(h.input));
    await h.clock.advance(9999);
    expect(h.link.calls[0]!.options.signal.aborted).toBe(false);
    await h.clock.advance(1);
    await sse.all();
    expect(sse.messages()).toEqual([
      expect.objectContaining({ id: 7, error: expect.objectContaining({ code: -32001 }) }),
    ]);
    expect(h.link.calls[0]!.options.signal.reason).toBe('gateway: deadline');
  });

  it('cancelled by the client on this instance: the target told with its reason, no response on the stream', async () => {
    const h = await setUp(hangs, { accept: { json: false, sse: true } });
    const sse = new SseText(await relayCall(h.input));
    await h.clock.advance(0);
    h.deps.activeCalls.get(h.loaded.session.id, 'c.n.7')?.cancelByClient('never mind');
    const text = await sse.all();
    expect(sse.messages()).toEqual([]);
    expect(text).not.toContain('"id":7');
    expect(h.link.calls[0]!.options.signal.reason).toBe('never mind');
    expect(h.deps.activeCalls.size).toBe(0);
  });

  it('cancelled through another instance (its marker): the call ends without a response when its target ends the stream', async () => {
    const h = await setUp(
      async () => {
        await h.store.markCancelled(h.loaded.session.id, 'c.n.7', h.loaded.session.expiresAt);
        throw new DependencyFailedError('demo', 'the stream ended without a response');
      },
      { accept: { json: false, sse: true } },
    );
    const sse = new SseText(await relayCall(h.input));
    await sse.all();
    expect(sse.messages()).toEqual([]);
  });

  it('the client gone from a stream that cannot be resumed: the call stops, its target told', async () => {
    const h = await setUp(hangs, { session: { protocolVersion: '2025-06-18' }, accept: { json: false, sse: true } });
    const sse = new SseText(await relayCall(h.input));
    await h.clock.advance(0);
    await sse.cancel();
    await h.clock.advance(0);
    expect(h.link.calls[0]!.options.signal.reason).toBe('gateway: client-gone');
  });

  it('the client gone from a resumable stream: not a cancellation, the call goes on for its reconnect', async () => {
    const h = await setUp(hangs, { accept: { json: false, sse: true }, deadlineMs: 10_000 });
    const sse = new SseText(await relayCall(h.input));
    await h.clock.advance(0);
    await sse.cancel();
    await h.clock.advance(5000);
    expect(h.link.calls[0]!.options.signal.aborted).toBe(false);
    await h.clock.advance(5000); // the deadline still ends it
    expect(h.link.calls[0]!.options.signal.aborted).toBe(true);
  });

  it('at a shutdown, a call that cannot go on elsewhere is cancelled at the target; the client is told to retry', async () => {
    const h = await setUp(hangs, { session: { protocolVersion: '2025-06-18' }, accept: { json: false, sse: true } });
    const sse = new SseText(await relayCall(h.input));
    await h.clock.advance(0);
    await h.deps.activeCalls.get(h.loaded.session.id, 'c.n.7')?.shutdown();
    await sse.all();
    expect(sse.messages()).toEqual([
      expect.objectContaining({
        id: 7,
        error: expect.objectContaining({ code: -32001, message: expect.stringContaining('shutting down') }),
      }),
    ]);
    expect(h.link.calls[0]!.options.signal.reason).toBe('gateway: shutting down');
  });

  it.each([
    ['2025-06-18 (no stream log)', '2025-06-18'],
    ['2025-11-25 (its end kept in the stream log)', '2025-11-25'],
  ])(
    'at a shutdown the client is told at once, while the target still lets go of the call; its records go after (%s)',
    async (_era, protocolVersion) => {
      // The platform leaves about a second after SIGTERM: the client's answer must not wait for the
      // target's stream to unwind (slow on a starved CPU), only its records may.
      let letGo: () => void = () => undefined;
      const slowToLetGo: TargetScript = (_request, options) => {
        options.onServerRequest?.(ASKS);
        return new Promise((_resolve, reject) =>
          options.signal.addEventListener('abort', () => {
            letGo = () => reject(new Error('aborted'));
          }),
        );
      };
      const h = await setUp(slowToLetGo, { session: { protocolVersion }, accept: { json: false, sse: true } });
      const sse = new SseText(await relayCall(h.input));
      await sse.until(() => sse.messages().some((m) => m.method === 'elicitation/create'));
      expect(h.store.keysOf(h.loaded.session.id).filter((k) => k.startsWith('P#'))).toHaveLength(1);
      const shutdown = h.deps.activeCalls.get(h.loaded.session.id, 'c.n.7')?.shutdown();
      await sse.until(() => sse.messages().some((m) => m.id === 7));
      expect(sse.messages().at(-1)).toMatchObject({
        id: 7,
        error: { code: -32001, message: expect.stringContaining('shutting down'), data: { retryable: true } },
      });
      expect(h.link.calls[0]!.options.signal.reason).toBe('gateway: shutting down');
      letGo();
      await shutdown;
      expect(h.store.keysOf(h.loaded.session.id).filter((k) => k.startsWith('P#'))).toEqual([]);
      expect(h.deps.activeCalls.size).toBe(0);
    },
  );

  it("the pending timeout counts from when the target's request reached the client, not from when its write began", async () => {
    const h = await setUp(
      (req, options) => {
        options.onServerRequest?.(ASKS);
        return hangs(req, options);
      },
      { accept: { json: false, sse: true } },
    );
    // The table is slow to take the event that asks (and its record): 59 s of the 60 s timeout pass meanwhile.
    const put = h.store.putStreamEvents.bind(h.store);
    let tableAnswers: () => void = () => undefined;
    const answered = new Promise<void>((resolve) => {
      tableAnswers = resolve;
    });
    let writeBegan: () => void = () => undefined;
    const began = new Promise<void>((resolve) => {
      writeBegan = resolve;
    });
    h.store.putStreamEvents = async (sessionId, events, pending) => {
      if (pending?.length) {
        writeBegan();
        await answered;
      }
      return put(sessionId, events, pending);
    };
    const sse = new SseText(await relayCall(h.input));
    await began;
    await h.clock.advance(59_000);
    tableAnswers();
    await sse.until(() => sse.messages().some((m) => m.method === 'elicitation/create'));
    await h.clock.advance(59_000); // 118 s after the write began, 59 s after the client was asked
    expect(sse.messages().find((m) => m.id === 7)).toBeUndefined();
    await h.clock.advance(1_000);
    await sse.all();
    expect(sse.messages().at(-1)).toMatchObject({ id: 7, error: { code: -32001 } });
  });

  it("a target's request nobody answers ends the call at the pending timeout, and its record goes", async () => {
    const h = await setUp(
      (req, options) => {
        options.onServerRequest?.(ASKS);
        return hangs(req, options);
      },
      { session: { protocolVersion: '2025-06-18' }, accept: { json: false, sse: true } },
    );
    const sse = new SseText(await relayCall(h.input));
    await sse.until(() => sse.messages().length > 0);
    expect(await h.store.countPending(h.loaded.session.id, 100)).toBe(1);
    await h.clock.advance(60_000);
    await sse.all();
    expect(sse.messages().at(-1)).toMatchObject({
      id: 7,
      error: { code: -32001, message: expect.stringContaining('answer a request of the target') },
    });
    expect(await h.store.countPending(h.loaded.session.id, 100)).toBe(0);
  });
});
