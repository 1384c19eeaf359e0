import { randomUUID } from 'node:crypto';
import { type CallToolResult, createMcpHandler, ProtocolError, Server, type Tool } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { serveFetch } from './serve-fetch';
import {
  declaredBy,
  declaredInMeta,
  missingTasksCapability,
  TASKS_EXTENSION,
  TaskBook,
  type TaskRecord,
  type TaskStatus,
} from './task-book';

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

export { declaresTasks, TASKS_EXTENSION, type TaskStatus } from './task-book';

type Json = Record<string, unknown>;

export interface TasksServerOptions {
  /** `pollIntervalMs` of every task; default 50. */
  pollIntervalMs?: number;
  /** `ttlMs` of every task (null: unlimited); default 60 000. */
  ttlMs?: number | null;
  /** How far ahead of this server's clock the `createdAt` of its tasks is (a skewed or lying target); default 0. */
  createdAtSkewMs?: number;
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

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });

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

export async function startTasksServer(options: TasksServerOptions = {}): Promise<TasksServer> {
  const pollIntervalMs = options.pollIntervalMs ?? 50;
  const ttlMs = options.ttlMs === undefined ? 60_000 : options.ttlMs;
  const workMs = options.workMs ?? 100;
  const stepMs = options.stepMs ?? 20;
  const book = new TaskBook({ ttlMs, pollIntervalMs, createdAtSkewMs: options.createdAtSkewMs });
  const received: ReceivedRequest[] = [];

  const later = (task: TaskRecord, ms: number, step: () => void) => book.later(task, ms, step);
  const update = (task: TaskRecord, status: TaskStatus, statusMessage?: string) =>
    book.update(task, status, statusMessage);
  const complete = (task: TaskRecord, result: CallToolResult) => book.complete(task, result);
  /** Asks for one input; `onAnswer` runs once, with the response to that key. */
  const ask = (task: TaskRecord, key: string, request: Json, message: string, onAnswer: (r: Json) => void) =>
    book.ask(task, { [key]: [request, onAnswer] }, message);

  const startTool = (tool: string, args: unknown): TaskRecord => {
    const task = book.create(tool);
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
      return book.handle(task) as never;
    });
    book.registerTaskMethods(server);
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
    tasks: () => book.all().map((task) => ({ ...book.detailed(task), tool: task.tool }) as TaskSnapshot),
    close: async () => {
      book.close();
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
    ...(params._meta?.['io.modelcontextprotocol/clientCapabilities'] === undefined
      ? {}
      : { clientCapabilities: params._meta['io.modelcontextprotocol/clientCapabilities'] }),
    declaredTasks: declaredInMeta(params._meta),
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
