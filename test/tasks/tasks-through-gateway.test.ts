import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { AUDIENCE, CLIENT, startIssuer, type TestIssuer } from '../auth/support';
import type { GatewayKind } from '../support/gateways';
import type { Json } from '../support/mcp-http';
import { startTasksServer } from '../support/servers/tasks-server';
import {
  callWithTasks,
  cancelTask,
  extTasksDispatch,
  getTask,
  MODERN,
  pollUntilTerminal,
  sameRealmFetch,
  TASKS_EXTENSION,
  tasksRequest,
  updateTask,
} from '../support/tasks-client';
import { withGateway } from '../support/with-gateway';

/**
 * The Tasks extension (2026-07-28) through the gateway, against a real v2-SDK server with tasks
 * (test/support/servers/tasks-server.ts, proven directly in tasks-server-direct.test.ts), with raw HTTP
 * as the reference samples send it and two gateway instances: a task is created through one and
 * polled, answered and cancelled through the other, with the gateway's own task ids. Nothing of it
 * is stored: the instances share only the configured keys.
 */

jest.setTimeout(60_000);

const KINDS: GatewayKind[] = ['local server', 'lambda runtime'];
const STATE_KEY = 'tasks-test-request-state-key-0123456789abcdefghij';

let issuer: TestIssuer;
beforeAll(async () => {
  issuer = await startIssuer();
});
afterAll(() => issuer?.close());

describe.each(KINDS)('the Tasks extension through the %s', (kind) => {
  const gw = withGateway(
    (t) => ({
      targets: [
        { name: 'jobs', url: t.jobs.url, era: 'modern' },
        { name: 'demo', url: t.demo.url, era: 'legacy' },
      ],
      auth: { type: 'jwt', discoveryUrl: issuer.discoveryUrl, allowedAudiences: [AUDIENCE], allowedClients: [CLIENT] },
      requestStateKeys: { current: STATE_KEY },
      confirmTools: ['jobs___needs_tasks'],
      logLevel: 'SILENT',
    }),
    {
      kind,
      instances: 2,
      targets: { jobs: () => startTasksServer(), demo: () => startDemoTarget() },
    },
  );
  let alice: Record<string, string>;
  let bob: Record<string, string>;
  let a: string;
  let b: string;
  beforeAll(async () => {
    alice = { authorization: `Bearer ${await issuer.sign({ sub: 'alice' })}` };
    bob = { authorization: `Bearer ${await issuer.sign({ sub: 'bob' })}` };
    a = gw.instances[0]!.url;
    b = gw.instances[1]!.url;
  });
  const asAlice = (options: Json = {}) => ({ ...options, headers: alice });
  const received = () => gw.targets.jobs.received();

  it('declares the extension in server/discover, because a target does', async () => {
    const discovered = await tasksRequest(a, 'server/discover', {}, asAlice());
    expect(discovered.result?.capabilities?.extensions).toEqual({ [TASKS_EXTENSION]: {} });
  });

  it('creates a task through one instance and completes it through the other; the target sees only its own ids', async () => {
    const created = await callWithTasks(a, 'jobs___slow_sum', { a: 2, b: 3 }, asAlice());
    expect(created.status).toBe(200);
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', pollIntervalMs: 50 });
    const gatewayId = created.result!.taskId as string;
    const targetIds = gw.targets.jobs.tasks().map((task) => task.taskId);
    expect(targetIds).not.toContain(gatewayId);

    const { task, polls } = await pollUntilTerminal(b, gatewayId, asAlice());
    expect(task).toMatchObject({ taskId: gatewayId, status: 'completed', resultType: 'complete' });
    expect(task.result.content[0].text).toBe('5');
    expect(polls.every((poll) => poll.taskId === gatewayId)).toBe(true);
    // What reached the target: its own id, in the body and in Mcp-Name.
    const gets = received().filter((r) => r.method === 'tasks/get');
    expect(gets.length).toBeGreaterThan(0);
    for (const get of gets) {
      expect(targetIds).toContain(get.taskId);
      expect(get.headers.mcpName).toBe(get.taskId);
      expect(get.declaredTasks).toBe(true);
    }
  });

  it('declares the extension to the target only on requests where the client did: without it the call runs in the request', async () => {
    const before = received().length;
    const answered = await callWithTasks(a, 'jobs___slow_sum', { a: 1, b: 1 }, asAlice({ declareTasks: false }));
    expect(answered.result).toMatchObject({ resultType: 'complete', content: [{ text: '2' }] });
    const call = received()
      .slice(before)
      .find((r) => r.method === 'tools/call');
    expect(call?.declaredTasks).toBe(false);
  });

  it("relays a target's -32021 for a tool that runs only as a task, to a client that did not declare the extension", async () => {
    const refused = await callWithTasks(a, 'jobs___fails', {}, asAlice({ declareTasks: false }));
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    });
  });

  it("passes a task's form input request through, and its answer (tasks/update, another instance) back under the target's key", async () => {
    const created = await callWithTasks(
      a,
      'jobs___ask_name',
      {},
      asAlice({ capabilities: { elicitation: { form: {} } } }),
    );
    const asked: Json[] = [];
    const { task, updates } = await pollUntilTerminal(b, created.result!.taskId, {
      ...asAlice({ capabilities: { elicitation: { form: {} } } }),
      answer: (key, request) => {
        asked.push({ key, request });
        return { action: 'accept', content: { name: 'Ada' } };
      },
    });
    expect(asked).toEqual([
      { key: 'name_request', request: expect.objectContaining({ method: 'elicitation/create' }) },
    ]);
    expect(updates.map((u) => u.answer.result)).toEqual([expect.objectContaining({ resultType: 'complete' })]);
    expect(task).toMatchObject({ status: 'completed' });
    expect(task.result.content[0].text).toBe('hello Ada');
    const update = received().find((r) => r.method === 'tasks/update');
    expect(update?.inputResponseKeys).toEqual(['name_request']);
  });

  it("passes a task's URL elicitation through; accepted, the task completes", async () => {
    const caps = { elicitation: { form: {}, url: {} } };
    const created = await callWithTasks(
      a,
      'jobs___connect_account',
      { service: 'github' },
      asAlice({ capabilities: caps }),
    );
    const { task } = await pollUntilTerminal(a, created.result!.taskId, {
      ...asAlice({ capabilities: caps }),
      answer: (_key, request) => {
        expect(request.params).toMatchObject({ mode: 'url', url: expect.stringMatching(/^https?:\/\//) });
        return { action: 'accept' };
      },
    });
    expect(task.status).toBe('completed');
  });

  it('cancels a task through the other instance', async () => {
    const created = await callWithTasks(a, 'jobs___forever', {}, asAlice());
    const id = created.result!.taskId as string;
    const cancelled = await cancelTask(b, id, asAlice());
    expect(cancelled.result).toMatchObject({ resultType: 'complete' });
    const { task } = await pollUntilTerminal(a, id, asAlice());
    expect(task).toMatchObject({ taskId: id, status: 'cancelled' });
  });

  it('relays a failed task with its JSON-RPC error', async () => {
    const created = await callWithTasks(a, 'jobs___fails', {}, asAlice());
    const { task } = await pollUntilTerminal(b, created.result!.taskId, asAlice());
    expect(task).toMatchObject({ status: 'failed', error: { code: expect.any(Number) } });
  });

  it('refuses a tampered task id, a made-up one and the target’s own, before any target is called', async () => {
    const created = await callWithTasks(a, 'jobs___forever', {}, asAlice());
    const id = created.result!.taskId as string;
    const targetsOwn = gw.targets.jobs.tasks().at(-1)!.taskId;
    const before = received().length;
    for (const forged of [`${id.slice(0, -3)}AAA`, 'gw1.x.y.z', targetsOwn]) {
      const refused = await getTask(b, forged, asAlice());
      // In-band, as a server answers a task it does not know (the official v2 SDK server does so).
      expect(refused.status).toBe(200);
      expect(refused.error).toMatchObject({ code: -32602, data: { reason: 'unknown' } });
    }
    expect(received().length).toBe(before);
    await cancelTask(a, id, asAlice());
  });

  it("refuses another principal's task id for every task request", async () => {
    const created = await callWithTasks(a, 'jobs___forever', {}, asAlice());
    const id = created.result!.taskId as string;
    const before = received().length;
    const asBob = { headers: bob };
    for (const attempt of [getTask(b, id, asBob), updateTask(b, id, { x: {} }, asBob), cancelTask(b, id, asBob)]) {
      const refused = await attempt;
      expect(refused.status).toBe(200);
      expect(refused.error).toMatchObject({ code: -32602, data: { reason: 'unknown' } });
    }
    expect(received().length).toBe(before);
    // Still Alice's, and still running.
    expect((await getTask(a, id, asAlice())).result).toMatchObject({ status: 'working' });
    await cancelTask(a, id, asAlice());
  });

  it('refuses a task request whose Mcp-Name does not mirror its taskId (-32020), and one without the extension declared (-32021)', async () => {
    const created = await callWithTasks(a, 'jobs___forever', {}, asAlice());
    const id = created.result!.taskId as string;
    const mismatched = await getTask(a, id, asAlice({ mcpName: 'another-task' }));
    expect(mismatched.status).toBe(400);
    expect(mismatched.error?.code).toBe(-32020);
    const undeclared = await getTask(a, id, asAlice({ declareTasks: false }));
    expect(undeclared.status).toBe(400);
    expect(undeclared.error?.code).toBe(-32021);
    await cancelTask(a, id, asAlice());
  });

  it("asks the gateway's own confirmation before a sensitive tool runs, then relays the task it becomes", async () => {
    const caps = { elicitation: { form: {} } };
    const first = await callWithTasks(a, 'jobs___needs_tasks', {}, asAlice({ capabilities: caps }));
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    const [key] = Object.keys(first.result!.inputRequests);
    const confirmed = await tasksRequest(
      b,
      'tools/call',
      {
        name: 'jobs___needs_tasks',
        arguments: {},
        requestState: first.result!.requestState,
        inputResponses: { [key!]: { action: 'accept', content: { confirm: true } } },
      },
      asAlice({ capabilities: caps }),
    );
    expect(confirmed.result).toMatchObject({ resultType: 'task' });
    const { task } = await pollUntilTerminal(a, confirmed.result!.taskId, asAlice({ capabilities: caps }));
    expect(task.status).toBe('completed');
  });

  it('works with the official 2026-07-28 client and the @modelcontextprotocol/ext-tasks session on top: a task, form and URL input, all through the gateway', async () => {
    const client = new Client(
      { name: 'tasks-through-gateway', version: '1.0.0' },
      { capabilities: { elicitation: { form: {}, url: {} } }, versionNegotiation: { mode: { pin: MODERN } } },
    );
    // The package checks JSON by prototype; under jest, fetch's own JSON parsing is another realm's.
    const authFetch: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      for (const [name, value] of Object.entries(alice)) headers.set(name, value);
      return sameRealmFetch(input, { ...init, headers });
    };
    await client.connect(new StreamableHTTPClientTransport(new URL(a), { fetch: authFetch }));
    const asked: string[] = [];
    const tasks = await createTaskSessionFromClient(client, {
      endpointId: 'tasks-through-gateway',
      rawDispatch: extTasksDispatch(b, alice),
      v2RequestFraming: {
        protocolVersion: MODERN,
        clientInfo: { name: 'tasks-through-gateway', version: '1.0.0' },
        clientCapabilities: { elicitation: { form: {}, url: {} } },
      },
      // `any`: the package's input-request and result types are generic over its schemas.
      onInputRequest: async (request: any) => {
        asked.push(request.params.mode);
        return (
          request.params.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: { name: 'Grace' } }
        ) as any;
      },
    });
    try {
      const sum = await (await tasks.callTool('jobs___slow_sum', { a: 20, b: 22 })).settle();
      expect(resultFromTaskOutcome(sum.outcome)).toMatchObject({ content: [{ type: 'text', text: '42' }] });
      const hello = await (await tasks.callTool('jobs___ask_name', {})).settle();
      expect(resultFromTaskOutcome(hello.outcome)).toMatchObject({ content: [{ type: 'text', text: 'hello Grace' }] });
      const connected = await (await tasks.callTool('jobs___connect_account', {})).settle();
      expect(resultFromTaskOutcome(connected.outcome)).toMatchObject({
        content: [{ type: 'text', text: 'connected github' }],
      });
      expect(asked).toEqual(['form', 'url']);
    } finally {
      await tasks.close();
      await client.close();
    }
  });
});
