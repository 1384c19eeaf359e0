import { ANONYMOUS_IDENTITY } from '../../../lambda/auth/identity';
import { SESSION_NOTIFICATIONS, SESSION_ROUTES, type SessionExchange } from '../../../lambda/legacy/routes';
import { handleSessionMessage } from '../../../lambda/legacy/session-router';
import { SessionTasks } from '../../../lambda/legacy/tasks';
import type { ClientMessage } from '../../../lambda/protocol/jsonrpc';
import { REQUEST_METHODS } from '../../../lambda/protocol/methods';
import type { SessionRecord, TargetSessionRecord } from '../../../lambda/state/store';
import { exchange, legacyDeps, storedSession, targetSession } from '../../support/legacy-deps';

/**
 * The legacy era's routing table (legacy/routes.ts), through the session router with scripted targets:
 * what each method does — lists merged by the catalog, named calls relayed to their target with the
 * target's own name, task requests routed by the gateway's task id, the log level kept and relayed —
 * and the notifications a session acts on.
 */

async function setUp(
  config: Parameters<typeof legacyDeps>[0] = {},
  session: Partial<SessionRecord> = {},
  targets: TargetSessionRecord[] = [],
) {
  const t = legacyDeps(config);
  const loaded = await storedSession(t.store, session, targets);
  const ctx: SessionExchange = {
    deps: t.deps,
    identity: ANONYMOUS_IDENTITY,
    loaded,
    accept: { json: true, sse: true },
    exchange: exchange(),
    headers: { 'mcp-session-id': loaded.session.id },
  };
  const send = async (method: string, params?: Record<string, unknown>) => {
    const message: ClientMessage = {
      kind: 'request',
      message: { jsonrpc: '2.0', id: 3, method, ...(params ? { params } : {}) },
    };
    const response = await handleSessionMessage(ctx, message as Exclude<ClientMessage, { kind: 'response' }>);
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  const notify = async (method: string, params: Record<string, unknown>) =>
    handleSessionMessage(ctx, { kind: 'notification', message: { jsonrpc: '2.0', method, params } });
  return { ...t, loaded, ctx, send, notify };
}

describe('the routing table of a 2025 session', () => {
  it('serves the 2025 methods with their facts: what names the target, and which are safe to resend', () => {
    const facts = (method: string) => {
      const route = SESSION_ROUTES.get(method);
      return route && [route.nameSource, route.safeToResend];
    };
    expect(facts('tools/call')).toEqual(['name', false]);
    expect(facts('resources/read')).toEqual(['uri', false]);
    expect(facts('completion/complete')).toEqual(['ref', false]);
    expect(facts('tasks/get')).toEqual(['taskId', true]);
    expect(facts('tools/list')).toEqual([undefined, true]);
    expect(facts('ping')).toEqual([undefined, true]);
    // 2026-07-28's methods are not this era's: unknown here (-32601).
    expect(SESSION_ROUTES.has('server/discover')).toBe(false);
    expect(SESSION_ROUTES.has('subscriptions/listen')).toBe(false);
    for (const method of SESSION_ROUTES.keys()) expect(REQUEST_METHODS).toHaveProperty(method);
  });

  it('acts on cancellations and root changes; any other notification is accepted and dropped', () => {
    expect([...SESSION_NOTIFICATIONS.keys()]).toEqual(['notifications/cancelled', 'notifications/roots/list_changed']);
  });
});

describe('lists', () => {
  it("are every target's listing merged by the catalog, in one page", async () => {
    const { send, aggregated } = await setUp();
    expect((await send('tools/list')).body).toEqual({
      jsonrpc: '2.0',
      id: 3,
      result: { tools: [{ name: 'tools-item' }] },
    });
    expect((await send('resources/templates/list')).body.result).toEqual({
      resourceTemplates: [{ name: 'resourceTemplates-item' }],
    });
    expect(aggregated).toEqual(['tools', 'resourceTemplates']);
  });

  it('refuse a cursor (the gateway never hands one out), without asking the catalog', async () => {
    const { send, aggregated } = await setUp();
    expect((await send('prompts/list', { cursor: 'abc' })).body).toMatchObject({ error: { code: -32602 } });
    expect(aggregated).toEqual([]);
  });
});

describe('named calls', () => {
  it("tools/call reaches the tool's target under the target's own name, and answers with the client's id", async () => {
    const { send, fake } = await setUp();
    const { body } = await send('tools/call', { name: 'demo___echo', arguments: { text: 'hi' } });
    expect(body).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
    const [call] = fake.links.get('demo')!.calls;
    expect(call!.request).toMatchObject({
      id: 'c.n.3',
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'hi' } },
    });
  });

  it("prompts/get reaches the prompt's target under its own name; resources/read the URI's target with the URI as sent", async () => {
    const { send, fake } = await setUp();
    await send('prompts/get', { name: 'demo___greet', arguments: { who: 'x' } });
    await send('resources/read', { uri: 'demo://docs/readme' });
    expect(fake.links.get('demo')!.calls.map((c) => [c.request.method, c.request.params])).toEqual([
      ['prompts/get', { name: 'greet', arguments: { who: 'x' } }],
      ['resources/read', { uri: 'demo://docs/readme' }],
    ]);
  });

  it('a tool of confirmTools is not called for a session that cannot confirm: the client is told why', async () => {
    const { send, fake } = await setUp({ confirmTools: ['demo___deploy'] }, { clientCapabilities: {} });
    const { body } = await send('tools/call', { name: 'demo___deploy', arguments: {} });
    expect(body.result).toMatchObject({
      isError: true,
      content: [{ text: expect.stringContaining('demo___deploy requires a confirmation') }],
    });
    expect(fake.links.get('demo')!.calls).toEqual([]);
  });

  it("completion/complete of a prompt's argument names the prompt by the target's own name", async () => {
    const { send, fake } = await setUp();
    await send('completion/complete', {
      ref: { type: 'ref/prompt', name: 'demo___greet' },
      argument: { name: 'a', value: '' },
    });
    expect(fake.links.get('demo')!.calls[0]!.request.params).toMatchObject({
      ref: { type: 'ref/prompt', name: 'greet' },
    });
  });

  it('completion/complete with a ref of no known type is -32602, nothing relayed', async () => {
    const { send, fake } = await setUp();
    expect((await send('completion/complete', { ref: { type: 'ref/tool' } })).body).toMatchObject({
      error: { code: -32602 },
    });
    expect(fake.links.get('demo')!.calls).toEqual([]);
  });

  it('resources/subscribe reaches the resource target when the session has a GET stream; without one it does not exist', async () => {
    const withStream = await setUp({ clientStreamHoldSeconds: 5 });
    await withStream.send('resources/subscribe', { uri: 'demo://a' });
    expect(withStream.fake.links.get('demo')!.calls.map((c) => c.request.method)).toEqual(['resources/subscribe']);
    const without = await setUp({ clientStreamHoldSeconds: 0 });
    expect((await without.send('resources/subscribe', { uri: 'demo://a' })).body).toMatchObject({
      error: { code: -32601 },
    });
    expect(without.fake.links.get('demo')!.calls).toEqual([]);
  });
});

describe('task requests', () => {
  it("reach the task's target with the target's own id; the answer names the task as the client does", async () => {
    const { send, fake, deps } = await setUp({}, { clientCapabilities: { tasks: {} } });
    const gatewayId = new SessionTasks(deps.taskIds, 'alice').gatewayId('demo', { taskId: 'target-task-1' });
    fake.links.get('demo')!.script = async (request) => ({
      jsonrpc: '2.0',
      id: request.id ?? 0,
      result: { taskId: 'target-task-1', status: 'completed' },
    });
    const { body } = await send('tasks/get', { taskId: gatewayId });
    expect(fake.links.get('demo')!.calls[0]!.request.params).toEqual({ taskId: 'target-task-1' });
    expect(body.result).toEqual({ taskId: gatewayId, status: 'completed' });
  });

  it("of a session that did not declare tasks are refused as an unknown task, even with a valid id of its principal: the target's own id never reaches it", async () => {
    const { send, fake, deps } = await setUp();
    const gatewayId = new SessionTasks(deps.taskIds, 'alice').gatewayId('demo', { taskId: 'target-task-1' });
    fake.links.get('demo')!.script = async (request) => ({
      jsonrpc: '2.0',
      id: request.id ?? 0,
      result: { taskId: 'target-task-1', status: 'completed' },
    });
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      const { body } = await send(method, { taskId: gatewayId });
      expect(body.error).toMatchObject({ code: -32602, data: { reason: 'unknown' } });
      expect(body.error.message).toContain('did not declare tasks');
      expect(JSON.stringify(body)).not.toContain('target-task-1');
    }
    expect(fake.opened).toEqual([]);
  });

  it('an id made up or altered is refused as an unknown task before any target is called', async () => {
    const { send, fake } = await setUp();
    expect((await send('tasks/result', { taskId: 'made-up' })).body).toMatchObject({
      error: { code: -32602, message: 'Task not found: made-up' },
    });
    expect(fake.opened).toEqual([]);
  });

  it('the id of a target no longer configured is an unknown task', async () => {
    const { send, fake, deps } = await setUp();
    const gatewayId = new SessionTasks(deps.taskIds, 'alice').gatewayId('removed', { taskId: 't' });
    expect((await send('tasks/cancel', { taskId: gatewayId })).body).toMatchObject({
      error: { code: -32602, message: `Task not found: ${gatewayId}` },
    });
    expect(fake.opened).toEqual([]);
  });
});

describe('logging/setLevel', () => {
  it('keeps the level in the session and relays it to every target; one that fails is logged, the answer is still {}', async () => {
    const { send, fake, store, loaded, logger } = await setUp({
      targets: [
        { name: 'demo', url: 'https://demo.invalid/mcp' },
        { name: 'broken', url: 'https://broken.invalid/mcp' },
      ],
    });
    fake.links.get('broken')!.script = async () => {
      throw new Error('unreachable');
    };
    expect((await send('logging/setLevel', { level: 'error' })).body).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
    expect((await store.loadSession(loaded.session.id))?.session.logLevel).toBe('error');
    expect(loaded.session.logLevel).toBe('error');
    expect(fake.links.get('demo')!.calls.map((c) => c.request)).toEqual([
      { method: 'logging/setLevel', params: { level: 'error' } },
    ]);
    expect(logger.messages('warn')).toEqual(['logging/setLevel not relayed']);
  });

  it('refuses a level that is not one, storing nothing', async () => {
    const { send, store } = await setUp();
    const levels = jest.spyOn(store, 'setLogLevel');
    expect((await send('logging/setLevel', { level: 'loud' })).body).toMatchObject({ error: { code: -32602 } });
    expect(levels).not.toHaveBeenCalled();
  });
});

describe('notifications of the session', () => {
  it('a cancellation of a call held here stops it at once, with the reason the client gave', async () => {
    const { notify, deps, loaded, store } = await setUp();
    const cancelled: Array<string | undefined> = [];
    deps.activeCalls.register(loaded.session.id, 'c.s.call-1', {
      cancelByClient: (reason) => cancelled.push(reason),
      shutdown: async () => undefined,
    });
    const marks = jest.spyOn(store, 'markCancelled');
    expect((await notify('notifications/cancelled', { requestId: 'call-1', reason: 'changed my mind' })).status).toBe(
      202,
    );
    expect(cancelled).toEqual(['changed my mind']);
    expect(marks).not.toHaveBeenCalled();
  });

  it("a cancellation of a call held elsewhere: every target session told the target's id, and a marker for the holder", async () => {
    const { notify, fake, store, loaded } = await setUp({}, {}, [targetSession('demo')]);
    await notify('notifications/cancelled', { requestId: 9, reason: 'stop' });
    expect(fake.delivered).toEqual([
      {
        target: 'demo',
        session: { targetSessionId: 'demo-session', protocolVersion: '2025-11-25' },
        message: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c.n.9', reason: 'stop' } },
      },
    ]);
    expect(await store.isCancelled(loaded.session.id, 'c.n.9')).toBe('client-cancelled');
  });

  it('a cancellation naming no request does nothing', async () => {
    const { notify, fake, store } = await setUp({}, {}, [targetSession('demo')]);
    const marks = jest.spyOn(store, 'markCancelled');
    await notify('notifications/cancelled', {});
    expect(fake.delivered).toEqual([]);
    expect(marks).not.toHaveBeenCalled();
  });

  it('roots changed: every target session is told; one that cannot be reached is logged, the others still are', async () => {
    const { notify, fake, logger } = await setUp({}, {}, [targetSession('demo'), targetSession('other')]);
    const deliver = fake.targets.deliver.bind(fake.targets);
    fake.targets.deliver = async (target, session, message) => {
      if (target === 'other') throw new Error('unreachable');
      return deliver(target, session, message);
    };
    await notify('notifications/roots/list_changed', {});
    expect(fake.delivered.map((d) => [d.target, d.message])).toEqual([
      ['demo', { jsonrpc: '2.0', method: 'notifications/roots/list_changed', params: {} }],
    ]);
    expect(logger.messages('warn')).toEqual(['notification to target failed']);
  });
});
