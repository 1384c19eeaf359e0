import type { RawClientDispatch } from '@modelcontextprotocol/ext-tasks/client';
import { type Json, post, sseEvents } from './mcp-http';

/**
 * Raw 2026-07-28 HTTP calls of the MCP Tasks extension (`io.modelcontextprotocol/tasks`), as a
 * task-aware client sends them: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (the tool's name for
 * `tools/call`, `params.taskId` for `tasks/get|update|cancel`) and `_meta` with the protocol version,
 * clientInfo and the client capabilities, the extension declared. For tests, directly against a
 * target and through the gateway.
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
export const MODERN = '2026-07-28';
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

export interface TasksRequestOptions {
  /** Declare the extension in the request's client capabilities; default true. */
  declareTasks?: boolean;
  /** Other client capabilities declared (merged with the extension's). */
  capabilities?: Json;
  /** `Mcp-Name` to send instead of the one the body implies; null sends none. */
  mcpName?: string | null;
  /** Extra headers (authorization, a session's). */
  headers?: Record<string, string>;
  /** Bound of one request; default 20 s. */
  timeoutMs?: number;
}

/** One JSON-RPC answer: its HTTP status and message, `result` or `error` lifted out. */
export interface RpcAnswer {
  status: number;
  message: Json;
  result?: Json;
  error?: Json;
}

let nextId = 0;

/** `_meta` of a request from a client with these capabilities. */
export function tasksMeta(options: Pick<TasksRequestOptions, 'declareTasks' | 'capabilities'> = {}): Json {
  const capabilities: Json = { ...(options.capabilities ?? {}) };
  if (options.declareTasks !== false)
    capabilities.extensions = { ...(capabilities.extensions ?? {}), [TASKS_EXTENSION]: {} };
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'tasks-test-client', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  };
}

/** The routing headers of a 2026-07-28 request: `Mcp-Name` mirrors `params.name`, or `params.taskId`. */
export function routingHeaders(method: string, params: Json): Record<string, string> {
  const name = typeof params.name === 'string' ? params.name : params.taskId;
  return {
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
  };
}

/** Sends one 2026-07-28 request and reads its answer (JSON, or the first message with an id on SSE). */
export async function tasksRequest(
  url: string,
  method: string,
  params: Json,
  options: TasksRequestOptions = {},
): Promise<RpcAnswer> {
  const headers: Record<string, string> = { ...routingHeaders(method, params), ...(options.headers ?? {}) };
  if (options.mcpName === null) delete headers['mcp-name'];
  else if (options.mcpName !== undefined) headers['mcp-name'] = options.mcpName;
  const res = await post(
    url,
    headers,
    {
      jsonrpc: '2.0',
      id: `tasks-${++nextId}`,
      method,
      params: { ...params, _meta: { ...(params._meta ?? {}), ...tasksMeta(options) } },
    },
    AbortSignal.timeout(options.timeoutMs ?? 20_000),
  );
  const message = await readAnswer(res);
  return {
    status: res.status,
    message,
    ...(message.result === undefined ? {} : { result: message.result }),
    ...(message.error === undefined ? {} : { error: message.error }),
  };
}

/** `tools/call` from a client that takes tasks (unless `declareTasks: false`). */
export const callWithTasks = (url: string, tool: string, args: Json = {}, options?: TasksRequestOptions) =>
  tasksRequest(url, 'tools/call', { name: tool, arguments: args }, options);

export const getTask = (url: string, taskId: string, options?: TasksRequestOptions) =>
  tasksRequest(url, 'tasks/get', { taskId }, options);

export const updateTask = (url: string, taskId: string, inputResponses: Json, options?: TasksRequestOptions) =>
  tasksRequest(url, 'tasks/update', { taskId, inputResponses }, options);

export const cancelTask = (url: string, taskId: string, options?: TasksRequestOptions) =>
  tasksRequest(url, 'tasks/cancel', { taskId }, options);

export interface PollOptions extends TasksRequestOptions {
  /** At most this many `tasks/get`; default 200. */
  maxPolls?: number;
  /** Give up after this long; default 20 s. A bound on waiting, never asserted. */
  maxWaitMs?: number;
  /** The wait when a task names no `pollIntervalMs`; default 100 ms. */
  defaultIntervalMs?: number;
  /**
   * Answers an `input_required` task: called once per input key not answered before, with the key
   * and its request; what it returns is sent with `tasks/update` (undefined: left unanswered).
   */
  answer?: (key: string, request: Json) => Json | undefined | Promise<Json | undefined>;
}

export interface PollOutcome {
  /** The terminal task (the last `tasks/get` result). */
  task: Json;
  /** Every `tasks/get` result, in order. */
  polls: Json[];
  /** Every `tasks/update` sent, with the HTTP status and message it got. */
  updates: Array<{ inputResponses: Json; answer: RpcAnswer }>;
}

/**
 * Polls `tasks/get` until the task is terminal, waiting the task's `pollIntervalMs` between polls,
 * answering its input requests with `answer`. Bounded in count and in time: throws past either, and on
 * a JSON-RPC error.
 */
export async function pollUntilTerminal(url: string, taskId: string, options: PollOptions = {}): Promise<PollOutcome> {
  const maxPolls = options.maxPolls ?? 200;
  const deadline = Date.now() + (options.maxWaitMs ?? 20_000);
  const outcome: PollOutcome = { task: {}, polls: [], updates: [] };
  const answered = new Set<string>();
  for (;;) {
    if (outcome.polls.length >= maxPolls) throw new Error(`task ${taskId} not terminal after ${maxPolls} polls`);
    const polled = await getTask(url, taskId, options);
    if (!polled.result) throw new Error(`tasks/get ${taskId}: HTTP ${polled.status} ${JSON.stringify(polled.message)}`);
    const task = polled.result;
    outcome.polls.push(task);
    outcome.task = task;
    if (TERMINAL.has(task.status)) return outcome;
    if (task.status === 'input_required' && options.answer) {
      const inputResponses: Json = {};
      for (const [key, request] of Object.entries((task.inputRequests ?? {}) as Json)) {
        if (answered.has(key)) continue;
        const response = await options.answer(key, request);
        if (response === undefined) continue;
        answered.add(key);
        inputResponses[key] = response;
      }
      if (Object.keys(inputResponses).length > 0) {
        const answer = await updateTask(url, taskId, inputResponses, options);
        outcome.updates.push({ inputResponses, answer });
        if (!answer.result)
          throw new Error(`tasks/update ${taskId}: HTTP ${answer.status} ${JSON.stringify(answer.message)}`);
        continue; // look again at once: the answer may already show
      }
    }
    const interval = typeof task.pollIntervalMs === 'number' ? task.pollIntervalMs : (options.defaultIntervalMs ?? 100);
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`task ${taskId} not terminal in time (last status ${task.status})`);
    // The protocol's own duration: a client polls a task at the interval the server asks for.
    await new Promise((resolve) => setTimeout(resolve, Math.min(interval, left)));
  }
}

/**
 * The `rawDispatch` the ext-tasks package needs to drive a 2026-07-28 server: the package frames the
 * request (`_meta`) and names `Mcp-Name` for task requests; this sends it over HTTP with the routing
 * headers and reads the one answer.
 */
export function extTasksDispatch(url: string, headers: Record<string, string> = {}): RawClientDispatch {
  return async (request, options) => {
    const body = request as { method: string; params?: Json };
    const params = body.params ?? {};
    const res = await post(
      url,
      { ...routingHeaders(body.method, params), ...headers, ...lowerCased(options?.context?.headers ?? {}) },
      { jsonrpc: '2.0', id: `ext-${++nextId}`, ...body },
      options?.signal ?? AbortSignal.timeout(20_000),
    );
    const message = await readAnswer(res);
    if (message.error) return { kind: 'error', error: message.error };
    return { kind: 'result', result: message.result };
  };
}

/**
 * The answer of a JSON or SSE response (the first message with an id), parsed by this realm's `JSON`:
 * under jest, `Response.json()` builds objects of Node's outer realm, which the ext-tasks package's
 * JSON check (`isJsonValue`: prototype === this realm's `Object.prototype`) refuses.
 */
export async function readAnswer(res: Response): Promise<Json> {
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    for await (const event of sseEvents(res)) if (event.message && 'id' in event.message) return event.message;
    throw new Error('SSE stream ended without a message');
  }
  return JSON.parse(await res.text()) as Json;
}

/** `fetch` whose JSON answers are parsed in this realm (see `readAnswer`): for SDK clients under ext-tasks. */
export const sameRealmFetch: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  Object.defineProperty(res, 'json', { value: async () => JSON.parse(await res.text()) });
  return res;
};

function lowerCased(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}
