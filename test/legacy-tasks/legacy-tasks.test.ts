import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  RELATED_TASK_META_KEY,
  TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { AUDIENCE, CLIENT, startIssuer, type TestIssuer } from '../auth/support';
import type { GatewayKind } from '../support/gateways';
import { eventually, initSession, type Json, post, readMessage, sseEvents } from '../support/mcp-http';
import { startTasksServer } from '../support/servers/tasks-server';
import { startV1TasksServer } from '../support/servers/v1-tasks-server';
import { callWithTasks } from '../support/tasks-client';
import { withGateway } from '../support/with-gateway';

/**
 * 2025-11-25's experimental tasks through the gateway: the official v1 client (`client.experimental.tasks`)
 * and raw HTTP, against an official v1 server with tasks (test/support/servers/v1-tasks-server.ts), on
 * two gateway instances of each kind sharing only DynamoDB and the configured keys: a task is created
 * through one and polled, answered, listed and cancelled through the other, with the gateway's task ids
 * (the target's sealed with target and principal); ids altered or of another principal are refused as a
 * v1 server refuses a task it does not know. Across eras tasks are not bridged: the calls fall back.
 */

jest.setTimeout(60_000);

const KINDS: GatewayKind[] = ['local server', 'lambda runtime'];
const STATE_KEY = 'legacy-tasks-test-state-key-0123456789abcdefghij';
const TASKS_CLIENT = { tasks: { list: {}, cancel: {} }, elicitation: { form: {} } };
const GATEWAY_TASKS = { requests: { tools: { call: {} } }, list: {}, cancel: {} };

let issuer: TestIssuer;
beforeAll(async () => {
  issuer = await startIssuer();
});
afterAll(() => issuer?.close());

describe.each(KINDS)('2025-11-25 tasks through the %s', (kind) => {
  const gw = withGateway(
    (t) => ({
      targets: [
        { name: 'jobs', url: t.jobs.url, era: 'legacy' },
        { name: 'modern', url: t.modern.url, era: 'modern' },
      ],
      auth: { type: 'jwt', discoveryUrl: issuer.discoveryUrl, allowedAudiences: [AUDIENCE], allowedClients: [CLIENT] },
      requestStateKeys: { current: STATE_KEY },
      logLevel: 'SILENT',
    }),
    { kind, instances: 2, targets: { jobs: () => startV1TasksServer(), modern: () => startTasksServer() } },
  );
  let alice: Record<string, string>;
  let bob: Record<string, string>;
  let a: string;
  let b: string;
  const clients: Client[] = [];
  beforeAll(async () => {
    alice = { authorization: `Bearer ${await issuer.sign({ sub: 'alice' })}` };
    bob = { authorization: `Bearer ${await issuer.sign({ sub: 'bob' })}` };
    a = gw.instances[0]!.url;
    b = gw.instances[1]!.url;
  });
  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
  });
  const received = () => gw.targets.jobs.received();

  /** The official v1 client with tasks, connected to `url` (a new session, or `sessionId`'s). */
  async function v1Client(url: string, headers: Record<string, string>, sessionId?: string) {
    const client = new Client({ name: 'v1-tasks-client', version: '1.0.0' }, { capabilities: TASKS_CLIENT });
    const statuses: Json[] = [];
    client.setNotificationHandler(TaskStatusNotificationSchema, (n) => void statuses.push(n.params));
    const asked: Json[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return { action: 'accept', content: { name: 'Ada' } };
    });
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, sessionId });
    await client.connect(transport);
    clients.push(client);
    return { client, transport, statuses, asked };
  }

  it('declares tasks in initialize because a legacy target does, to a client that declared them; the target hears the client’s declaration only then', async () => {
    const before = received().length;
    const withTasks = await initSession(a, { capabilities: TASKS_CLIENT, headers: alice });
    expect(withTasks.result.capabilities.tasks).toEqual(GATEWAY_TASKS);
    const declared = received()
      .slice(before)
      .filter((r) => r.method === 'initialize');
    // What the gateway relays of tasks: the declaration, none of what a target could ask the client.
    expect(declared.map((r) => r.capabilities?.tasks)).toEqual([{}]);

    const plain = await initSession(a, { capabilities: { elicitation: { form: {} } }, headers: alice });
    expect(plain.result.capabilities.tasks).toBeUndefined();
    // The call reaches the target session of that session, opened without the declaration.
    const call = await post(a, plain.headers, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'jobs___echo', arguments: { text: 'x' } },
    });
    expect((await readMessage(call)).result.content[0].text).toBe('x');
    const inits = received().filter((r) => r.method === 'initialize');
    expect(inits.at(-1)?.capabilities?.tasks).toBeUndefined();
  });

  it('the official v1 client creates a task through one instance and polls it to its result through the other, with the gateway’s id', async () => {
    const first = await v1Client(a, alice);
    const created = await first.client.request(
      { method: 'tools/call', params: { name: 'jobs___slow_sum', arguments: { a: 2, b: 3 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const gatewayId = created.task.taskId;
    expect(created.task).toMatchObject({ status: 'working', ttl: 60_000, pollInterval: 50 });
    const targetIds = gw.targets.jobs.createdTaskIds();
    expect(targetIds).not.toContain(gatewayId);
    expect(received().find((r) => r.method === 'tools/call' && r.task)?.task).toEqual({ ttl: 60_000 });

    const second = await v1Client(b, alice, first.transport.sessionId);
    let task = await second.client.experimental.tasks.getTask(gatewayId);
    expect(task.taskId).toBe(gatewayId);
    while (task.status === 'working') {
      await new Promise((resolve) => setTimeout(resolve, task.pollInterval ?? 50));
      task = await second.client.experimental.tasks.getTask(gatewayId);
    }
    expect(task).toMatchObject({ taskId: gatewayId, status: 'completed' });
    const result = await second.client.experimental.tasks.getTaskResult(gatewayId, CallToolResultSchema);
    expect(result.content[0]).toEqual({ type: 'text', text: '5' });
    expect(result._meta?.[RELATED_TASK_META_KEY]).toEqual({ taskId: gatewayId });
    // The target saw its own ids only.
    const asked = received().filter((r) => r.taskId !== undefined);
    expect(asked.length).toBeGreaterThan(0);
    for (const r of asked) expect(targetIds).toContain(r.taskId);

    // Listed (on the instance that polled it): the same task, under the id the client knows.
    const listed = await second.client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toContain(gatewayId);
    expect(listed.tasks.find((t) => t.taskId === gatewayId)).toMatchObject({ status: 'completed' });
  });

  it('callToolStream: a task that asks the user, answered through the gateway, and its status notifications, all under the gateway’s id', async () => {
    const { client, statuses, asked } = await v1Client(a, alice);
    const messages: Json[] = [];
    for await (const message of client.experimental.tasks.callToolStream(
      { name: 'jobs___ask_name', arguments: {} },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    )) {
      messages.push(message);
    }
    const createdMessage = messages.find((m) => m.type === 'taskCreated');
    const gatewayId = createdMessage?.task.taskId as string;
    expect(gw.targets.jobs.createdTaskIds()).not.toContain(gatewayId);
    expect(messages.at(-1)).toMatchObject({ type: 'result', result: { content: [{ text: 'hello Ada' }] } });
    expect(messages.filter((m) => m.type === 'taskStatus').every((m) => m.task.taskId === gatewayId)).toBe(true);
    expect(asked).toEqual([expect.objectContaining({ message: 'Your name?' })]);
    expect(asked[0]!._meta?.[RELATED_TASK_META_KEY]).toEqual({ taskId: gatewayId });
    // What the target announced on its GET stream reached the client with gateway ids: the one it knows
    // when the instance relaying it issued or saw it (always, in one process); else another id of the
    // same task (a sealed id is random), which opens to it.
    await waitFor(() => statuses.some((s) => s.status === 'completed'));
    const reference = await client.experimental.tasks.getTask(gatewayId);
    for (const status of statuses) {
      if (kind === 'local server') expect(status.taskId).toBe(gatewayId);
      expect(gw.targets.jobs.createdTaskIds()).not.toContain(status.taskId);
      expect((await client.experimental.tasks.getTask(status.taskId)).createdAt).toBe(reference.createdAt);
    }
  });

  it('raw HTTP: created through one instance; its result through the other carries its status and the gateway id', async () => {
    const { headers } = await initSession(a, { capabilities: TASKS_CLIENT, headers: alice });
    const created = await readMessage(
      await post(a, headers, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'jobs___slow_sum', arguments: { a: 20, b: 22, ms: 100, afterAsked: true }, task: {} },
      }),
    );
    const gatewayId = created.result.task.taskId as string;
    expect(created.result.task.status).toBe('working');
    const res = await post(b, headers, {
      jsonrpc: '2.0',
      id: 2,
      method: 'tasks/result',
      params: { taskId: gatewayId },
    });
    const messages: Json[] = [];
    for await (const event of sseEvents(res)) if (event.message) messages.push(event.message);
    const final = messages.at(-1)!;
    expect(final).toMatchObject({ id: 2, result: { content: [{ text: '42' }] } });
    expect(final.result._meta[RELATED_TASK_META_KEY]).toEqual({ taskId: gatewayId });
    const statuses = messages.filter((m) => m.method === 'notifications/tasks/status');
    expect(statuses.map((s) => s.params)).toEqual([
      expect.objectContaining({ taskId: gatewayId, status: 'completed' }),
    ]);
  });

  it('cancels a task through the other instance, with the gateway id back', async () => {
    const { headers } = await initSession(a, { capabilities: TASKS_CLIENT, headers: alice });
    const created = await readMessage(
      await post(a, headers, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'jobs___wait_forever', arguments: {}, task: {} },
      }),
    );
    const gatewayId = created.result.task.taskId as string;
    const cancelled = await readMessage(
      await post(b, headers, { jsonrpc: '2.0', id: 2, method: 'tasks/cancel', params: { taskId: gatewayId } }),
    );
    expect(cancelled.result).toMatchObject({ taskId: gatewayId, status: 'cancelled' });
    const again = await readMessage(
      await post(a, headers, { jsonrpc: '2.0', id: 3, method: 'tasks/cancel', params: { taskId: gatewayId } }),
    );
    // The target's own refusal, relayed.
    expect(again.error.code).toBe(-32602);
    expect(again.error.message).toContain('Cannot cancel task in terminal status: cancelled');
  });

  it('refuses an altered, a made-up, the target’s own and another principal’s task id as a v1 server refuses an unknown task, calling no target', async () => {
    const { headers } = await initSession(a, { capabilities: TASKS_CLIENT, headers: alice });
    const created = await readMessage(
      await post(a, headers, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'jobs___slow_sum', arguments: { a: 1, b: 1 }, task: {} },
      }),
    );
    const gatewayId = created.result.task.taskId as string;
    const targetId = gw.targets.jobs.createdTaskIds().at(-1)!;
    const last = gatewayId.at(-2) === 'A' ? 'B' : 'A';
    const tampered = `${gatewayId.slice(0, -2)}${last}${gatewayId.at(-1)}`;
    const before = received().filter((r) => r.method.startsWith('tasks/')).length;
    for (const taskId of [tampered, 'made-up', targetId]) {
      const get = await post(b, headers, { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId } });
      expect(get.status).toBe(200);
      expect((await readMessage(get)).error).toMatchObject({
        code: -32602,
        message: 'Failed to retrieve task: Task not found',
      });
      const result = await readMessage(
        await post(b, headers, { jsonrpc: '2.0', id: 3, method: 'tasks/result', params: { taskId } }),
      );
      expect(result.error).toMatchObject({ code: -32602, message: `Task not found: ${taskId}` });
    }
    // Bob, in his own session, with Alice's id.
    const bobs = await initSession(b, { capabilities: TASKS_CLIENT, headers: bob });
    const stolen = await readMessage(
      await post(b, bobs.headers, { jsonrpc: '2.0', id: 4, method: 'tasks/cancel', params: { taskId: gatewayId } }),
    );
    expect(stolen.error).toMatchObject({ code: -32602, message: `Task not found: ${gatewayId}` });
    expect(received().filter((r) => r.method.startsWith('tasks/')).length).toBe(before);
    // Alice's own id still works.
    const own = await readMessage(
      await post(b, headers, { jsonrpc: '2.0', id: 5, method: 'tasks/get', params: { taskId: gatewayId } }),
    );
    expect(own.result.taskId).toBe(gatewayId);
  });

  it('a 2025 client’s task-augmented call to a 2026-07-28 target is not bridged: the target runs it in the request, or its -32021 becomes a clear refusal', async () => {
    const { headers } = await initSession(a, { capabilities: TASKS_CLIENT, headers: alice });
    const ran = await readMessage(
      await post(a, headers, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'modern___slow_sum', arguments: { a: 2, b: 2 }, task: {} },
      }),
    );
    expect(ran.result.task).toBeUndefined();
    expect(ran.result.content[0].text).toBe('4');
    const refused = await readMessage(
      await post(a, headers, {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'modern___fails', arguments: {}, task: {} },
      }),
    );
    // The target's -32021 reaches a 2025 client as the gateway's cross-era refusal, naming what it needs.
    expect(refused.error).toMatchObject({
      code: -32603,
      data: {
        type: 'CrossEraInputUnsupported',
        target: 'modern',
        requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
      },
    });
  });

  it('a 2026-07-28 client’s call to the 2025 target is not bridged either: run in the request, or the target’s refusal of a task-only tool', async () => {
    const ran = await callWithTasks(a, 'jobs___slow_sum', { a: 3, b: 4 }, { headers: alice });
    expect(ran.result).toMatchObject({ content: [{ text: '7' }] });
    expect(ran.result?.resultType).not.toBe('task');
    const refused = await callWithTasks(a, 'jobs___wait_forever', {}, { headers: alice });
    expect(refused.error?.message ?? refused.result?.content?.[0]?.text).toMatch(/requires task augmentation/);
  });
});

/** Until `condition` holds. */
async function waitFor(condition: () => boolean): Promise<void> {
  await eventually(() => expect(condition()).toBe(true), 30_000);
}
