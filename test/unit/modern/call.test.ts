import type { GatewayConfigInput } from '../../../lambda/config/schema';
import { type CallContext, forwardCall } from '../../../lambda/modern/call';
import type { ModernDeps } from '../../../lambda/modern/deps';
import type { ModernRequest } from '../../../lambda/modern/validate';
import { CONFIRM_KEY } from '../../../lambda/policy/confirm-tools';
import { httpStatusOf } from '../../../lambda/protocol/errors';
import type { JSONRPCResponse } from '../../../lambda/protocol/jsonrpc';
import { TASKS_EXTENSION } from '../../../lambda/protocol/meta';
import type {
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  ModernClientCapabilities,
} from '../../../lambda/protocol/types';
import type { TargetCallOptions } from '../../../lambda/targets/target-link';
import {
  FAKE_TIMERS,
  type FakeTarget,
  fakeTarget,
  modernCaller,
  modernDeps,
  refusal,
  settledOnFakeTimers,
  turnsUntil,
  untilAborted,
} from '../../support/modern-deps';

/**
 * tools/call, prompts/get and resources/read for a 2026-07-28 client (modern/call.ts), against scripted
 * targets: routing by name or URI, the multi round-trip relay (the target's state sealed in the gateway's
 * and handed back byte for byte; a refused state never reaches the target), -32042 rounds, confirmTools,
 * progress and log messages, tasks, and a 2025 target that asks for input during the call (refused when
 * it cannot be bridged, bridged into rounds when it can).
 */

/** The sealed text with its last two characters changed (never to what they were). */
const altered = (sealed: string) => `${sealed.slice(0, -2)}${sealed.endsWith('AA') ? 'BB' : 'AA'}`;

const FORM: ModernClientCapabilities = { elicitation: { form: {} } };
const PRINCIPAL = 'alice';

function modernRequest(
  method: string,
  params: Record<string, unknown>,
  change: Partial<ModernRequest> = {},
): ModernRequest {
  return {
    id: 'client-1',
    method,
    params,
    protocolVersion: '2026-07-28',
    clientCapabilities: FORM,
    ...change,
  };
}

interface Forwarded {
  result: Promise<JSONRPCResponse | undefined>;
  notifications: JSONRPCNotification[];
  emitted: JSONRPCResponse[];
  keepAlives: number;
}

function forward(
  deps: ModernDeps,
  request: ModernRequest,
  change: Partial<CallContext> = {},
  principal = PRINCIPAL,
): Forwarded {
  const out: Omit<Forwarded, 'result'> = { notifications: [], emitted: [], keepAlives: 0 };
  const result = forwardCall({
    deps,
    request,
    principal,
    caller: modernCaller(deps, principal, request.clientCapabilities),
    signal: new AbortController().signal,
    paramHeaders: {},
    onNotification: (notification) => out.notifications.push(notification),
    emit: (message) => {
      out.emitted.push(message);
      return true;
    },
    keepAlive: () => {
      out.keepAlives++;
    },
    deadline: Date.now() + 30_000,
    canStream: true,
    ...change,
  });
  return Object.assign(out, { result });
}

const call = async (deps: ModernDeps, request: ModernRequest, change: Partial<CallContext> = {}) =>
  forward(deps, request, change).result;

const resultOf = (response: JSONRPCResponse | undefined): Record<string, unknown> => {
  if (!response || !('result' in response)) throw new Error(`expected a result: ${JSON.stringify(response)}`);
  return response.result as Record<string, unknown>;
};

const answering = (result: Record<string, unknown>) => async (): Promise<JSONRPCResponse> => ({
  jsonrpc: '2.0',
  id: 0,
  result,
});

function setup(target: FakeTarget = fakeTarget('modern'), config: Partial<GatewayConfigInput> = {}) {
  return modernDeps([target], { config });
}

describe('a call is routed to its target', () => {
  it("by tool name, with the target's own name and without the client's _meta, and answered with the client's id", async () => {
    const target = fakeTarget('modern', { handle: answering({ content: [{ type: 'text', text: 'hi' }] }) });
    const { deps } = setup(target);
    const response = await call(
      deps,
      modernRequest('tools/call', { name: 'modern___echo', arguments: { x: 1 }, _meta: { progressToken: 'p' } }),
    );
    expect(response).toEqual({
      jsonrpc: '2.0',
      id: 'client-1',
      result: { content: [{ type: 'text', text: 'hi' }], resultType: 'complete' },
    });
    expect(target.calls.map((c) => c.request)).toEqual([
      { method: 'tools/call', params: { name: 'echo', arguments: { x: 1 } } },
    ]);
  });

  it('by URI for resources/read, sending the URI as it is', async () => {
    const target = fakeTarget('modern', { handle: answering({ contents: [] }) });
    const { deps } = setup(target);
    await call(deps, modernRequest('resources/read', { uri: 'modern://doc' }));
    expect(target.calls[0]?.request).toEqual({ method: 'resources/read', params: { uri: 'modern://doc' } });
  });

  it('refusing a name no target has, calling no target', async () => {
    const target = fakeTarget('modern');
    const { deps } = setup(target);
    expect((await refusal(call(deps, modernRequest('tools/call', { name: 'nowhere___x' })))).kind).toBe(
      'InvalidParams',
    );
    expect(target.calls).toEqual([]);
  });

  it("forwarding the client's Mcp-Param-* headers untouched", async () => {
    const target = fakeTarget('modern');
    const { deps } = setup(target);
    await call(deps, modernRequest('tools/call', { name: 'modern___echo' }), {
      paramHeaders: { 'mcp-param-region': 'eu' },
    });
    expect(target.calls[0]?.options.headers).toEqual({ 'mcp-param-region': 'eu' });
  });
});

describe('an input round of a 2026-07-28 target', () => {
  const ASK = {
    ask: { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object' } } },
  };

  it("goes back with its requests untouched, and the retry reaches the target with the answers and the target's own state byte for byte", async () => {
    const target = fakeTarget('modern', {
      handle: answering({ resultType: 'input_required', inputRequests: ASK, requestState: 'target "state" ü' }),
    });
    const { deps } = setup(target);
    const params = { name: 'modern___greet', arguments: { lang: 'en' } };
    const round = resultOf(await call(deps, modernRequest('tools/call', params)));
    expect(round).toMatchObject({ resultType: 'input_required', inputRequests: ASK });
    expect(round.requestState).toMatch(/^gw1\./);
    target.handle = answering({ content: [] });
    const answers = { ask: { action: 'accept', content: { name: 'Ada' } } };
    await call(
      deps,
      modernRequest('tools/call', { ...params, requestState: round.requestState, inputResponses: answers }),
    );
    expect(target.calls[1]?.request.params).toEqual({
      name: 'greet',
      arguments: { lang: 'en' },
      inputResponses: answers,
      requestState: 'target "state" ü',
    });
  });

  it('sends no requestState on the retry when the target sent none', async () => {
    const target = fakeTarget('modern', { handle: answering({ resultType: 'input_required', inputRequests: ASK }) });
    const { deps } = setup(target);
    const round = resultOf(await call(deps, modernRequest('tools/call', { name: 'modern___greet' })));
    await call(
      deps,
      modernRequest('tools/call', { name: 'modern___greet', requestState: round.requestState, inputResponses: {} }),
    );
    expect(target.calls[1]?.request.params).toEqual({ name: 'greet', inputResponses: {} });
  });

  it('refuses a retry whose state was altered, or is bound to other arguments, before the target is called (-32602, 400, reason invalid)', async () => {
    const target = fakeTarget('modern', {
      handle: answering({ resultType: 'input_required', inputRequests: ASK, requestState: 's' }),
    });
    const { deps } = setup(target);
    const round = resultOf(
      await call(deps, modernRequest('tools/call', { name: 'modern___greet', arguments: { a: 1 } })),
    );
    const state = String(round.requestState);
    for (const [args, requestState] of [
      [{ a: 1 }, altered(state)],
      [{ a: 2 }, state],
    ] as const) {
      const error = await refusal(
        call(
          deps,
          modernRequest('tools/call', { name: 'modern___greet', arguments: args, requestState, inputResponses: {} }),
        ),
      );
      expect([error.kind, error.spec.code, httpStatusOf(error), error.data]).toEqual([
        'RequestStateRefused',
        -32602,
        400,
        { reason: 'invalid' },
      ]);
    }
    expect(target.calls).toHaveLength(1);
  });

  it('refuses a retry after requestStateTtlSeconds with reason expired, the target not called', async () => {
    let now = Date.now();
    const target = fakeTarget('modern', { handle: answering({ resultType: 'input_required', inputRequests: ASK }) });
    const { deps } = modernDeps([target], { now: () => now });
    const round = resultOf(await call(deps, modernRequest('tools/call', { name: 'modern___greet' })));
    now += deps.config.requestStateTtlSeconds * 1000;
    const error = await refusal(
      call(
        deps,
        modernRequest('tools/call', { name: 'modern___greet', requestState: round.requestState, inputResponses: {} }),
      ),
    );
    expect([error.kind, error.data]).toEqual(['RequestStateRefused', { reason: 'expired' }]);
    expect(target.calls).toHaveLength(1);
  });

  it('makes the result of a resources/read retry uncacheable (it carried input)', async () => {
    const target = fakeTarget('modern', {
      handle: answering({ resultType: 'input_required', inputRequests: ASK }),
    });
    const { deps } = setup(target);
    const round = resultOf(await call(deps, modernRequest('resources/read', { uri: 'modern://doc' })));
    target.handle = answering({ contents: [], ttlMs: 60_000, cacheScope: 'public' });
    const result = resultOf(
      await call(
        deps,
        modernRequest('resources/read', { uri: 'modern://doc', requestState: round.requestState, inputResponses: {} }),
      ),
    );
    expect(result).toMatchObject({ ttlMs: 0, cacheScope: 'private' });
    expect(target.calls[1]?.request.params).toEqual({ uri: 'modern://doc', inputResponses: {} });
  });

  it('refuses malformed inputResponses (-32602, 400) before the target is called', async () => {
    const target = fakeTarget('modern');
    const { deps } = setup(target);
    const error = await refusal(
      call(deps, modernRequest('tools/call', { name: 'modern___greet', inputResponses: ['x'] })),
    );
    expect([error.kind, httpStatusOf(error)]).toEqual(['MalformedParams', 400]);
    expect(target.calls).toEqual([]);
  });

  it('passes inputResponses of a request without any requestState to the target as they are', async () => {
    const target = fakeTarget('modern');
    const { deps } = setup(target);
    const inputResponses = { theirs: { action: 'accept' } };
    await call(deps, modernRequest('tools/call', { name: 'modern___greet', inputResponses }));
    expect(target.calls[0]?.request.params).toEqual({ name: 'greet', inputResponses });
  });
});

describe("a target's -32042 round", () => {
  it("is retried as the call again: the retry's answers only said the user went to the URL", async () => {
    const target = fakeTarget('modern', {
      handle: async () => ({
        jsonrpc: '2.0',
        id: 0,
        error: { code: -32042, message: 'connect first', data: { elicitations: [{ url: 'https://consent.example' }] } },
      }),
    });
    const { deps } = setup(target);
    const caps = { elicitation: { url: {} } };
    const round = resultOf(
      await call(deps, modernRequest('tools/call', { name: 'modern___sync' }, { clientCapabilities: caps })),
    );
    expect(round.inputRequests).toEqual({
      url_0: {
        method: 'elicitation/create',
        params: { mode: 'url', message: 'Open this URL to continue', url: 'https://consent.example' },
      },
    });
    target.handle = answering({ content: [] });
    await call(
      deps,
      modernRequest(
        'tools/call',
        { name: 'modern___sync', requestState: round.requestState, inputResponses: { url_0: { action: 'accept' } } },
        { clientCapabilities: caps },
      ),
    );
    expect(target.calls[1]?.request.params).toEqual({ name: 'sync' });
  });
});

describe('a 2025 target', () => {
  it('gets no multi round-trip fields: 2025 has none', async () => {
    const target = fakeTarget('legacy', { era: 'legacy' });
    const { deps } = setup(target);
    await call(
      deps,
      modernRequest('tools/call', { name: 'legacy___echo', inputResponses: { a: { action: 'accept' } } }),
    );
    expect(target.calls[0]?.request.params).toEqual({ name: 'echo' });
  });
});

describe('confirmTools', () => {
  const CONFIG = { confirmTools: ['modern___deploy'] };

  it('asks the user first, by a form round keyed gateway_confirm, without calling the target', async () => {
    const target = fakeTarget('modern');
    const { deps } = setup(target, CONFIG);
    const round = resultOf(
      await call(deps, modernRequest('tools/call', { name: 'modern___deploy', arguments: { env: 'prod' } })),
    );
    expect(round.resultType).toBe('input_required');
    expect(Object.keys(round.inputRequests as object)).toEqual([CONFIRM_KEY]);
    expect(
      (round.inputRequests as Record<string, { method: string; params: { message: string } }>)[CONFIRM_KEY],
    ).toMatchObject({
      method: 'elicitation/create',
      params: { message: expect.stringContaining('modern___deploy') },
    });
    expect(target.calls).toEqual([]);
  });

  it('calls the tool once the user accepts with confirm: true, without passing the gateway’s answer on', async () => {
    const target = fakeTarget('modern', { handle: answering({ content: [] }) });
    const { deps } = setup(target, CONFIG);
    const params = { name: 'modern___deploy', arguments: { env: 'prod' } };
    const round = resultOf(await call(deps, modernRequest('tools/call', params)));
    const response = await call(
      deps,
      modernRequest('tools/call', {
        ...params,
        requestState: round.requestState,
        inputResponses: { [CONFIRM_KEY]: { action: 'accept', content: { confirm: true } } },
      }),
    );
    expect(resultOf(response).resultType).toBe('complete');
    expect(target.calls.map((c) => c.request.params)).toEqual([{ name: 'deploy', arguments: { env: 'prod' } }]);
  });

  it('does not call the tool when the user declines, cancels or does not tick confirm: an isError result', async () => {
    for (const answer of [
      { action: 'decline' },
      { action: 'cancel' },
      { action: 'accept', content: { confirm: false } },
    ]) {
      const target = fakeTarget('modern');
      const { deps } = setup(target, CONFIG);
      const round = resultOf(await call(deps, modernRequest('tools/call', { name: 'modern___deploy' })));
      const result = resultOf(
        await call(
          deps,
          modernRequest('tools/call', {
            name: 'modern___deploy',
            requestState: round.requestState,
            inputResponses: { [CONFIRM_KEY]: answer },
          }),
        ),
      );
      expect(result.isError).toBe(true);
      expect(target.calls).toEqual([]);
    }
  });

  it('asks again, without calling the tool, when the retry carries no answer to the confirmation', async () => {
    const target = fakeTarget('modern');
    const { deps } = setup(target, CONFIG);
    const round = resultOf(await call(deps, modernRequest('tools/call', { name: 'modern___deploy' })));
    const again = resultOf(
      await call(
        deps,
        modernRequest('tools/call', { name: 'modern___deploy', requestState: round.requestState, inputResponses: {} }),
      ),
    );
    expect(again.resultType).toBe('input_required');
    expect(Object.keys(again.inputRequests as object)).toEqual([CONFIRM_KEY]);
    expect(target.calls).toEqual([]);
  });

  it('is refused with -32021 for a client that cannot answer a form', async () => {
    const { deps } = setup(fakeTarget('modern'), CONFIG);
    const error = await refusal(
      call(deps, modernRequest('tools/call', { name: 'modern___deploy' }, { clientCapabilities: {} })),
    );
    expect([error.kind, error.data]).toEqual([
      'MissingCapability',
      { requiredCapabilities: { elicitation: { form: {} } } },
    ]);
  });

  it("does not ask again in the target's later rounds of a confirmed call", async () => {
    const target = fakeTarget('modern', {
      handle: answering({ resultType: 'input_required', inputRequests: { more: { method: 'roots/list' } } }),
    });
    const { deps } = setup(target, CONFIG);
    const caps = { elicitation: { form: {} }, roots: {} };
    const first = resultOf(
      await call(deps, modernRequest('tools/call', { name: 'modern___deploy' }, { clientCapabilities: caps })),
    );
    const second = resultOf(
      await call(
        deps,
        modernRequest(
          'tools/call',
          {
            name: 'modern___deploy',
            requestState: first.requestState,
            inputResponses: { [CONFIRM_KEY]: { action: 'accept', content: { confirm: true } } },
          },
          { clientCapabilities: caps },
        ),
      ),
    );
    expect(Object.keys(second.inputRequests as object)).toEqual(['more']);
    target.handle = answering({ content: [] });
    await call(
      deps,
      modernRequest(
        'tools/call',
        { name: 'modern___deploy', requestState: second.requestState, inputResponses: { more: { roots: [] } } },
        { clientCapabilities: caps },
      ),
    );
    expect(target.calls).toHaveLength(2);
    expect(target.calls[1]?.request.params).toEqual({ name: 'deploy', inputResponses: { more: { roots: [] } } });
  });
});

describe('notifications during a call', () => {
  function talkative(notifications: (options: TargetCallOptions) => JSONRPCNotification[]) {
    return fakeTarget('modern', {
      handle: async (_request, options) => {
        for (const notification of notifications(options)) options.onNotification?.(notification);
        return { jsonrpc: '2.0', id: 0, result: {} };
      },
    });
  }
  const progress = (progressToken: unknown): JSONRPCNotification => ({
    jsonrpc: '2.0',
    method: 'notifications/progress',
    params: { progressToken, progress: 1 } as JSONRPCNotification['params'],
  });
  const log = (level: string): JSONRPCNotification => ({
    jsonrpc: '2.0',
    method: 'notifications/message',
    params: { level, data: level },
  });

  it("map the call's own progress token back to the client's, and drop any other token's", async () => {
    const target = talkative((options) => [progress(options.progressToken), progress('someone-else')]);
    const { deps } = setup(target);
    const forwarded = forward(deps, modernRequest('tools/call', { name: 'modern___x' }, { progressToken: 'mine' }));
    await forwarded.result;
    expect(target.calls[0]?.options.progressToken).toMatch(/^gw-progress-/);
    expect(forwarded.notifications).toEqual([progress('mine')]);
  });

  it("pass log messages at or above the client's level only, and none to a client that asked for none", async () => {
    const target = talkative(() => [log('debug'), log('info'), log('error')]);
    const { deps } = setup(target);
    const atInfo = forward(deps, modernRequest('tools/call', { name: 'modern___x' }, { logLevel: 'info' }));
    await atInfo.result;
    expect(atInfo.notifications.map((n) => n.params?.level)).toEqual(['info', 'error']);
    const none = forward(deps, modernRequest('tools/call', { name: 'modern___x' }));
    await none.result;
    expect(none.notifications).toEqual([]);
  });

  it("tell the catalog of a target's list change", async () => {
    const target = talkative(() => [{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }]);
    const { deps, catalog } = setup(target);
    await call(deps, modernRequest('tools/call', { name: 'modern___x' }));
    expect(catalog.noticed).toEqual([{ target: 'modern', method: 'notifications/tools/list_changed' }]);
  });
});

describe("a target's task", () => {
  const TASKS: ModernClientCapabilities = { extensions: { [TASKS_EXTENSION]: {} } } as ModernClientCapabilities;

  it("reaches a client that declared the extension with the gateway's task id, which opens to the target's own for this principal", async () => {
    const target = fakeTarget('modern', {
      handle: answering({ resultType: 'task', taskId: 'task-7', status: 'working', ttlMs: 60_000 }),
    });
    const { deps } = setup(target);
    const result = resultOf(
      await call(deps, modernRequest('tools/call', { name: 'modern___slow' }, { clientCapabilities: TASKS })),
    );
    expect(result).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 60_000 });
    expect(result.taskId).not.toBe('task-7');
    expect(deps.taskIds.open(result.taskId, PRINCIPAL)).toEqual({
      ok: true,
      task: { target: 'modern', taskId: 'task-7', principal: PRINCIPAL },
    });
    expect(deps.taskIds.open(result.taskId, 'mallory')).toEqual({ ok: false, reason: 'principal' });
  });

  it("is the target's protocol error for a client that did not declare the extension, and for prompts/get", async () => {
    const target = fakeTarget('modern', { handle: answering({ resultType: 'task', taskId: 'task-7' }) });
    const { deps } = setup(target);
    expect((await refusal(call(deps, modernRequest('tools/call', { name: 'modern___slow' })))).kind).toBe(
      'DependencyFailed',
    );
    expect(
      (await refusal(call(deps, modernRequest('prompts/get', { name: 'modern___p' }, { clientCapabilities: TASKS }))))
        .kind,
    ).toBe('DependencyFailed');
  });
});

/**
 * A 2025 target that asks its questions during the call, one after the other (ids 1, 2, …, each once
 * the previous was answered), and answers with what it was told last.
 */
function askingTarget(...questions: Array<{ method: string; params?: Record<string, unknown> }>): FakeTarget {
  const waiting = new Map<unknown, (message: JSONRPCMessage) => void>();
  return fakeTarget('legacy', {
    era: 'legacy',
    deliver: async (message) => {
      waiting.get((message as { id?: unknown }).id)?.(message);
    },
    handle: async (_request, options) => {
      let answer: JSONRPCMessage | undefined;
      for (const [index, question] of questions.entries()) {
        const id = index + 1;
        const answered = new Promise<JSONRPCMessage>((resolve) => waiting.set(id, resolve));
        const asked: JSONRPCRequest = { jsonrpc: '2.0', id, method: question.method, params: question.params };
        options.onServerRequest?.(asked);
        answer = await Promise.race([answered, untilAborted(options.signal)]);
      }
      return {
        jsonrpc: '2.0',
        id: 0,
        result: { content: [{ type: 'text', text: JSON.stringify((answer as { result?: unknown }).result) }] },
      };
    },
  });
}

describe('a 2025 target asking for input the call cannot bridge', () => {
  it('a kind the client did not declare: the target is refused with -32601, the call cancelled, the client told -32021', async () => {
    const target = askingTarget({ method: 'sampling/createMessage', params: { messages: [], maxTokens: 5 } });
    const { deps } = setup(target);
    const error = await refusal(call(deps, modernRequest('tools/call', { name: 'legacy___ask' })));
    expect([error.kind, httpStatusOf(error), error.data]).toEqual([
      'MissingCapability',
      400,
      { requiredCapabilities: { sampling: {} } },
    ]);
    expect(target.replies).toEqual([
      expect.objectContaining({ id: 1, error: expect.objectContaining({ code: -32601 }) }),
    ]);
    expect(target.calls[0]?.options.signal.aborted).toBe(true);
  });

  it('a request that takes no stream: CrossEraInputUnsupported naming the target and the request', async () => {
    const target = askingTarget({ method: 'elicitation/create', params: { message: 'ok?', requestedSchema: {} } });
    const { deps } = setup(target);
    const error = await refusal(
      call(deps, modernRequest('tools/call', { name: 'legacy___ask' }), { canStream: false }),
    );
    expect([error.kind, error.data]).toEqual([
      'CrossEraInputUnsupported',
      { target: 'legacy', inputMethod: 'elicitation/create' },
    ]);
    expect(target.replies[0]).toMatchObject({ id: 1, error: { code: -32601 } });
  });
});

describe('a 2025 target asking for input the call can bridge', () => {
  beforeEach(() => jest.useFakeTimers(FAKE_TIMERS));
  afterEach(() => jest.useRealTimers());
  const settled = settledOnFakeTimers;

  async function firstRound(deps: ModernDeps, target: FakeTarget) {
    const held = forward(deps, modernRequest('tools/call', { name: 'legacy___ask', arguments: { n: 1 } }));
    await turnsUntil(() => held.emitted.length > 0);
    expect(target.calls).toHaveLength(1);
    const round = resultOf(held.emitted[0]);
    return { held, round };
  }

  it('sends round 1 on the stream kept open, keyed by gateway ids, and the retry delivers the answer and gets the result', async () => {
    const target = askingTarget({ method: 'elicitation/create', params: { message: 'ok?', requestedSchema: {} } });
    const { deps } = setup(target);
    const { held, round } = await firstRound(deps, target);
    const [gatewayId] = Object.keys(round.inputRequests as object);
    expect(gatewayId).not.toBe('1');
    expect(round).toMatchObject({
      resultType: 'input_required',
      inputRequests: { [gatewayId!]: { method: 'elicitation/create', params: { message: 'ok?' } } },
    });
    expect(deps.activeCalls.size).toBe(1);

    const retry = forward(
      deps,
      modernRequest('tools/call', {
        name: 'legacy___ask',
        arguments: { n: 1 },
        requestState: round.requestState,
        inputResponses: { [gatewayId!]: { action: 'accept', content: { ok: true } } },
      }),
    );
    const final = await settled(retry.result);
    expect(resultOf(final)).toEqual({
      content: [{ type: 'text', text: JSON.stringify({ action: 'accept', content: { ok: true } }) }],
      resultType: 'complete',
    });
    expect(retry.keepAlives).toBe(1);
    // The target got the answer under its own request id, once.
    expect(target.delivered).toEqual([{ jsonrpc: '2.0', id: 1, result: { action: 'accept', content: { ok: true } } }]);
    // The held call ends without a response of its own (its round went out), and lets go of what it held.
    expect(await settled(held.result)).toBeUndefined();
    expect(deps.activeCalls.size).toBe(0);
  });

  it('tells the retry -32021 when the target asks, in a later round, for a kind the client did not declare', async () => {
    const target = askingTarget(
      { method: 'elicitation/create', params: { message: 'ok?', requestedSchema: {} } },
      { method: 'sampling/createMessage', params: { messages: [], maxTokens: 5 } },
    );
    const { deps } = setup(target);
    const { held, round } = await firstRound(deps, target);
    const [gatewayId] = Object.keys(round.inputRequests as object);
    const error = await refusal(
      settled(
        call(
          deps,
          modernRequest('tools/call', {
            name: 'legacy___ask',
            arguments: { n: 1 },
            requestState: round.requestState,
            inputResponses: { [gatewayId!]: { action: 'accept', content: { ok: true } } },
          }),
        ),
      ),
    );
    expect(target.replies).toEqual([
      expect.objectContaining({ id: 2, error: expect.objectContaining({ code: -32601 }) }),
    ]);
    expect([error.kind, httpStatusOf(error), error.data]).toEqual([
      'MissingCapability',
      400,
      { requiredCapabilities: { sampling: {} } },
    ]);
    expect(await settled(held.result)).toBeUndefined();
  });

  it("refuses a retry that does not answer the round's request, delivering nothing", async () => {
    const target = askingTarget({ method: 'elicitation/create', params: { message: 'ok?', requestedSchema: {} } });
    const { deps } = setup(target);
    const { held, round } = await firstRound(deps, target);
    const error = await refusal(
      call(
        deps,
        modernRequest('tools/call', {
          name: 'legacy___ask',
          arguments: { n: 1 },
          requestState: round.requestState,
          inputResponses: { other: { action: 'accept' } },
        }),
      ),
    );
    expect(error.kind).toBe('MalformedParams');
    expect(target.delivered).toEqual([]);
    // The held call ends when the instance shuts down (it is cancelled at the target).
    await settled(deps.activeCalls.shutdown(1_000));
    expect(await settled(held.result)).toBeUndefined();
  });

  it('refuses one bridged call more than maxBridgedCallsPerPrincipal: the target is told, the client gets 429', async () => {
    const target = askingTarget({ method: 'elicitation/create', params: { message: 'ok?', requestedSchema: {} } });
    const { deps, store } = setup(target, { maxBridgedCallsPerPrincipal: 1 });
    await store.admitBridgedCall(PRINCIPAL, Math.ceil((Date.now() + 30_000) / 1000), { max: 1, bucketSeconds: 60 });
    const error = await refusal(settled(call(deps, modernRequest('tools/call', { name: 'legacy___ask' }))));
    expect([error.kind, httpStatusOf(error)]).toEqual(['TooManyBridgedCalls', 429]);
    expect(target.replies).toEqual([
      expect.objectContaining({ id: 1, error: expect.objectContaining({ code: -32603 }) }),
    ]);
  });
});
