import { SESSION_ROUTES } from '../../lambda/legacy/routes';
import { MODERN_ROUTES } from '../../lambda/modern/routes';
import { nameSourceOf } from '../../lambda/protocol/meta';
import {
  LEGACY_TASK_METHODS,
  MODERN_METHOD_LIST,
  REQUEST_METHODS,
  type RequestMethod,
  SAFE_TO_RESEND_METHODS,
  TASK_METHODS,
} from '../../lambda/protocol/methods';
import { meta, modernHeaders } from '../modern/helpers';
import { inProcessGateway } from '../support/in-process';
import { readMessage } from '../support/mcp-http';

/**
 * One routing table per era (protocol/methods.ts gives the shape and each method's facts; each era
 * path its handlers): which methods each era routes, their name source and whether they are safe to
 * resend; then, through the gateway core, that every routed method reaches its handler and that what
 * no table routes keeps its exact error.
 */

const LISTS = ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list'];

describe('the tables', () => {
  it("2025 sessions route every request method but 2026-07-28 discovery, listen and the Tasks extension's", () => {
    expect([...SESSION_ROUTES.keys()].sort()).toEqual(
      Object.keys(REQUEST_METHODS)
        .filter(
          (method) =>
            method !== 'server/discover' &&
            method !== 'subscriptions/listen' &&
            (!TASK_METHODS.has(method) || LEGACY_TASK_METHODS.has(method)),
        )
        .sort(),
    );
  });

  it('2026-07-28 routes exactly the methods of that protocol version (the ones validation lets through)', () => {
    expect([...MODERN_ROUTES.keys()].sort()).toEqual([...MODERN_METHOD_LIST].sort());
    for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe']) {
      expect(MODERN_ROUTES.has(method)).toBe(false);
    }
  });

  it('every row carries its method’s facts, the same in both eras', () => {
    for (const table of [SESSION_ROUTES, MODERN_ROUTES]) {
      for (const [method, route] of table) {
        const { nameSource, safeToResend } = REQUEST_METHODS[method as RequestMethod] as {
          nameSource?: string;
          safeToResend: boolean;
        };
        expect({ method: route.method, nameSource: route.nameSource, safeToResend: route.safeToResend }).toEqual({
          method,
          nameSource,
          safeToResend,
        });
        expect(typeof route.handler).toBe('function');
      }
    }
  });

  it('safe to resend: exactly the requests without side effects (the handshake, ping, discovery, the lists, polling a task)', () => {
    expect([...SAFE_TO_RESEND_METHODS].sort()).toEqual(
      ['initialize', 'ping', 'server/discover', 'tasks/get', 'tasks/list', ...LISTS].sort(),
    );
    // What may have run at the target is never sent twice.
    for (const method of [
      'tools/call',
      'prompts/get',
      'resources/read',
      'completion/complete',
      'resources/subscribe',
      'resources/unsubscribe',
      'logging/setLevel',
    ]) {
      expect(SESSION_ROUTES.get(method)?.safeToResend).toBe(false);
    }
  });

  it('name source: what a call names, and what 2026-07-28 mirrors in Mcp-Name (name and uri only)', () => {
    const sources = Object.fromEntries([...SESSION_ROUTES].map(([method, route]) => [method, route.nameSource]));
    expect(sources).toMatchObject({
      'tools/call': 'name',
      'prompts/get': 'name',
      'resources/read': 'uri',
      'resources/subscribe': 'uri',
      'resources/unsubscribe': 'uri',
      'completion/complete': 'ref',
    });
    for (const method of ['ping', 'initialize', 'logging/setLevel', ...LISTS]) expect(sources[method]).toBeUndefined();
    expect(['tools/call', 'prompts/get', 'resources/read'].map(nameSourceOf)).toEqual(['name', 'name', 'uri']);
    // A completion's ref is not mirrored; subscriptions are not 2026-07-28 methods.
    expect(['completion/complete', 'resources/subscribe', 'tools/list', 'toString'].map(nameSourceOf)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('a method name that is a property of every object is no route', () => {
    for (const method of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      expect(SESSION_ROUTES.get(method)).toBeUndefined();
      expect(MODERN_ROUTES.get(method)).toBeUndefined();
    }
  });
});

describe('through the core', () => {
  // Nothing listens on port 9: a target is refused at once, which every handler answers without -32601.
  const gateway = inProcessGateway({ targets: [{ name: 'never', url: 'http://127.0.0.1:9/mcp' }] });

  const SESSION_PARAMS: Record<string, Record<string, unknown>> = {
    'tools/call': { name: 'never___echo', arguments: {} },
    'prompts/get': { name: 'never___greet' },
    'resources/read': { uri: 'never://x' },
    'resources/subscribe': { uri: 'never://x' },
    'resources/unsubscribe': { uri: 'never://x' },
    'completion/complete': { ref: { type: 'ref/other' }, argument: { name: 'a', value: 'b' } },
    'logging/setLevel': { level: 'info' },
  };

  it.each([...SESSION_ROUTES.keys()])('a 2025 session’s %s reaches its handler', async (method) => {
    const { headers } = await gateway.initSession();
    const message = await gateway.call(headers, 1, method, SESSION_PARAMS[method]);
    expect(message.error?.code).not.toBe(-32601);
    expect(message.id).toBe(1);
  });

  it('a 2025 session’s unknown method is -32601 in-band (HTTP 200), a notification 202, an unknown answer 400 -32600', async () => {
    const { headers } = await gateway.initSession();
    const unknown = await gateway.post(headers, { jsonrpc: '2.0', id: 2, method: 'server/discover' });
    expect(unknown.status).toBe(200);
    expect((await readMessage(unknown)).error).toMatchObject({
      code: -32601,
      message: 'Method not found: server/discover',
    });
    const proto = await gateway.post(headers, { jsonrpc: '2.0', id: 3, method: 'constructor' });
    expect((await readMessage(proto)).error?.code).toBe(-32601);
    const notification = await gateway.post(headers, { jsonrpc: '2.0', method: 'notifications/whatever' });
    expect(notification.status).toBe(202);
    const answer = await gateway.post(headers, { jsonrpc: '2.0', id: 'gw-nobody', result: {} });
    expect(answer.status).toBe(400);
    expect((await answer.json()).error.code).toBe(-32600);
  });

  const MODERN_PARAMS: Record<string, Record<string, unknown>> = {
    'tools/call': { name: 'never___echo', arguments: {} },
    'prompts/get': { name: 'never___greet' },
    'resources/read': { uri: 'never://x' },
    'completion/complete': { ref: { type: 'ref/other' }, argument: { name: 'a', value: 'b' } },
  };
  const nameOf = (params: Record<string, unknown> | undefined) =>
    typeof params?.name === 'string' ? params.name : typeof params?.uri === 'string' ? params.uri : undefined;

  it.each([...MODERN_ROUTES.keys()])('a 2026-07-28 %s reaches its handler', async (method) => {
    const params = MODERN_PARAMS[method];
    const res = await gateway.post(modernHeaders(method, nameOf(params)), {
      jsonrpc: '2.0',
      id: 1,
      method,
      params: { ...params, _meta: meta() },
    });
    expect(res.status).not.toBe(404);
    expect((await readMessage(res)).error?.code).not.toBe(-32601);
  });

  it('a 2026-07-28 unknown method is 404 -32601, a notification 202', async () => {
    const unknown = await gateway.post(modernHeaders('ping'), {
      jsonrpc: '2.0',
      id: 2,
      method: 'ping',
      params: { _meta: meta() },
    });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe(-32601);
    const notification = await gateway.post(modernHeaders('notifications/whatever'), {
      jsonrpc: '2.0',
      method: 'notifications/whatever',
      params: { _meta: meta() },
    });
    expect(notification.status).toBe(202);
  });
});
