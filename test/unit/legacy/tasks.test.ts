import { ANONYMOUS_IDENTITY } from '../../../lambda/auth/identity';
import { sessionCaller } from '../../../lambda/legacy/session-caller';
import {
  listSessionTasks,
  RELATED_TASK_META,
  SessionTasks,
  tasksOfTargets,
  withTaskIds,
} from '../../../lambda/legacy/tasks';
import { GatewayError } from '../../../lambda/protocol/errors';
import type { JSONRPCResponse } from '../../../lambda/protocol/jsonrpc';
import type { JSONRPCNotification, JSONRPCRequest } from '../../../lambda/protocol/types';
import { clockAt } from '../../support/fake-clock';
import { legacyDeps, ScriptedLink, storedSession, targetSession, taskIdSealer } from '../../support/legacy-deps';

/**
 * 2025-11-25's experimental tasks through a session (legacy/tasks.ts): a target's task reaches the
 * client under the gateway's id (the target's own, sealed with target and principal), every place a
 * target names its task is rewritten, and every task request finds its target by the id alone.
 */

const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
let now = NOW;
const sealer = taskIdSealer(clockAt(() => now));
const uniqueTask = () => `task-${Math.random().toString(36).slice(2)}`;

beforeEach(() => {
  now = NOW;
});

/** The result of a response the test expects to have succeeded. */
function resultOf<T>(response: JSONRPCResponse): T {
  if (!('result' in response)) throw new Error(`an error response: ${JSON.stringify(response)}`);
  return response.result as T;
}

function refusalOf(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('not refused');
}

describe("the gateway's id of a target's task", () => {
  it("opens to the target and the target's own id, for the session's principal only", () => {
    const taskId = uniqueTask();
    const id = new SessionTasks(sealer, 'alice').gatewayId('jobs', { taskId, ttl: 60_000 });
    expect(id).not.toContain(taskId);
    expect(new SessionTasks(sealer, 'alice').open('tasks/result', id)).toEqual({
      target: 'jobs',
      taskId,
      gatewayId: id,
    });
    const other = refusalOf(() => new SessionTasks(sealer, 'bob').open('tasks/result', id));
    expect(other.message).toBe(`Task not found: ${id}`);
    expect(other.data).toEqual({ reason: 'unknown' });
  });

  it('stays the same for the same task on this instance, and is the one the request named for the task it names', () => {
    const taskId = uniqueTask();
    const tasks = new SessionTasks(sealer, 'alice');
    const first = tasks.gatewayId('jobs', { taskId });
    now += 5000; // a task without createdAt seals differently later: the remembered id is handed out
    expect(tasks.gatewayId('jobs', { taskId })).toBe(first);
    const named = new SessionTasks(sealer, 'alice', { target: 'jobs', taskId, gatewayId: 'the-id-the-client-sent' });
    expect(named.gatewayId('jobs', { taskId })).toBe('the-id-the-client-sent');
    expect(named.gatewayId('other-target', { taskId })).not.toBe('the-id-the-client-sent');
  });

  it('is refused as a v1 server refuses an unknown task: -32602, tasks/get with its own words', () => {
    const tasks = new SessionTasks(sealer, 'alice');
    expect(refusalOf(() => tasks.open('tasks/get', 'made-up')).message).toBe('Failed to retrieve task: Task not found');
    expect(refusalOf(() => tasks.open('tasks/cancel', 'made-up')).message).toBe('Task not found: made-up');
    const missing = refusalOf(() => tasks.open('tasks/get', 42));
    expect(missing.kind).toBe('InvalidParams');
    expect(missing.message).toContain('needs params.taskId');
  });

  it("is refused past the task's ttl, saying so", () => {
    const id = new SessionTasks(sealer, 'alice').gatewayId('jobs', {
      taskId: uniqueTask(),
      ttl: 10_000,
      createdAt: new Date(NOW).toISOString(),
    });
    now = NOW + 10_000;
    const expired = refusalOf(() => new SessionTasks(sealer, 'alice').open('tasks/result', id));
    expect(expired.message).toContain('expired');
    expect(expired.data).toEqual({ reason: 'expired' });
  });

  it("never opens a Tasks extension's id (2026-07-28) on this path", () => {
    const modernId = sealer.seal({ target: 'jobs', taskId: 't-1', principal: 'alice' }, {});
    expect(refusalOf(() => new SessionTasks(sealer, 'alice').open('tasks/get', modernId)).data).toEqual({
      reason: 'unknown',
    });
  });
});

describe("where a target names its task, the client sees the gateway's id", () => {
  const tasks = () => new SessionTasks(sealer, 'alice');
  const opened = (id: unknown) => new SessionTasks(sealer, 'alice').open('tasks/get', id).taskId;

  it('a task status notification: its taskId and its related task', () => {
    const taskId = uniqueTask();
    const status: JSONRPCNotification = {
      jsonrpc: '2.0',
      method: 'notifications/tasks/status',
      params: { taskId, status: 'working', _meta: { [RELATED_TASK_META]: { taskId } } },
    };
    const seen = tasks().notification('jobs', status).params as Record<string, unknown>;
    expect(opened(seen.taskId)).toBe(taskId);
    expect((seen._meta as Record<string, { taskId: string }>)[RELATED_TASK_META]!.taskId).toBe(seen.taskId);
    expect(seen.status).toBe('working');
  });

  it('a notification naming no task is passed as it came (the same object)', () => {
    const plain: JSONRPCNotification = { jsonrpc: '2.0', method: 'notifications/message', params: { data: 'x' } };
    expect(tasks().notification('jobs', plain)).toBe(plain);
    const bare: JSONRPCNotification = { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };
    expect(tasks().notification('jobs', bare)).toBe(bare);
  });

  it("a task's question to the client: its related task", () => {
    const taskId = uniqueTask();
    const question: JSONRPCRequest = {
      jsonrpc: '2.0',
      id: 1,
      method: 'elicitation/create',
      params: { message: 'ok?', _meta: { [RELATED_TASK_META]: { taskId } } },
    };
    const seen = tasks().serverRequest('jobs', question).params as { _meta: Record<string, { taskId: string }> };
    expect(opened(seen._meta[RELATED_TASK_META]!.taskId)).toBe(taskId);
    const plain: JSONRPCRequest = { jsonrpc: '2.0', id: 2, method: 'roots/list', params: {} };
    expect(tasks().serverRequest('jobs', plain)).toBe(plain);
  });

  it("a task-augmented tools/call's CreateTaskResult: the task as the client will name it", () => {
    const taskId = uniqueTask();
    const response: JSONRPCResponse = {
      jsonrpc: '2.0',
      id: 1,
      result: { task: { taskId, status: 'working', ttl: 60_000 } },
    };
    const seen = tasks().response('jobs', { method: 'tools/call', params: { name: 'x', task: {} } }, response);
    const { task } = resultOf<{ task: { taskId: string; status: string } }>(seen);
    expect(opened(task.taskId)).toBe(taskId);
    expect(task.status).toBe('working');
    // A tools/call that asked for no task: a `task` in its result is the tool's own business.
    expect(tasks().response('jobs', { method: 'tools/call', params: { name: 'x' } }, response)).toBe(response);
  });

  it('tasks/get and tasks/cancel results: their taskId is the one the client sent', () => {
    const taskId = uniqueTask();
    const named = { target: 'jobs', taskId, gatewayId: 'client-knows-this' };
    const response: JSONRPCResponse = { jsonrpc: '2.0', id: 1, result: { taskId, status: 'completed' } };
    for (const method of ['tasks/get', 'tasks/cancel']) {
      const seen = new SessionTasks(sealer, 'alice', named).response('jobs', { method, params: { taskId } }, response);
      expect(resultOf<{ taskId: string }>(seen).taskId).toBe('client-knows-this');
    }
  });

  it("an error naming the target's id names the client's instead; any other error is passed as it came", () => {
    const named = { target: 'jobs', taskId: 'target-7', gatewayId: 'client-7' };
    const error: JSONRPCResponse = {
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32602, message: 'Task not found: target-7' },
    };
    const seen = new SessionTasks(sealer, 'alice', named).response('jobs', { method: 'tasks/get', params: {} }, error);
    expect((seen as { error: { message: string } }).error.message).toBe('Task not found: client-7');
    const other: JSONRPCResponse = { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'boom' } };
    expect(new SessionTasks(sealer, 'alice', named).response('jobs', { method: 'tasks/get', params: {} }, other)).toBe(
      other,
    );
  });
});

describe("a session's deps with task ids", () => {
  it('are the deps themselves for a client that declared no tasks (nothing wrapped on the hot path)', () => {
    const { deps } = legacyDeps();
    expect(withTaskIds(deps, { principal: 'alice', clientCapabilities: {} })).toBe(deps);
  });

  it("open target links whose responses and notifications carry the gateway's ids", async () => {
    const taskId = uniqueTask();
    const t = legacyDeps();
    t.fake.links.get('demo')!.script = async (request, options) => {
      options.onNotification?.({
        jsonrpc: '2.0',
        method: 'notifications/tasks/status',
        params: { taskId, status: 'working' },
      });
      return { jsonrpc: '2.0', id: request.id ?? 0, result: { task: { taskId, status: 'working' } } };
    };
    const deps = withTaskIds(t.deps, { principal: 'alice', clientCapabilities: { tasks: {} } });
    expect(deps).not.toBe(t.deps);
    const link = await deps.targets.open('demo', undefined as never);
    expect(link.target).toBe('demo');
    expect(link.era).toBe('legacy');
    const notified: JSONRPCNotification[] = [];
    const response = await link.call(
      { id: 1, method: 'tools/call', params: { name: 'slow', task: { ttl: 60_000 } } },
      { signal: new AbortController().signal, onNotification: (n) => notified.push(n) },
    );
    const created = resultOf<{ task: { taskId: string } }>(response).task.taskId;
    expect(new SessionTasks(deps.taskIds, 'alice').open('tasks/get', created).taskId).toBe(taskId);
    expect((notified[0]!.params as { taskId: string }).taskId).toBe(created);
    // Everything else of the targets is the instance's own.
    expect(deps.targets.names).toEqual(['demo']);
  });

  it("relay what the session's GET stream hears with the gateway's ids", async () => {
    const taskId = uniqueTask();
    const t = legacyDeps();
    const deps = withTaskIds(t.deps, { principal: 'alice', clientCapabilities: { tasks: {} } });
    const heard: JSONRPCNotification[] = [];
    await deps.targets.streams.listen(
      { name: 'demo' } as never,
      { targetSessionId: 's', protocolVersion: '2025-11-25' },
      { onNotification: (n) => heard.push(n), onServerRequest: () => undefined, onGone: () => undefined },
    );
    t.fake.listened[0]!.listener.onNotification({
      jsonrpc: '2.0',
      method: 'notifications/tasks/status',
      params: { taskId, status: 'completed' },
    });
    const seen = (heard[0]!.params as { taskId: string }).taskId;
    expect(seen).not.toBe(taskId);
    expect(new SessionTasks(deps.taskIds, 'alice').open('tasks/get', seen).taskId).toBe(taskId);
  });
});

describe('the tasks capability declared at initialize', () => {
  it("merges what the session's legacy targets declared; a 2026-07-28 target's tasks are not bridged", async () => {
    const t = legacyDeps({
      targets: [
        { name: 'a', url: 'https://a.invalid/mcp' },
        { name: 'b', url: 'https://b.invalid/mcp' },
        { name: 'm', url: 'https://m.invalid/mcp' },
      ],
    });
    t.fake.links.get('a')!.capabilities = { tasks: { requests: { tools: { call: {} } } } };
    t.fake.links.get('b')!.capabilities = { tasks: { list: {}, cancel: {} } };
    t.fake.links.set(
      'm',
      new ScriptedLink('m', async () => ({ jsonrpc: '2.0', id: 0, result: {} }), 'modern', { tasks: { list: {} } }),
    );
    const declared = await tasksOfTargets(t.deps, undefined as never, new AbortController().signal);
    expect(declared).toEqual({ requests: { tools: { call: {} } }, list: {}, cancel: {} });
  });

  it('leaves out a target that fails, and declares nothing when no target has tasks', async () => {
    const t = legacyDeps({
      targets: [
        { name: 'a', url: 'https://a.invalid/mcp' },
        { name: 'b', url: 'https://b.invalid/mcp' },
      ],
    });
    t.fake.links.get('a')!.serverCapabilities = async () => {
      throw new Error('unreachable');
    };
    expect(await tasksOfTargets(t.deps, undefined as never, new AbortController().signal)).toBeUndefined();
    expect(t.logger.messages('warn')).toEqual(['target left out of the tasks declaration']);
  });
});

describe('tasks/list of a session', () => {
  async function listing(setUp: (t: ReturnType<typeof legacyDeps>) => void, params: Record<string, unknown> = {}) {
    const t = legacyDeps({
      targets: [
        { name: 'a', url: 'https://a.invalid/mcp' },
        { name: 'b', url: 'https://b.invalid/mcp' },
        { name: 'c', url: 'https://c.invalid/mcp' },
      ],
    });
    setUp(t);
    const loaded = await storedSession(t.store, {}, [
      targetSession('a', { serverCapabilities: { tasks: { list: {} } } }),
      targetSession('b', { serverCapabilities: { tools: {} } }), // declared no tasks/list: not asked
      targetSession('c'), // recorded before capabilities were kept: asked
    ]);
    const caller = sessionCaller(t.deps, loaded, ANONYMOUS_IDENTITY, true);
    const result = await listSessionTasks(t.deps, loaded, caller, params, new AbortController().signal);
    return { ...t, result: result as { tasks: Array<{ taskId: string; status: string }> } };
  }

  it("lists every listing target's tasks, all pages, with the gateway's ids, in one page", async () => {
    const { result, fake } = await listing((t) => {
      t.fake.links.get('a')!.script = async (request) => ({
        jsonrpc: '2.0',
        id: 0,
        result:
          request.params.cursor === 'p2'
            ? { tasks: [{ taskId: 'a-2', status: 'completed' }] }
            : { tasks: [{ taskId: 'a-1', status: 'working' }, { no: 'id' }], nextCursor: 'p2' },
      });
      t.fake.links.get('c')!.script = async () => ({
        jsonrpc: '2.0',
        id: 0,
        result: { tasks: [{ taskId: 'c-1', status: 'working' }] },
      });
    });
    const opened = result.tasks.map((task) => {
      const named = new SessionTasks(sealer, 'alice').open('tasks/get', task.taskId);
      return [named.target, named.taskId, task.status];
    });
    expect(opened).toEqual([
      ['a', 'a-1', 'working'],
      ['a', 'a-2', 'completed'],
      ['c', 'c-1', 'working'],
    ]);
    expect(fake.links.get('b')!.calls).toEqual([]);
    expect(fake.links.get('a')!.calls.map((c) => c.request.params)).toEqual([{}, { cursor: 'p2' }]);
  });

  it('leaves out a target that fails or answers an error, logged', async () => {
    const { result, logger } = await listing((t) => {
      t.fake.links.get('a')!.script = async () => ({ jsonrpc: '2.0', id: 0, error: { code: -32601, message: 'no' } });
      t.fake.links.get('c')!.script = async () => {
        throw new Error('unreachable');
      };
    });
    expect(result.tasks).toEqual([]);
    expect(logger.messages('warn')).toEqual(['target left out of tasks/list', 'target left out of tasks/list']);
  });

  it('refuses a cursor (the gateway never hands one out)', async () => {
    await expect(listing(() => undefined, { cursor: 'x' })).rejects.toThrow('unknown cursor');
  });
});
