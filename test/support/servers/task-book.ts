import { randomUUID } from 'node:crypto';
import {
  type CallToolResult,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

/**
 * The in-memory tasks of the test servers that speak the Tasks extension (2026-07-28,
 * github.com/modelcontextprotocol/ext-tasks): each task's status and timestamps, its outstanding input
 * requests (a key is never issued twice: the spec), what an answer to each does, its result or error,
 * and the timers of its steps. `registerTaskMethods` adds `tasks/get`, `tasks/update` and
 * `tasks/cancel` to a v2 SDK `Server` (the SDK has no 2026-07-28 task side of its own; it checks their
 * `Mcp-Name` against `params.taskId` and stamps `resultType: "complete"`).
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';

type Json = Record<string, unknown>;
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
export const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

export interface TaskRecord {
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

/** Whether these client capabilities declare the Tasks extension. */
export function declaresTasks(capabilities: unknown): boolean {
  const extension = (capabilities as { extensions?: Record<string, unknown> } | undefined)?.extensions?.[
    TASKS_EXTENSION
  ];
  return typeof extension === 'object' && extension !== null && !Array.isArray(extension);
}

/** Whether the request being handled declared the extension (the SDK takes the `_meta` envelope out of the params). */
export function declaredBy(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  return declaresTasks(envelope?.[CLIENT_CAPABILITIES]);
}

/** The capability claims of a request's `_meta`, for a check made before the SDK dispatches. */
export function declaredInMeta(meta: Record<string, unknown> | undefined): boolean {
  return declaresTasks(meta?.[CLIENT_CAPABILITIES]);
}

/** -32021 naming the extension (the spec's error for a client that did not declare it). */
export function missingTasksCapability(): MissingRequiredClientCapabilityError {
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    'Missing required client capability',
  );
}

const TaskIdParams = z.object({ taskId: z.string() }).passthrough();

export class TaskBook {
  private readonly tasks = new Map<string, TaskRecord>();
  private closed = false;

  constructor(
    private readonly timing: {
      ttlMs: number | null;
      pollIntervalMs: number;
      /** Added to the `createdAt` a task reports (a target whose clock is ahead, or one that lies). */
      createdAtSkewMs?: number;
    },
  ) {}

  /** A new working task, stored before its CreateTaskResult is sent (a tasks/get right after it resolves). */
  create(tool: string): TaskRecord {
    const now = new Date(Date.now() + (this.timing.createdAtSkewMs ?? 0)).toISOString();
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
    this.tasks.set(task.taskId, task);
    return task;
  }

  /** Runs `step` after `ms` unless the task ended meanwhile (or the server closed). */
  later(task: TaskRecord, ms: number, step: () => void): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      task.timers.delete(timer);
      if (!TERMINAL.has(task.status)) step();
    }, ms);
    task.timers.add(timer);
  }

  update(task: TaskRecord, status: TaskStatus, statusMessage?: string): void {
    task.status = status;
    task.statusMessage = statusMessage;
    task.lastUpdatedAt = new Date().toISOString();
    if (!TERMINAL.has(status)) return;
    for (const timer of task.timers) clearTimeout(timer);
    task.timers.clear();
    task.inputRequests = {};
    task.onAnswer = {};
  }

  complete(task: TaskRecord, result: CallToolResult): void {
    // What the tools/call would have returned on 2026-07-28, `resultType` included.
    task.result = { ...result, resultType: 'complete' };
    this.update(task, 'completed');
  }

  /** Asks for input: each key's request, and what its answer does (once). */
  ask(task: TaskRecord, requests: Record<string, [Json, (response: Json) => void]>, message: string): void {
    for (const [key, [request, onAnswer]] of Object.entries(requests)) {
      if (task.issuedKeys.has(key)) throw new Error(`input key ${key} reused`);
      task.issuedKeys.add(key);
      task.inputRequests[key] = request;
      task.onAnswer[key] = onAnswer;
    }
    this.update(task, 'input_required', message);
  }

  fields(task: TaskRecord): Json {
    return {
      taskId: task.taskId,
      status: task.status,
      ...(task.statusMessage === undefined ? {} : { statusMessage: task.statusMessage }),
      createdAt: task.createdAt,
      lastUpdatedAt: task.lastUpdatedAt,
      ttlMs: this.timing.ttlMs,
      pollIntervalMs: this.timing.pollIntervalMs,
    };
  }

  /** The CreateTaskResult of a `tools/call`. */
  handle(task: TaskRecord): Json {
    return { ...this.fields(task), resultType: 'task' };
  }

  /** The DetailedTask of `tasks/get`: the status's own field inlined. */
  detailed(task: TaskRecord): Json {
    return {
      ...this.fields(task),
      ...(task.status === 'input_required' ? { inputRequests: structuredClone(task.inputRequests) } : {}),
      ...(task.status === 'completed' ? { result: structuredClone(task.result) } : {}),
      ...(task.status === 'failed' ? { error: structuredClone(task.error) } : {}),
    };
  }

  all(): TaskRecord[] {
    return [...this.tasks.values()];
  }

  /** The task, or the v2 SDK's own error for an unknown one. */
  known(taskId: string): TaskRecord {
    const task = this.tasks.get(taskId);
    if (!task) throw new ProtocolError(-32602, 'Failed to retrieve task: Task not found');
    return task;
  }

  /** `tasks/get`, `tasks/update` and `tasks/cancel`, each refused (-32021) to a request without the extension. */
  registerTaskMethods(server: Server): void {
    server.setRequestHandler('tasks/get', { params: TaskIdParams }, async (params, ctx) => {
      if (!declaredBy(ctx)) throw missingTasksCapability();
      return this.detailed(this.known(params.taskId)) as never;
    });
    server.setRequestHandler('tasks/update', { params: TaskIdParams }, async (params, ctx) => {
      if (!declaredBy(ctx)) throw missingTasksCapability();
      const task = this.known(params.taskId);
      // The SDK lifts `params.inputResponses` out of every 2026-07-28 request (its MRTR field) into
      // `ctx.mcpReq.inputResponses`, dropping entries that are not bare response objects. Keys not
      // outstanding (never issued, already answered, or of a task that ended) are ignored (the spec).
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
      const task = this.known(params.taskId);
      // A terminal task stays as it ended; the acknowledgement is the same (idempotent).
      if (!TERMINAL.has(task.status)) this.update(task, 'cancelled', 'cancelled by the client');
      return {} as never;
    });
  }

  /** No step runs any more. */
  close(): void {
    this.closed = true;
    for (const task of this.tasks.values()) for (const timer of task.timers) clearTimeout(timer);
  }
}
