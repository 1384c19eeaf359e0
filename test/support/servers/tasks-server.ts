import { randomUUID } from 'node:crypto';
import {
  type CallToolResult,
  createMcpHandler,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  Server,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { serveFetch } from './serve-fetch';

/**
 * A 2026-07-28 server of the MCP Tasks extension (`io.modelcontextprotocol/tasks`), for tests: the
 * official v2 SDK (`createMcpHandler(…, { legacy: 'reject' })` and a low-level `Server`) serves
 * `server/discover`, `tools/list`, the envelope and header checks, and the three task methods as
 * custom request handlers; the tasks themselves are this file's, in memory. The SDK checks that
 * `tasks/get|update|cancel` carry `Mcp-Method` and `Mcp-Name` = `params.taskId` (else -32020, HTTP
 * 400), as it does `Mcp-Name` = `params.name` for `tools/call`. `@modelcontextprotocol/ext-tasks`
 * has no 2026-07-28 server side (its receiver is the 2025-11-25 one), hence the tasks here.
 *
 * Tools (a caller "declares" the extension in `_meta["io.modelcontextprotocol/clientCapabilities"]`):
 * - `slow_sum {a, b}`: declared, a task that completes after `workMs` with the sum; otherwise the sum
 *   at once (a plain CallToolResult);
 * - `needs_tasks`: declared, a task that completes after `workMs`; otherwise -32021 naming the extension;
 * - `ask_name`: a task that goes `input_required` (a form elicitation, key `name_request`) and, once
 *   `tasks/update` answers it, completes with `hello <name>`;
 * - `connect_account {service?}`: the same with a URL elicitation (key `consent`);
 * - `forever`: a task that works until `tasks/cancel`, then is `cancelled`;
 * - `fails`: a task that ends `failed` with a JSON-RPC error (-32603).
 * Every task tool but `slow_sum` requires the declaration (-32021 without it). `tasks/*` without
 * the declaration is -32021 too, and an unknown task id -32602, as the extension requires.
 *
 * `received()` lists what reached the server (method, task id, routing headers, the declared client
 * capabilities), for tests of what a gateway forwards.
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
type Json = Record<string, unknown>;

export interface TasksServerOptions {
  /** `pollIntervalMs` of every task; default 50. */
  pollIntervalMs?: number;
  /** `ttlMs` of every task (null: unlimited); default 60 000. */
  ttlMs?: number | null;
  /** How long `slow_sum` and `needs_tasks` work before completing; default 100 ms. */
  workMs?: number;
  /** How long every other step takes (to `input_required`, to the result after an answer, to `failed`); default 20 ms. */
  stepMs?: number;
}

/** One request as the server received it. */
export interface ReceivedRequest {
  method: string;
  id?: string | number;
  /** `params.name` of a `tools/call`. */
  tool?: string;
  /** `params.taskId` of a `tasks/*` request. */
  taskId?: string;
  /** Keys of `params.inputResponses` (`tasks/update`). */
  inputResponseKeys?: string[];
  headers: { protocolVersion?: string; mcpMethod?: string; mcpName?: string };
  /** `params._meta["io.modelcontextprotocol/clientCapabilities"]` as received. */
  clientCapabilities?: unknown;
  /** Whether those capabilities declared the Tasks extension. */
  declaredTasks: boolean;
  /** The HTTP status the server answered with. */
  httpStatus?: number;
}

/** A task as `tasks/get` would show it (without `resultType`), plus the tool that made it. */
export interface TaskSnapshot extends Json {
  taskId: string;
  status: TaskStatus;
  tool: string;
}

export interface TasksServer {
  url: string;
  received(): ReceivedRequest[];
  /** The server's tasks, in creation order. */
  tasks(): TaskSnapshot[];
  close(): Promise<void>;
}

interface TaskRecord {
  tool: string;
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** Outstanding input requests by key, and every key ever issued (a key is never reused). */
  inputRequests: Record<string, Json>;
  issuedKeys: Set<string>;
  /** What an answer to each key does. */
  onAnswer: Record<string, (response: Json) => void>;
  result?: Json;
  error?: Json;
  timers: Set<NodeJS.Timeout>;
}

const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);
const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });
const TaskIdParams = z.object({ taskId: z.string() }).passthrough();

const TOOLS: Tool[] = [
  {
    name: 'slow_sum',
    description: 'Adds two numbers: a task when the caller takes tasks, at once otherwise.',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
  },
  { name: 'needs_tasks', description: 'Runs only as a task.', inputSchema: { type: 'object', properties: {} } },
  {
    name: 'ask_name',
    description: 'Asks your name (form), then greets you.',
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'connect_account',
    description: 'Sends you to a consent page (URL), then connects the account.',
    inputSchema: { type: 'object', properties: { service: { type: 'string' } } },
  },
  { name: 'forever', description: 'Works until cancelled.', inputSchema: { type: 'object', properties: {} } },
  { name: 'fails', description: 'Fails with a JSON-RPC error.', inputSchema: { type: 'object', properties: {} } },
];

const SumArgs = z.object({ a: z.number(), b: z.number() });
const ServiceArgs = z.object({ service: z.string().optional() });

/** Whether these client capabilities declare the Tasks extension. */
export function declaresTasks(capabilities: unknown): boolean {
  const extension = (capabilities as { extensions?: Record<string, unknown> } | undefined)?.extensions?.[
    TASKS_EXTENSION
  ];
  return typeof extension === 'object' && extension !== null && !Array.isArray(extension);
}

/** The client capabilities of the request being handled (the SDK takes the `_meta` envelope out of the params). */
function declaredBy(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  return declaresTasks(envelope?.[CLIENT_CAPABILITIES]);
}

function missingTasksCapability(): MissingRequiredClientCapabilityError {
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    'Missing required client capability',
  );
}

export async function startTasksServer(options: TasksServerOptions = {}): Promise<TasksServer> {
  const pollIntervalMs = options.pollIntervalMs ?? 50;
  const ttlMs = options.ttlMs === undefined ? 60_000 : options.ttlMs;
  const workMs = options.workMs ?? 100;
  const stepMs = options.stepMs ?? 20;
  const tasks = new Map<string, TaskRecord>();
  const received: ReceivedRequest[] = [];
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
    if (TERMINAL.has(status)) {
      for (const timer of task.timers) clearTimeout(timer);
      task.timers.clear();
      task.inputRequests = {};
    }
  };

  const complete = (task: TaskRecord, result: CallToolResult) => {
    // What the tools/call would have returned on 2026-07-28, `resultType` included.
    task.result = { ...result, resultType: 'complete' };
    update(task, 'completed');
  };

  /** Asks for one input; `onAnswer` runs once, with the response to that key. */
  const ask = (task: TaskRecord, key: string, request: Json, message: string, onAnswer: (r: Json) => void) => {
    if (task.issuedKeys.has(key)) throw new Error(`input key ${key} reused`);
    task.issuedKeys.add(key);
    task.inputRequests[key] = request;
    task.onAnswer[key] = onAnswer;
    update(task, 'input_required', message);
  };

  const createTask = (tool: string): TaskRecord => {
    const now = new Date().toISOString();
    const task: TaskRecord = {
      tool,
      taskId: randomUUID(),
      status: 'working',
      createdAt: now,
      lastUpdatedAt: now,
      inputRequests: {},
      issuedKeys: new Set(),
      onAnswer: {},
      timers: new Set(),
    };
    tasks.set(task.taskId, task);
    return task;
  };

  const fields = (task: TaskRecord): Json => ({
    taskId: task.taskId,
    status: task.status,
    ...(task.statusMessage === undefined ? {} : { statusMessage: task.statusMessage }),
    createdAt: task.createdAt,
    lastUpdatedAt: task.lastUpdatedAt,
    ttlMs,
    pollIntervalMs,
  });

  /** The DetailedTask of `tasks/get`: the status's own field inlined. */
  const detailed = (task: TaskRecord): Json => ({
    ...fields(task),
    ...(task.status === 'input_required' ? { inputRequests: structuredClone(task.inputRequests) } : {}),
    ...(task.status === 'completed' ? { result: structuredClone(task.result) } : {}),
    ...(task.status === 'failed' ? { error: structuredClone(task.error) } : {}),
  });

  const startTool = (tool: string, args: unknown): TaskRecord => {
    const task = createTask(tool);
    switch (tool) {
      case 'slow_sum': {
        const { a, b } = SumArgs.parse(args);
        later(task, workMs, () => complete(task, text(String(a + b))));
        break;
      }
      case 'needs_tasks':
        later(task, workMs, () => complete(task, text('done as a task')));
        break;
      case 'ask_name':
        later(task, stepMs, () =>
          ask(
            task,
            'name_request',
            {
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
            'waiting for your name',
            (response) => {
              update(task, 'working');
              const name = (response.content as { name?: unknown } | undefined)?.name;
              later(task, stepMs, () =>
                complete(
                  task,
                  response.action === 'accept' && typeof name === 'string'
                    ? text(`hello ${name}`)
                    : text(`no name (${String(response.action)})`),
                ),
              );
            },
          ),
        );
        break;
      case 'connect_account': {
        const service = ServiceArgs.parse(args ?? {}).service ?? 'github';
        later(task, stepMs, () =>
          ask(
            task,
            'consent',
            {
              method: 'elicitation/create',
              params: {
                mode: 'url',
                message: `Connect your ${service} account`,
                url: `https://accounts.example/connect?service=${encodeURIComponent(service)}&task=${task.taskId}`,
                elicitationId: randomUUID(),
              },
            },
            'waiting for the consent page',
            (response) => {
              update(task, 'working');
              later(task, stepMs, () =>
                complete(
                  task,
                  response.action === 'accept'
                    ? text(`connected ${service}`)
                    : text(`${service} not connected (${String(response.action)})`),
                ),
              );
            },
          ),
        );
        break;
      }
      case 'forever':
        update(task, 'working', 'working until cancelled');
        break;
      case 'fails':
        later(task, stepMs, () => {
          task.error = { code: -32603, message: 'the backend is unavailable' };
          update(task, 'failed', 'Tool execution failed: the backend is unavailable');
        });
        break;
    }
    return task;
  };

  const known = (taskId: string): TaskRecord => {
    const task = tasks.get(taskId);
    if (!task) throw new ProtocolError(-32602, 'Failed to retrieve task: Task not found');
    return task;
  };

  const build = (): Server => {
    const server = new Server(
      { name: 'tasks-server', version: '1.0.0' },
      { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } },
    );
    server.setRequestHandler('tools/list', async () => ({ tools: structuredClone(TOOLS) }));
    server.setRequestHandler('tools/call', async (request, ctx) => {
      const { name, arguments: args } = request.params;
      if (!TOOLS.some((tool) => tool.name === name)) throw new ProtocolError(-32602, `Tool ${name} not found`);
      const parsed = name === 'slow_sum' ? SumArgs.safeParse(args) : ServiceArgs.safeParse(args ?? {});
      if (!parsed.success)
        throw new ProtocolError(-32602, `Invalid arguments for tool ${name}: ${parsed.error.message}`);
      if (!declaredBy(ctx)) {
        if (name !== 'slow_sum') throw missingTasksCapability();
        const { a, b } = SumArgs.parse(args);
        return text(String(a + b));
      }
      const task = startTool(name, args);
      // The task exists (tasks/get resolves it) before the CreateTaskResult is sent.
      return { ...fields(task), resultType: 'task' } as never;
    });
    server.setRequestHandler('tasks/get', { params: TaskIdParams }, async (params, ctx) => {
      if (!declaredBy(ctx)) throw missingTasksCapability();
      return detailed(known(params.taskId)) as never;
    });
    server.setRequestHandler('tasks/update', { params: TaskIdParams }, async (params, ctx) => {
      if (!declaredBy(ctx)) throw missingTasksCapability();
      const task = known(params.taskId);
      // The SDK lifts `params.inputResponses` out of every 2026-07-28 request (its MRTR field) into
      // `ctx.mcpReq.inputResponses`, dropping entries that are not bare response objects.
      // Keys not outstanding (never issued, already answered, or of a task that ended) are ignored.
      for (const [key, response] of Object.entries(ctx.mcpReq.inputResponses ?? {})) {
        const onAnswer = task.onAnswer[key];
        if (!(key in task.inputRequests) || !onAnswer || typeof response !== 'object' || response === null) continue;
        delete task.inputRequests[key];
        delete task.onAnswer[key];
        onAnswer(response as Json);
      }
      return {} as never;
    });
    server.setRequestHandler('tasks/cancel', { params: TaskIdParams }, async (params, ctx) => {
      if (!declaredBy(ctx)) throw missingTasksCapability();
      const task = known(params.taskId);
      if (!TERMINAL.has(task.status)) update(task, 'cancelled', 'cancelled by the client');
      return {} as never;
    });
    return server;
  };

  const handler = createMcpHandler(build, { legacy: 'reject', onerror: () => undefined });
  const served = await serveFetch(async (request) => {
    const entry = request.method === 'POST' ? record(await request.clone().text(), request.headers) : undefined;
    if (entry) received.push(entry);
    const response = await handler.fetch(request);
    if (entry) entry.httpStatus = response.status;
    return entry?.method === 'tools/call' ? withoutTaskContent(response) : response;
  });

  return {
    url: served.url,
    received: () => structuredClone(received),
    tasks: () => [...tasks.values()].map((task) => ({ ...detailed(task), tool: task.tool }) as TaskSnapshot),
    close: async () => {
      closed = true;
      for (const task of tasks.values()) for (const timer of task.timers) clearTimeout(timer);
      await handler.close().catch(() => undefined);
      await served.close();
    },
  };
}

function record(raw: string, headers: Headers): ReceivedRequest | undefined {
  let body: { method?: unknown; id?: string | number; params?: Record<string, any> };
  try {
    body = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof body?.method !== 'string') return undefined;
  const params = body.params ?? {};
  return {
    method: body.method,
    ...(body.id === undefined ? {} : { id: body.id }),
    ...(body.method === 'tools/call' ? { tool: String(params.name) } : {}),
    ...(typeof params.taskId === 'string' ? { taskId: params.taskId } : {}),
    ...(body.method === 'tasks/update' ? { inputResponseKeys: Object.keys(params.inputResponses ?? {}) } : {}),
    headers: {
      ...(headers.has('mcp-protocol-version') ? { protocolVersion: headers.get('mcp-protocol-version')! } : {}),
      ...(headers.has('mcp-method') ? { mcpMethod: headers.get('mcp-method')! } : {}),
      ...(headers.has('mcp-name') ? { mcpName: headers.get('mcp-name')! } : {}),
    },
    ...(params._meta?.[CLIENT_CAPABILITIES] === undefined
      ? {}
      : { clientCapabilities: params._meta[CLIENT_CAPABILITIES] }),
    declaredTasks: declaresTasks(params._meta?.[CLIENT_CAPABILITIES]),
  };
}

/**
 * The v2 SDK (2.4) gives every `tools/call` result without `content` an empty `content` (its 2025
 * parity rule); a CreateTaskResult has none, so it is taken off again and the wire carries exactly
 * the extension's shape. Only JSON answers are rewritten (the SDK answers this server's calls in JSON).
 */
async function withoutTaskContent(response: Response): Promise<Response> {
  if (!(response.headers.get('content-type') ?? '').includes('application/json')) return response;
  const message = (await response.json()) as { result?: Json };
  const result = message.result;
  if (result?.resultType === 'task' && Array.isArray(result.content) && result.content.length === 0)
    delete result.content;
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  return new Response(JSON.stringify(message), { status: response.status, headers });
}
