import { randomUUID } from 'node:crypto';
import {
  type CallToolResult,
  inputRequired,
  inputResponse,
  type McpServer,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { text } from './conformance-content';

/**
 * The Tasks extension (`io.modelcontextprotocol/tasks`, protocol 2026-07-28) of the 2026-07-28
 * conformance reference server (conformance-modern-server.ts), written from the extension's
 * specification and the fixtures the suite's `tasks-*` scenarios name (the conformance repository's
 * everything-server): `greet` (never a task), `slow_compute {seconds, label}` (a task for a caller that
 * declared the extension on the request, else run in the request), and the tools that run only as a
 * task (-32021 naming the extension without the declaration, `refuseUndeclaredTaskCall`): `failing_job` (completes with
 * `isError`), `protocol_error_job` (`failed` with a JSON-RPC error), `confirm_delete {filename}` (one
 * form elicitation), `multi_input` (two at once, answerable one by one), `test_tool_with_task` (an
 * input_required round, then a task whose result names the answer). `tasks/get`, `tasks/update` and
 * `tasks/cancel` are request handlers on the SDK's `Server` (the v2 SDK has no 2026-07-28 task
 * side); the SDK checks their `Mcp-Name` against `params.taskId` and stamps `resultType: "complete"`.
 * Tasks live in memory, shared by the server instances the handler builds per request.
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

type Json = Record<string, unknown>;
type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

interface TaskRecord {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** Outstanding input requests by key; a key is never issued twice (the spec). */
  inputRequests: Record<string, Json>;
  onAnswer: Record<string, (response: Json) => void>;
  result?: Json;
  error?: Json;
  timers: Set<NodeJS.Timeout>;
}

export interface ConformanceTasks {
  /** Adds the tools and the task methods to one server instance. */
  register(server: McpServer): void;
  close(): void;
}

const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);
const TTL_MS = 300_000;
const POLL_INTERVAL_MS = 100;
/** How long a step of a task takes (to input_required, to its result after an answer, to its end). */
const STEP_MS = 50;
const TaskIdParams = z.object({ taskId: z.string() }).passthrough();
/** The tools that run only as a task (the everything-server's `taskSupport: required`). */
const TASK_ONLY_TOOLS: ReadonlySet<string> = new Set([
  'failing_job',
  'protocol_error_job',
  'confirm_delete',
  'multi_input',
  'test_tool_with_task',
]);

function declares(capabilities: unknown): boolean {
  const declared = (capabilities as { extensions?: Record<string, unknown> } | undefined)?.extensions?.[
    TASKS_EXTENSION
  ];
  return typeof declared === 'object' && declared !== null;
}

/** Whether the request being handled declared the extension (the SDK takes the `_meta` envelope out of the params). */
function declaresTasks(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  return declares(envelope?.[CLIENT_CAPABILITIES]);
}

/**
 * A `tools/call` of a task-only tool from a request that did not declare the extension: -32021 naming
 * it (HTTP 400, as the SDK answers a -32021), before the SDK dispatches. Done here because the SDK's
 * `McpServer` turns whatever a tool handler throws into an `isError` result; the suite's fixture
 * answers from a middleware before the handler runs too.
 */
export async function refuseUndeclaredTaskCall(request: Request): Promise<Response | undefined> {
  if (request.method !== 'POST') return undefined;
  let body: { id?: unknown; method?: unknown; params?: { name?: unknown; _meta?: Record<string, unknown> } };
  try {
    body = await request.clone().json();
  } catch {
    return undefined;
  }
  if (body?.method !== 'tools/call' || !TASK_ONLY_TOOLS.has(String(body.params?.name))) return undefined;
  if (declares(body.params?._meta?.[CLIENT_CAPABILITIES])) return undefined;
  const error = missingTasks();
  return Response.json(
    { jsonrpc: '2.0', id: body.id ?? null, error: { code: error.code, message: error.message, data: error.data } },
    { status: 400 },
  );
}

function missingTasks(): MissingRequiredClientCapabilityError {
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    'Missing required client capability',
  );
}

const elicit = (message: string, properties: Json, required: string[]): Json => ({
  method: 'elicitation/create',
  params: { mode: 'form', message, requestedSchema: { type: 'object', properties, required } },
});

export function createConformanceTasks(): ConformanceTasks {
  const tasks = new Map<string, TaskRecord>();
  let closed = false;

  const later = (task: TaskRecord, ms: number, step: () => void) => {
    if (closed) return;
    const timer = setTimeout(() => {
      task.timers.delete(timer);
      if (!TERMINAL.has(task.status)) step();
    }, ms);
    task.timers.add(timer);
  };
  const update = (task: TaskRecord, status: TaskStatus, statusMessage?: string) => {
    task.status = status;
    task.statusMessage = statusMessage;
    task.lastUpdatedAt = new Date().toISOString();
    if (!TERMINAL.has(status)) return;
    for (const timer of task.timers) clearTimeout(timer);
    task.timers.clear();
    task.inputRequests = {};
    task.onAnswer = {};
  };
  const complete = (task: TaskRecord, result: CallToolResult) => {
    // The tools/call result as it would have been returned in the request.
    task.result = { ...result, resultType: 'complete' };
    update(task, 'completed');
  };
  const ask = (task: TaskRecord, requests: Record<string, [Json, (response: Json) => void]>, message: string) => {
    for (const [key, [request, onAnswer]] of Object.entries(requests)) {
      task.inputRequests[key] = request;
      task.onAnswer[key] = onAnswer;
    }
    update(task, 'input_required', message);
  };

  const create = (): TaskRecord => {
    const now = new Date().toISOString();
    const task: TaskRecord = {
      taskId: randomUUID(),
      status: 'working',
      createdAt: now,
      lastUpdatedAt: now,
      inputRequests: {},
      onAnswer: {},
      timers: new Set(),
    };
    // Stored before the CreateTaskResult is sent: a tasks/get right after it resolves.
    tasks.set(task.taskId, task);
    return task;
  };
  const fields = (task: TaskRecord): Json => ({
    taskId: task.taskId,
    status: task.status,
    ...(task.statusMessage === undefined ? {} : { statusMessage: task.statusMessage }),
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ttlMs: TTL_MS,
    pollIntervalMs: POLL_INTERVAL_MS,
  });
  const handle = (task: TaskRecord) => ({ ...fields(task), resultType: 'task' }) as never;
  const detailed = (task: TaskRecord): Json => ({
    ...fields(task),
    ...(task.status === 'input_required' ? { inputRequests: structuredClone(task.inputRequests) } : {}),
    ...(task.status === 'completed' ? { result: structuredClone(task.result) } : {}),
    ...(task.status === 'failed' ? { error: structuredClone(task.error) } : {}),
  });
  const known = (taskId: string): TaskRecord => {
    const task = tasks.get(taskId);
    if (!task) throw new ProtocolError(-32602, 'Failed to retrieve task: Task not found');
    return task;
  };

  const register = (server: McpServer) => {
    server.registerTool(
      'greet',
      { description: 'Greets by name (never a task).', inputSchema: z.object({ name: z.string() }) },
      async ({ name }) => text(`Hello, ${name}!`),
    );

    server.registerTool(
      'slow_compute',
      {
        description: 'Sleeps `seconds`, then answers: a task when the caller takes tasks, in the request otherwise.',
        inputSchema: z.object({ seconds: z.number().min(0), label: z.string().optional() }),
      },
      async ({ seconds, label }, ctx) => {
        const answer = () => text(`computed ${label ?? 'result'} after ${seconds}s`);
        if (!declaresTasks(ctx)) {
          await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
          return answer();
        }
        const task = create();
        later(task, seconds * 1000, () => complete(task, answer()));
        return handle(task);
      },
    );

    server.registerTool('failing_job', { description: 'A task whose tool reports an error.' }, async () => {
      const task = create();
      later(task, STEP_MS, () =>
        complete(task, { content: [{ type: 'text', text: 'the job failed' }], isError: true }),
      );
      return handle(task);
    });

    server.registerTool('protocol_error_job', { description: 'A task that fails (JSON-RPC error).' }, async () => {
      const task = create();
      later(task, STEP_MS, () => {
        task.error = { code: -32603, message: 'Internal error: the job crashed' };
        update(task, 'failed', 'Internal error: the job crashed');
      });
      return handle(task);
    });

    server.registerTool(
      'confirm_delete',
      {
        description: 'A task that asks to confirm a deletion (form elicitation).',
        inputSchema: z.object({ filename: z.string() }),
      },
      async ({ filename }) => {
        const task = create();
        const request = elicit(`Delete ${filename}?`, { confirm: { type: 'boolean', title: 'Delete' } }, ['confirm']);
        later(task, STEP_MS, () =>
          ask(
            task,
            {
              confirm: [
                request,
                (response) => {
                  update(task, 'working');
                  const confirmed =
                    response.action === 'accept' && (response.content as Json | undefined)?.confirm === true;
                  later(task, STEP_MS, () => complete(task, text(confirmed ? `deleted ${filename}` : 'not deleted')));
                },
              ],
            },
            'waiting for the confirmation',
          ),
        );
        return handle(task);
      },
    );

    server.registerTool('multi_input', { description: 'A task that asks two questions at once.' }, async () => {
      const task = create();
      const answers: Record<string, unknown> = {};
      const onAnswer = (key: string) => (response: Json) => {
        answers[key] = (response.content as Json | undefined)?.name;
        // Input required until every request is answered; answered keys are gone from inputRequests.
        if (Object.keys(task.inputRequests).length > 0) return;
        update(task, 'working');
        later(task, STEP_MS, () => complete(task, text(`got ${answers.first} and ${answers.second}`)));
      };
      const name = (message: string) => elicit(message, { name: { type: 'string' } }, ['name']);
      later(task, STEP_MS, () =>
        ask(
          task,
          {
            first: [name('First name?'), onAnswer('first')],
            second: [name('Second name?'), onAnswer('second')],
          },
          'waiting for two answers',
        ),
      );
      return handle(task);
    });

    // Input gathered in request rounds (input_required) before the task is created (the spec: such
    // rounds are resolved synchronously), then the task's result names the answer.
    server.registerTool(
      'test_tool_with_task',
      { description: 'Asks a name (input_required), then runs as a task.' },
      async (ctx) => {
        const answer = inputResponse(ctx.mcpReq.inputResponses, 'user_name');
        if (answer.kind !== 'elicit') {
          return inputRequired({
            inputRequests: {
              user_name: inputRequired.elicit({
                message: 'What is your name?',
                requestedSchema: z.object({ name: z.string() }),
              }),
            },
          });
        }
        const task = create();
        const name = String(answer.content?.name ?? 'stranger');
        later(task, STEP_MS, () => complete(task, text(`Hello, ${name}!`)));
        return handle(task);
      },
    );

    const lowLevel = server.server;
    lowLevel.setRequestHandler('tasks/get', { params: TaskIdParams }, async (params, ctx) => {
      if (!declaresTasks(ctx)) throw missingTasks();
      return detailed(known(params.taskId)) as never;
    });
    lowLevel.setRequestHandler('tasks/update', { params: TaskIdParams }, async (params, ctx) => {
      if (!declaresTasks(ctx)) throw missingTasks();
      const task = known(params.taskId);
      // Keys not outstanding (never issued, answered, or of a task that ended) are ignored (the spec).
      for (const [key, response] of Object.entries(ctx.mcpReq.inputResponses ?? {})) {
        const onAnswer = task.onAnswer[key];
        if (!onAnswer || typeof response !== 'object' || response === null) continue;
        delete task.inputRequests[key];
        delete task.onAnswer[key];
        onAnswer(response as Json);
      }
      return {} as never;
    });
    lowLevel.setRequestHandler('tasks/cancel', { params: TaskIdParams }, async (params, ctx) => {
      if (!declaresTasks(ctx)) throw missingTasks();
      const task = known(params.taskId);
      // A terminal task stays as it ended; the acknowledgement is the same (idempotent).
      if (!TERMINAL.has(task.status)) update(task, 'cancelled', 'cancelled by the client');
      return {} as never;
    });
  };

  return {
    register,
    close: () => {
      closed = true;
      for (const task of tasks.values()) for (const timer of task.timers) clearTimeout(timer);
    },
  };
}

/**
 * The v2 SDK gives every `tools/call` result without `content` an empty `content` (its 2025 parity
 * rule); a CreateTaskResult has none, so it is taken off again and the wire carries the extension's
 * shape. Only JSON answers carry a task (the SDK answers these tools in JSON).
 */
export async function withoutTaskContent(response: Response): Promise<Response> {
  if (!(response.headers.get('content-type') ?? '').includes('application/json')) return response;
  const text = await response.text();
  let message: { result?: Json };
  try {
    message = JSON.parse(text);
  } catch {
    return new Response(text, { status: response.status, headers: response.headers });
  }
  const result = message?.result;
  if (result?.resultType !== 'task' || !Array.isArray(result.content) || result.content.length > 0)
    return new Response(text, { status: response.status, headers: response.headers });
  delete result.content;
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  return new Response(JSON.stringify(message), { status: response.status, headers });
}
