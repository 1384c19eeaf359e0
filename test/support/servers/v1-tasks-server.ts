import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  InMemoryTaskMessageQueue,
  InMemoryTaskStore,
} from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ElicitResultSchema, isInitializeRequest, RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/**
 * A 2025-11-25 MCP server with the protocol's experimental tasks, built with the official v1 SDK as its
 * documentation shows: `McpServer` with an `InMemoryTaskStore` and an `InMemoryTaskMessageQueue`
 * (tasks/get, tasks/result, tasks/list and tasks/cancel are the SDK's own handlers, each session seeing
 * its own tasks), tools registered with `experimental.tasks.registerToolTask`, one sessionful
 * `StreamableHTTPServerTransport` per session, on loopback. The tools:
 * - `slow_sum {a, b, ms?, afterAsked?}`: a task when asked for one (`taskSupport: 'optional'`; else the SDK
 *   runs it in the request), completed after `ms` (default 150) — counted from the first `tasks/result`
 *   for it that reaches the server when `afterAsked`, so its completion happens while that request is open
 *   however long the client took to ask;
 * - `ask_name {}`: only as a task; the task asks the client its name (a form elicitation queued for the
 *   task, so it reaches the client on its `tasks/result` stream, the task `input_required` meanwhile),
 *   then completes with `hello <name>`;
 * - `wait_forever {}`: only as a task, working until cancelled;
 * - `echo {text}`: never a task.
 * Status changes go through the request's task store, so the SDK sends `notifications/tasks/status` (on
 * the session's GET stream). It records what reached it, so a test can tell which ids a target saw.
 */

export interface TasksServerReceived {
  method: string;
  /** `params.taskId` of a task request. */
  taskId?: string;
  /** `params.task` of a task-augmented request. */
  task?: unknown;
  /** `initialize`: the capabilities the client declared. */
  capabilities?: Record<string, unknown>;
}

export interface V1TasksServer {
  url: string;
  /** Every request that reached the server, in order. */
  received(): TasksServerReceived[];
  /** The ids of the tasks the server created, in order. */
  createdTaskIds(): string[];
  close(): Promise<void>;
}

const TASKS_CAPABILITY = { requests: { tools: { call: {} } }, list: {}, cancel: {} };

/** What completes a task once its result is asked for (`slow_sum` with `afterAsked`), by task id. */
type WhenAsked = Map<string, () => void>;

function buildServer(store: InMemoryTaskStore, created: string[], whenAsked: WhenAsked): McpServer {
  const server = new McpServer(
    { name: 'v1-tasks', version: '1.0.0' },
    {
      capabilities: { tasks: TASKS_CAPABILITY },
      taskStore: store,
      taskMessageQueue: new InMemoryTaskMessageQueue(),
    },
  );
  const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
  server.experimental.tasks.registerToolTask(
    'slow_sum',
    {
      description: 'Adds two numbers after ms milliseconds (a task when asked for one).',
      inputSchema: {
        a: z.number(),
        b: z.number(),
        ms: z.number().int().optional(),
        afterAsked: z.boolean().optional(),
      },
      execution: { taskSupport: 'optional' },
    },
    {
      createTask: async ({ a, b, ms, afterAsked }, { taskStore, taskRequestedTtl }) => {
        const task = await taskStore.createTask({ ttl: taskRequestedTtl ?? 60_000, pollInterval: 50 });
        created.push(task.taskId);
        const complete = () =>
          setTimeout(() => {
            taskStore.storeTaskResult(task.taskId, 'completed', text(String(a + b))).catch(() => undefined);
          }, ms ?? 150);
        if (afterAsked) whenAsked.set(task.taskId, complete);
        else complete();
        return { task };
      },
      getTask: async (_args, { taskId, taskStore }) => taskStore.getTask(taskId),
      getTaskResult: async (_args, { taskId, taskStore }) =>
        (await taskStore.getTaskResult(taskId)) as ReturnType<typeof text>,
    },
  );

  server.experimental.tasks.registerToolTask(
    'ask_name',
    {
      description: 'A task that asks the client its name (form elicitation), then greets it.',
      execution: { taskSupport: 'required' },
    },
    {
      createTask: async ({ taskStore, taskRequestedTtl }) => {
        const task = await taskStore.createTask({ ttl: taskRequestedTtl ?? 60_000, pollInterval: 50 });
        created.push(task.taskId);
        void (async () => {
          try {
            await taskStore.updateTaskStatus(task.taskId, 'input_required');
            const answer = await server.server.request(
              {
                method: 'elicitation/create',
                params: {
                  mode: 'form',
                  message: 'Your name?',
                  requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
                  _meta: { [RELATED_TASK_META_KEY]: { taskId: task.taskId } },
                },
              },
              ElicitResultSchema,
              { relatedTask: { taskId: task.taskId } },
            );
            await taskStore.updateTaskStatus(task.taskId, 'working');
            const name = answer.action === 'accept' ? String(answer.content?.name) : `(${answer.action})`;
            await taskStore.storeTaskResult(task.taskId, 'completed', text(`hello ${name}`));
          } catch (error) {
            await taskStore
              .storeTaskResult(task.taskId, 'failed', { ...text(`error: ${String(error)}`), isError: true })
              .catch(() => undefined);
          }
        })();
        return { task };
      },
      getTask: async ({ taskId, taskStore }) => taskStore.getTask(taskId),
      getTaskResult: async ({ taskId, taskStore }) =>
        (await taskStore.getTaskResult(taskId)) as ReturnType<typeof text>,
    },
  );

  server.experimental.tasks.registerToolTask(
    'wait_forever',
    { description: 'A task that works until it is cancelled.', execution: { taskSupport: 'required' } },
    {
      createTask: async ({ taskStore, taskRequestedTtl }) => {
        const task = await taskStore.createTask({ ttl: taskRequestedTtl ?? 60_000, pollInterval: 50 });
        created.push(task.taskId);
        return { task };
      },
      getTask: async ({ taskId, taskStore }) => taskStore.getTask(taskId),
      getTaskResult: async ({ taskId, taskStore }) =>
        (await taskStore.getTaskResult(taskId)) as ReturnType<typeof text>,
    },
  );

  server.registerTool('echo', { description: 'Echoes text.', inputSchema: { text: z.string() } }, async ({ text: t }) =>
    text(t),
  );
  return server;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw ? JSON.parse(raw) : undefined;
}

function note(received: TasksServerReceived[], body: unknown): void {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return;
  const message = body as { method?: unknown; params?: Record<string, unknown> };
  if (typeof message.method !== 'string' || message.method.startsWith('notifications/')) return;
  const params = message.params ?? {};
  received.push({
    method: message.method,
    ...(typeof params.taskId === 'string' ? { taskId: params.taskId } : {}),
    ...(params.task !== undefined ? { task: params.task } : {}),
    ...(message.method === 'initialize' ? { capabilities: params.capabilities as Record<string, unknown> } : {}),
  });
}

export async function startV1TasksServer(): Promise<V1TasksServer> {
  const received: TasksServerReceived[] = [];
  const created: string[] = [];
  // One store for every session: the SDK keeps each session's tasks to that session.
  const store = new InMemoryTaskStore();
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const whenAsked: WhenAsked = new Map();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    note(received, body);
    const asked = body as { method?: unknown; params?: { taskId?: unknown } } | undefined;
    if (asked?.method === 'tasks/result' && typeof asked.params?.taskId === 'string') {
      whenAsked.get(asked.params.taskId)?.();
      whenAsked.delete(asked.params.taskId);
    }
    const existing = sessionId ? transports.get(sessionId) : undefined;
    if (existing) return existing.handleRequest(req, res, body);
    if (sessionId || !isInitializeRequest(body)) {
      res.writeHead(sessionId ? 404 : 400, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'No session' }, id: null }));
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void transports.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) transports.delete(transport.sessionId);
    };
    await buildServer(store, created, whenAsked).connect(transport);
    return transport.handleRequest(req, res, body);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  http.requestTimeout = 0;
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    received: () => structuredClone(received),
    createdTaskIds: () => [...created],
    close: async () => {
      for (const transport of transports.values()) await transport.close().catch(() => undefined);
      store.cleanup();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}
