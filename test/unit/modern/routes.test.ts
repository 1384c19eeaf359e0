import { MODERN_ROUTES } from '../../../lambda/modern/routes';
import { META_KEYS, TASKS_EXTENSION } from '../../../lambda/protocol/meta';
import { MODERN_METHOD_LIST } from '../../../lambda/protocol/methods';
import type { JSONRPCMessage, JSONRPCNotification, ModernClientCapabilities } from '../../../lambda/protocol/types';
import { sseEvents } from '../../support/mcp-http';
import {
  FAKE_TIMERS,
  fakeTarget,
  modernDeps,
  SERVER_INFO,
  settledOnFakeTimers,
  untilAborted,
} from '../../support/modern-deps';
import { requestModern } from '../../support/modern-post';

/**
 * The 2026-07-28 routing table (modern/routes.ts) through the modern path, with web Request/Response
 * objects and scripted targets: every method of the version routed; lists as one page with the
 * catalog's cache hints; relayed calls as one JSON body unless the client asked for what the target
 * streams; completions routed by their ref; task requests; a listen's bounds before any stream.
 */

const serverMeta = { [META_KEYS.serverInfo]: SERVER_INFO };

describe('the 2026-07-28 routing table', () => {
  it('routes every method of the protocol version, and no other', () => {
    expect([...MODERN_ROUTES.keys()].sort()).toEqual([...MODERN_METHOD_LIST].sort());
    expect(MODERN_ROUTES.get('tools/call')).toMatchObject({ nameSource: 'name', safeToResend: false });
    expect(MODERN_ROUTES.get('tools/list')).toMatchObject({ safeToResend: true });
  });
});

describe('a list', () => {
  it("is every target's listing in one page, with the catalog's ttl and cache scope, typed and naming the gateway", async () => {
    const { deps, catalog } = modernDeps([fakeTarget('modern')]);
    catalog.listings.tools = { items: [{ name: 'modern___echo' }], ttlMs: 5_000, cacheScope: 'public' };
    const res = await requestModern(deps, 'tools/list');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: 'req-1',
      result: {
        tools: [{ name: 'modern___echo' }],
        ttlMs: 5_000,
        cacheScope: 'public',
        resultType: 'complete',
        _meta: serverMeta,
      },
    });
  });

  it('fills the field of its kind (resource templates included)', async () => {
    const { deps, catalog } = modernDeps([fakeTarget('modern')]);
    catalog.listings.resourceTemplates = { items: [{ uriTemplate: 'modern://{id}' }], ttlMs: 0, cacheScope: 'private' };
    const body = await (await requestModern(deps, 'resources/templates/list')).json();
    expect(body.result.resourceTemplates).toEqual([{ uriTemplate: 'modern://{id}' }]);
  });

  it('refuses a cursor with -32602 in-band: the gateway hands out none', async () => {
    const { deps } = modernDeps([fakeTarget('modern')]);
    const res = await requestModern(deps, 'prompts/list', { cursor: 'page-2' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ error: { code: -32602, message: 'Invalid params: unknown cursor' } });
  });
});

describe('a relayed call', () => {
  const progress = (token: unknown): JSONRPCNotification => ({
    jsonrpc: '2.0',
    method: 'notifications/progress',
    params: { progressToken: token, progress: 1 } as JSONRPCNotification['params'],
  });

  function streamingTarget() {
    return fakeTarget('modern', {
      handle: async (_request, options) => {
        options.onNotification?.(progress(options.progressToken));
        options.onNotification?.({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
        return { jsonrpc: '2.0', id: 0, result: { content: [] } };
      },
    });
  }

  it('is one JSON body when the client asked for nothing the target streams, typed and naming the gateway', async () => {
    const { deps } = modernDeps([streamingTarget()]);
    const res = await requestModern(deps, 'tools/call', { name: 'modern___work' });
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: 'req-1',
      result: { content: [], resultType: 'complete', _meta: serverMeta },
    });
  });

  it('becomes an SSE stream, its last event the result, when the client asked for progress and takes SSE', async () => {
    const { deps } = modernDeps([streamingTarget()]);
    const res = await requestModern(deps, 'tools/call', { name: 'modern___work' }, { meta: { progressToken: 'mine' } });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const messages = [];
    for await (const event of sseEvents(res)) if (event.message) messages.push(event.message);
    expect(messages).toEqual([
      progress('mine'),
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      { jsonrpc: '2.0', id: 'req-1', result: { content: [], resultType: 'complete', _meta: serverMeta } },
    ]);
  });

  it('stays one JSON body for a client that takes no SSE, whatever the target streams', async () => {
    const { deps } = modernDeps([streamingTarget()]);
    const res = await requestModern(
      deps,
      'tools/call',
      { name: 'modern___work' },
      { meta: { progressToken: 'mine' }, accept: { json: true, sse: false } },
    );
    expect(res.headers.get('content-type')).toBe('application/json');
  });

  it("answers the gateway's refusal with its HTTP status (a capability the client lacks: 400)", async () => {
    const target = fakeTarget('modern', {
      handle: async () => ({
        jsonrpc: '2.0',
        id: 0,
        result: { resultType: 'input_required', inputRequests: { a: { method: 'roots/list' } } },
      }),
    });
    const { deps } = modernDeps([target]);
    const res = await requestModern(deps, 'tools/call', { name: 'modern___work' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ id: 'req-1', error: { code: -32021 } });
  });

  it('is cancelled at the target when the client closes the request, and ends with ClientCancelled', async () => {
    const target = fakeTarget('modern', { handle: async (_request, options) => untilAborted(options.signal) });
    const { deps } = modernDeps([target]);
    const client = new AbortController();
    const answer = requestModern(deps, 'tools/call', { name: 'modern___slow' }, { signal: client.signal });
    await new Promise((resolve) => setImmediate(resolve));
    client.abort();
    const res = await answer;
    expect(await res.json()).toMatchObject({
      id: 'req-1',
      error: { code: -32001, message: 'Request cancelled by the client' },
    });
    expect(target.calls[0]?.options.signal.aborted).toBe(true);
  });

  it('is cancelled from the start when the client went away before the request was routed', async () => {
    const target = fakeTarget('modern', { handle: async (_request, options) => untilAborted(options.signal) });
    const { deps } = modernDeps([target]);
    const client = new AbortController();
    client.abort();
    const res = await requestModern(deps, 'tools/call', { name: 'modern___slow' }, { signal: client.signal });
    expect(await res.json()).toMatchObject({ error: { code: -32001, message: 'Request cancelled by the client' } });
    // Whatever reaches the target link is already cancelled: nothing is sent.
    expect(target.calls.every((c) => c.options.signal.aborted)).toBe(true);
  });

  it("forwards the client's Mcp-Param-* headers, and no other header", async () => {
    const target = fakeTarget('modern');
    const { deps } = modernDeps([target]);
    await requestModern(
      deps,
      'tools/call',
      { name: 'modern___x' },
      { headers: { 'mcp-param-region': 'eu', 'x-other': '1' } },
    );
    expect(target.calls[0]?.options.headers).toEqual({ 'mcp-param-region': 'eu' });
  });
});

describe('a completion', () => {
  it("of a prompt goes to the prompt's target with the target's own name, its answer relayed", async () => {
    const target = fakeTarget('modern', {
      handle: async () => ({ jsonrpc: '2.0', id: 0, result: { completion: { values: ['en'] } } }),
    });
    const { deps } = modernDeps([target]);
    const res = await requestModern(deps, 'completion/complete', {
      ref: { type: 'ref/prompt', name: 'modern___greet' },
      argument: { name: 'lang', value: 'e' },
    });
    expect(target.calls[0]?.request).toEqual({
      method: 'completion/complete',
      params: { ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'lang', value: 'e' } },
    });
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: 'req-1',
      result: { completion: { values: ['en'] }, resultType: 'complete', _meta: serverMeta },
    });
  });

  it("of a resource template goes to the template's target as it is", async () => {
    const target = fakeTarget('modern');
    const { deps } = modernDeps([fakeTarget('other'), target]);
    await requestModern(deps, 'completion/complete', { ref: { type: 'ref/resource', uri: 'modern://{id}' } });
    expect(target.calls[0]?.request.params).toEqual({ ref: { type: 'ref/resource', uri: 'modern://{id}' } });
  });

  it('of another ref is refused with -32602', async () => {
    const { deps } = modernDeps([fakeTarget('modern')]);
    const body = await (
      await requestModern(deps, 'completion/complete', { ref: { type: 'ref/tool', name: 'x' } })
    ).json();
    expect(body.error).toMatchObject({
      code: -32602,
      message: 'Invalid params: ref must be ref/prompt or ref/resource',
    });
  });

  it("relays the target's error in-band with the client's id", async () => {
    const target = fakeTarget('modern', {
      handle: async () => ({ jsonrpc: '2.0', id: 0, error: { code: -32602, message: 'no such argument' } }),
    });
    const { deps } = modernDeps([target]);
    const res = await requestModern(deps, 'completion/complete', {
      ref: { type: 'ref/prompt', name: 'modern___greet' },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: 'req-1',
      error: { code: -32602, message: 'no such argument' },
    });
  });
});

describe('a task request', () => {
  it("is relayed by the gateway's task id and answered as JSON naming the gateway", async () => {
    const target = fakeTarget('modern', {
      handle: async (request) => ({
        jsonrpc: '2.0',
        id: 0,
        result: { taskId: request.params.taskId, status: 'completed' },
      }),
    });
    const { deps } = modernDeps([target]);
    const taskId = deps.taskIds.seal({ target: 'modern', taskId: 't-1', principal: 'alice' }, {});
    const capabilities = { extensions: { [TASKS_EXTENSION]: {} } } as ModernClientCapabilities;
    const body = await (await requestModern(deps, 'tasks/get', { taskId }, { capabilities })).json();
    expect(body.result).toEqual({ taskId, status: 'completed', resultType: 'complete', _meta: serverMeta });
  });
});

describe('a listen', () => {
  it('refuses a malformed filter with -32602 before any stream', async () => {
    const { deps } = modernDeps([fakeTarget('modern')]);
    const res = await requestModern(deps, 'subscriptions/listen', {});
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toMatchObject({ error: { code: -32602 } });
  });

  it('refuses more URIs than maxResourceSubscriptionsPerListen, naming the field and the setting', async () => {
    const { deps } = modernDeps([fakeTarget('modern')], { config: { maxResourceSubscriptionsPerListen: 1 } });
    const body = await (
      await requestModern(deps, 'subscriptions/listen', {
        notifications: { resourceSubscriptions: ['a://1', 'a://2'] },
      })
    ).json();
    expect(body.error).toMatchObject({
      code: -32602,
      data: { field: 'notifications.resourceSubscriptions', limit: 1 },
    });
  });

  it('refuses one listen more than maxListensPerPrincipal with 429 and a Retry-After, and takes one once a place is back', async () => {
    const { deps } = modernDeps([fakeTarget('modern', { capabilities: { tools: {} } })], {
      config: { maxListensPerPrincipal: 1 },
    });
    const release = deps.listens.take('alice');
    const refused = await requestModern(deps, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await refused.json()).toMatchObject({ error: { data: { type: 'TooManyListens' } } });
    release();
    const listening = await requestModern(deps, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
    expect(listening.headers.get('content-type')).toBe('text/event-stream');
    // Nothing can be acknowledged here: the stream ends at once and gives its place back.
    for await (const _event of sseEvents(listening));
    expect(() => deps.listens.take('alice')).not.toThrow();
  });
});

describe('a relayed call bridged to a 2025 target that asks for input', () => {
  beforeEach(() => jest.useFakeTimers(FAKE_TIMERS));
  afterEach(() => jest.useRealTimers());

  /** A 2025 target that asks once during the call and answers with what it was told. */
  function askingTarget() {
    let answered!: (message: JSONRPCMessage) => void;
    const answer = new Promise<JSONRPCMessage>((resolve) => (answered = resolve));
    return fakeTarget('legacy', {
      era: 'legacy',
      deliver: async (message) => answered(message),
      handle: async (_request, options) => {
        options.onServerRequest?.({
          jsonrpc: '2.0',
          id: 1,
          method: 'elicitation/create',
          params: { message: 'ok?', requestedSchema: { type: 'object' } },
        });
        const got = await Promise.race([answer, untilAborted(options.signal)]);
        return { jsonrpc: '2.0', id: 0, result: { content: [{ type: 'text', text: JSON.stringify(got) }] } };
      },
    });
  }

  it('sends round 1 on a stream that stays open after the client hangs up; the retry gets the result and the stream ends', async () => {
    const target = askingTarget();
    const { deps } = modernDeps([target]);
    const capabilities = { elicitation: { form: {} } };
    const client = new AbortController();
    const res = await settledOnFakeTimers(
      requestModern(deps, 'tools/call', { name: 'legacy___ask' }, { capabilities, signal: client.signal }),
    );
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const events = sseEvents(res);
    const next = async () => {
      for (;;) {
        const { value, done } = await settledOnFakeTimers(events.next());
        if (done) return undefined;
        if (value.message) return value.message;
      }
    };
    const round = await next();
    expect(round).toMatchObject({ id: 'req-1', result: { resultType: 'input_required', _meta: serverMeta } });
    // The client reads the round and hangs up: the target's call is held regardless.
    client.abort();
    expect(target.calls[0]?.options.signal.aborted).toBe(false);
    const [gatewayId] = Object.keys(round?.result.inputRequests);
    const retry = await settledOnFakeTimers(
      requestModern(
        deps,
        'tools/call',
        {
          name: 'legacy___ask',
          requestState: round?.result.requestState,
          inputResponses: { [gatewayId!]: { action: 'accept', content: { ok: true } } },
        },
        { capabilities, id: 'req-2' },
      ),
    );
    const final = await settledOnFakeTimers(retry.json());
    expect(final).toMatchObject({ id: 'req-2', result: { resultType: 'complete', _meta: serverMeta } });
    expect(target.delivered).toEqual([{ jsonrpc: '2.0', id: 1, result: { action: 'accept', content: { ok: true } } }]);
    // The held stream ends without another message: its round was the response.
    expect(await next()).toBeUndefined();
  });
});
