import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import {
  CallToolResultV2Schema,
  CreateTaskResultV2Schema,
  GetTaskResultV2Schema,
  UpdateTaskResultV2Schema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Json } from '../support/mcp-http';
import { startTasksServer, type TasksServer } from '../support/servers/tasks-server';
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
import extensionSchema from './ext-tasks.schema.json';

/**
 * The Tasks extension's test server (`test/support/servers/tasks-server.ts`) driven directly, before
 * any gateway relays it: raw HTTP with the extension's headers, the official v2 client pinned to
 * 2026-07-28, and the `@modelcontextprotocol/ext-tasks` client on top of it. Every message the server
 * sends is checked against the extension's JSON Schema (`ext-tasks.schema.json`: the extension repository's draft `schema.json`
 * of github.com/modelcontextprotocol/ext-tasks at e4345978be1f602f1fc48d89051e8559dd5302a6) and against
 * the package's own Zod schemas, which differ where the last describe block says.
 */

jest.setTimeout(30_000);

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
ajv.addSchema(extensionSchema);

/** The errors of `value` against the extension schema's definition `name` (null: valid). */
function schemaErrors(name: string, value: unknown): string | null {
  const validate = ajv.getSchema(`${extensionSchema.$id}#/$defs/${name}`);
  if (!validate) throw new Error(`no definition ${name}`);
  return validate(value) ? null : ajv.errorsText(validate.errors);
}

function expectValid(name: string, value: unknown): void {
  expect({ [name]: schemaErrors(name, value) }).toEqual({ [name]: null });
}

let server: TasksServer;
const clients: Client[] = [];

beforeAll(async () => {
  server = await startTasksServer();
});

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await server?.close();
});

async function pinnedClient(options: { sameRealm?: boolean } = {}): Promise<Client> {
  const client = new Client(
    { name: 'tasks-direct', version: '1.0.0' },
    { capabilities: { elicitation: { form: {}, url: {} } }, versionNegotiation: { mode: { pin: MODERN } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url), options.sameRealm ? { fetch: sameRealmFetch } : {}),
  );
  clients.push(client);
  return client;
}

/** Starts `tool` as a task; returns its CreateTaskResult, checked against both schemas. */
async function started(tool: string, args: Json = {}): Promise<Json> {
  const call = await callWithTasks(server.url, tool, args);
  expect(call.status).toBe(200);
  expect(call.result).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 60_000, pollIntervalMs: 50 });
  expectValid('CreateTaskResult', call.result);
  expect(CreateTaskResultV2Schema.safeParse(call.result).success).toBe(true);
  expect(call.result).not.toHaveProperty('content');
  return call.result!;
}

const received = (method: string, taskId?: string) =>
  server.received().filter((r) => r.method === method && (taskId === undefined || r.taskId === taskId));

describe('discovery', () => {
  test('server/discover declares the extension, and the pinned v2 client sees it', async () => {
    const raw = await tasksRequest(server.url, 'server/discover', {});
    expect(raw.result?.capabilities?.extensions).toEqual({ [TASKS_EXTENSION]: {} });
    const client = await pinnedClient();
    expect(client.getNegotiatedProtocolVersion?.()).toBe(MODERN);
    expect(client.getServerCapabilities()?.extensions).toEqual({ [TASKS_EXTENSION]: {} });
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(
      ['ask_name', 'connect_account', 'fails', 'forever', 'needs_tasks', 'slow_sum'].sort(),
    );
  });
});

describe('raw HTTP', () => {
  test('slow_sum: a task, resolvable at once, polled at its interval to the sum', async () => {
    const created = await started('slow_sum', { a: 2, b: 3 });
    // Durably created: the first tasks/get resolves it.
    const first = await getTask(server.url, created.taskId);
    expect(first.result).toMatchObject({ resultType: 'complete', taskId: created.taskId });
    const { task, polls } = await pollUntilTerminal(server.url, created.taskId);
    for (const poll of polls) {
      expectValid('GetTaskResult', poll);
      expect(GetTaskResultV2Schema.safeParse(poll).success).toBe(true);
    }
    expect(polls.slice(0, -1).every((poll) => poll.status === 'working')).toBe(true);
    expect(task).toMatchObject({
      resultType: 'complete',
      status: 'completed',
      result: { resultType: 'complete', content: [{ type: 'text', text: '5' }] },
    });
    // Every task request carried the routing headers and the declaration.
    for (const request of received('tasks/get', created.taskId)) {
      expect(request.headers).toEqual({ protocolVersion: MODERN, mcpMethod: 'tasks/get', mcpName: created.taskId });
      expect(request.declaredTasks).toBe(true);
    }
    const [call] = received('tools/call').filter((r) => r.tool === 'slow_sum' && r.declaredTasks);
    expect(call?.clientCapabilities).toEqual({ extensions: { [TASKS_EXTENSION]: {} } });
  });

  test('slow_sum without the declaration: the sum at once, no task', async () => {
    const before = server.tasks().length;
    const call = await callWithTasks(server.url, 'slow_sum', { a: 40, b: 2 }, { declareTasks: false });
    expect(call.status).toBe(200);
    expect(call.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: '42' }] });
    expect(call.result).not.toHaveProperty('taskId');
    expect(server.tasks()).toHaveLength(before);
  });

  test('needs_tasks: -32021 naming the extension without the declaration, a task with it', async () => {
    const refused = await callWithTasks(server.url, 'needs_tasks', {}, { declareTasks: false });
    expect(refused.error).toEqual({
      code: -32021,
      message: 'Missing required client capability',
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    });
    expect(refused.status).toBe(400); // the v2 SDK's status for -32021
    const created = await started('needs_tasks');
    const { task } = await pollUntilTerminal(server.url, created.taskId);
    expect(task.result.content).toEqual([{ type: 'text', text: 'done as a task' }]);
  });

  test('ask_name: input_required with a form elicitation, answered with tasks/update', async () => {
    const created = await started('ask_name');
    const asked: Json[] = [];
    const { task, polls, updates } = await pollUntilTerminal(server.url, created.taskId, {
      answer: (key, request) => {
        asked.push({ key, request });
        return { action: 'accept', content: { name: 'Ada' } };
      },
    });
    expect(asked).toEqual([
      {
        key: 'name_request',
        request: {
          method: 'elicitation/create',
          params: {
            mode: 'form',
            message: 'What is your name?',
            requestedSchema: {
              type: 'object',
              properties: { name: { type: 'string', title: 'Your name' } },
              required: ['name'],
            },
          },
        },
      },
    ]);
    const inputRequired = polls.find((poll) => poll.status === 'input_required')!;
    expectValid('GetTaskResult', inputRequired);
    expectValid('InputRequiredTask', inputRequired);
    expect(GetTaskResultV2Schema.safeParse(inputRequired).success).toBe(true);
    expect(updates).toHaveLength(1);
    expect(updates[0]!.answer.result).toEqual({ resultType: 'complete', _meta: expect.any(Object) });
    expectValid('UpdateTaskResult', updates[0]!.answer.result);
    expect(UpdateTaskResultV2Schema.safeParse(updates[0]!.answer.result).success).toBe(true);
    expectValid('UpdateTaskRequest', {
      jsonrpc: '2.0',
      id: 1,
      method: 'tasks/update',
      params: { taskId: created.taskId, inputResponses: updates[0]!.inputResponses },
    });
    expect(task.result.content).toEqual([{ type: 'text', text: 'hello Ada' }]);
    expect(received('tasks/update', created.taskId)).toEqual([
      expect.objectContaining({
        inputResponseKeys: ['name_request'],
        headers: { protocolVersion: MODERN, mcpMethod: 'tasks/update', mcpName: created.taskId },
      }),
    ]);

    // A key already answered is ignored: acknowledged, nothing changes.
    const again = await updateTask(server.url, created.taskId, {
      name_request: { action: 'accept', content: { name: 'Eve' } },
    });
    expect(again.result?.resultType).toBe('complete');
    expect((await getTask(server.url, created.taskId)).result?.result.content).toEqual([
      { type: 'text', text: 'hello Ada' },
    ]);
  });

  test('ask_name: the outstanding request is repeated until answered, under the same key', async () => {
    const created = await started('ask_name');
    const seen: Json[] = [];
    const { task } = await pollUntilTerminal(server.url, created.taskId, {
      answer: (_key, request) => {
        seen.push(request);
        return seen.length < 2 ? undefined : { action: 'decline' };
      },
    });
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(seen[0]);
    expect(task.result.content).toEqual([{ type: 'text', text: 'no name (decline)' }]);
  });

  test('connect_account: a URL elicitation, accepted or declined', async () => {
    for (const action of ['accept', 'decline'] as const) {
      const created = await started('connect_account', { service: 'gitlab' });
      const requests: Json[] = [];
      const { task, polls } = await pollUntilTerminal(server.url, created.taskId, {
        answer: (_key, request) => {
          requests.push(request);
          return { action };
        },
      });
      expect(requests).toEqual([
        {
          method: 'elicitation/create',
          params: {
            mode: 'url',
            message: 'Connect your gitlab account',
            url: expect.stringMatching(/^https:\/\/accounts\.example\/connect\?service=gitlab&task=/),
            elicitationId: expect.any(String),
          },
        },
      ]);
      expectValid(
        'GetTaskResult',
        polls.find((poll) => poll.status === 'input_required'),
      );
      expect(task.result.content).toEqual([
        { type: 'text', text: action === 'accept' ? 'connected gitlab' : `gitlab not connected (${action})` },
      ]);
    }
  });

  test('forever: working until tasks/cancel, then cancelled', async () => {
    const created = await started('forever');
    expect((await getTask(server.url, created.taskId)).result?.status).toBe('working');
    const cancelled = await cancelTask(server.url, created.taskId);
    expect(cancelled.result?.resultType).toBe('complete');
    expectValid('CancelTaskResult', cancelled.result);
    const { task } = await pollUntilTerminal(server.url, created.taskId);
    expect(task).toMatchObject({ status: 'cancelled', statusMessage: 'cancelled by the client' });
    expectValid('GetTaskResult', task);
    // Cancelling again is acknowledged and changes nothing.
    expect((await cancelTask(server.url, created.taskId)).result?.resultType).toBe('complete');
    expect(server.tasks().find((t) => t.taskId === created.taskId)?.status).toBe('cancelled');
    expect(received('tasks/cancel', created.taskId).map((r) => r.headers.mcpName)).toEqual([
      created.taskId,
      created.taskId,
    ]);
  });

  test('fails: failed, with the JSON-RPC error and a status message', async () => {
    const created = await started('fails');
    const { task } = await pollUntilTerminal(server.url, created.taskId);
    expect(task).toMatchObject({
      resultType: 'complete',
      status: 'failed',
      statusMessage: 'Tool execution failed: the backend is unavailable',
      error: { code: -32603, message: 'the backend is unavailable' },
    });
    expect(task).not.toHaveProperty('result');
    expectValid('GetTaskResult', task);
    expect(GetTaskResultV2Schema.safeParse(task).success).toBe(true);
  });

  test('tasks/get|update|cancel without Mcp-Name, or naming another task: -32020, HTTP 400', async () => {
    const created = await started('forever');
    const other = await started('forever');
    const requests = [
      (o: Json) => getTask(server.url, created.taskId, o),
      (o: Json) => updateTask(server.url, created.taskId, { x: { action: 'cancel' } }, o),
      (o: Json) => cancelTask(server.url, created.taskId, o),
    ];
    for (const send of requests) {
      for (const mcpName of [null, other.taskId]) {
        const refused = await send({ mcpName });
        expect(refused.status).toBe(400);
        expect(refused.error?.code).toBe(-32020);
      }
    }
    // None of them reached the task: it still works.
    expect(server.tasks().find((t) => t.taskId === created.taskId)?.status).toBe('working');
    await cancelTask(server.url, created.taskId);
    await cancelTask(server.url, other.taskId);
  });

  test('an unknown task id: -32602 for get, update and cancel', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    for (const answer of [
      await getTask(server.url, unknown),
      await updateTask(server.url, unknown, { name_request: { action: 'cancel' } }),
      await cancelTask(server.url, unknown),
    ]) {
      expect(answer.error).toEqual({ code: -32602, message: 'Failed to retrieve task: Task not found' });
    }
  });

  test('tasks/* from a client that does not declare the extension: -32021', async () => {
    const created = await started('forever');
    for (const answer of [
      await getTask(server.url, created.taskId, { declareTasks: false }),
      await updateTask(server.url, created.taskId, {}, { declareTasks: false }),
      await cancelTask(server.url, created.taskId, { declareTasks: false }),
    ]) {
      expect(answer.error?.code).toBe(-32021);
      expect(answer.error?.data).toEqual({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
    }
    expect(server.tasks().find((t) => t.taskId === created.taskId)?.status).toBe('working');
    await cancelTask(server.url, created.taskId);
  });
});

describe('official v2 client (no Tasks support of its own)', () => {
  test('slow_sum answers it at once; needs_tasks refuses it with -32021', async () => {
    const client = await pinnedClient();
    const sum = await client.callTool({ name: 'slow_sum', arguments: { a: 1, b: 1 } });
    expect(sum.content).toEqual([{ type: 'text', text: '2' }]);
    const error = await client.callTool({ name: 'needs_tasks', arguments: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    });
  });
});

describe('@modelcontextprotocol/ext-tasks client over the pinned v2 client', () => {
  async function session(answer?: (params: Json) => Json) {
    // The package checks JSON by prototype; under jest, fetch's own JSON parsing is another realm's.
    const client = await pinnedClient({ sameRealm: true });
    return createTaskSessionFromClient(client, {
      endpointId: 'tasks-direct',
      rawDispatch: extTasksDispatch(server.url),
      v2RequestFraming: {
        protocolVersion: MODERN,
        clientInfo: { name: 'tasks-direct', version: '1.0.0' },
        clientCapabilities: { elicitation: { form: {}, url: {} } },
      },
      ...(answer ? { onInputRequest: async (request: any) => answer(request.params as Json) as any } : {}),
    });
  }

  test('a task to completion, its follow-ups routed by Mcp-Name', async () => {
    const tasks = await session();
    try {
      const execution = await tasks.callTool('slow_sum', { a: 20, b: 22 });
      expect(execution.kind).toBe('task');
      const { outcome } = await execution.settle();
      expect(resultFromTaskOutcome(outcome)).toMatchObject({ content: [{ type: 'text', text: '42' }] });
      const taskId = execution.handle!.taskId;
      const gets = received('tasks/get', taskId);
      expect(gets.length).toBeGreaterThan(0);
      for (const get of gets) {
        expect(get.headers).toEqual({ protocolVersion: MODERN, mcpMethod: 'tasks/get', mcpName: taskId });
        expect(get.declaredTasks).toBe(true);
      }
    } finally {
      await tasks.close();
    }
  });

  test('form and URL input answered through onInputRequest and tasks/update', async () => {
    const asked: Json[] = [];
    const tasks = await session((params) => {
      asked.push(params);
      return params.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: { name: 'Grace' } };
    });
    try {
      const hello = await (await tasks.callTool('ask_name', {})).settle();
      expect(resultFromTaskOutcome(hello.outcome)).toMatchObject({ content: [{ type: 'text', text: 'hello Grace' }] });
      const connected = await (await tasks.callTool('connect_account', {})).settle();
      expect(resultFromTaskOutcome(connected.outcome)).toMatchObject({
        content: [{ type: 'text', text: 'connected github' }],
      });
      expect(asked.map((params) => params.mode)).toEqual(['form', 'url']);
    } finally {
      await tasks.close();
    }
  });

  test('failed and cancelled outcomes', async () => {
    const tasks = await session();
    try {
      const failed = await (await tasks.callTool('fails', {})).settle();
      expect(failed.outcome.status).toBe('failed');
      expect(failed.outcome).toMatchObject({ error: { message: 'the backend is unavailable' } });

      const forever = await tasks.callTool('forever', {});
      const taskId = forever.handle!.taskId;
      await forever.cancel();
      expect(received('tasks/cancel', taskId).map((r) => r.headers.mcpName)).toEqual([taskId]);
      expect(server.tasks().find((t) => t.taskId === taskId)?.status).toBe('cancelled');
    } finally {
      await tasks.close();
    }
  });
});

describe('where the extension schema and the ext-tasks package differ', () => {
  test("a completed task's result: the schema takes any object, the package wants a 2026-07-28 tool result", () => {
    // The spec's examples show `result` without `resultType`; the package's default result codec (V2) refuses
    // that, so the server stores what the tools/call would have returned on 2026-07-28, `resultType` included.
    const bare = { content: [{ type: 'text', text: 'hi' }] };
    const task = { taskId: 't', status: 'completed', createdAt: 'x', lastUpdatedAt: 'x', ttlMs: null };
    expectValid('GetTaskResult', { ...task, resultType: 'complete', result: bare });
    expect(CallToolResultV2Schema.safeParse(bare).success).toBe(false);
    expect(CallToolResultV2Schema.safeParse({ ...bare, resultType: 'complete' }).success).toBe(true);
  });
});
