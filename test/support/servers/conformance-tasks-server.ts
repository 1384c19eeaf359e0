import { type CallToolResult, inputRequired, inputResponse, type McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { text } from './conformance-content';
import {
  declaredBy,
  declaredInMeta,
  missingTasksCapability,
  TaskBook,
  type TaskRecord,
  type TaskStatus,
} from './task-book';

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

export { TASKS_EXTENSION } from './task-book';

type Json = Record<string, unknown>;

export interface ConformanceTasks {
  /** Adds the tools and the task methods to one server instance. */
  register(server: McpServer): void;
  close(): void;
}

const TTL_MS = 300_000;
const POLL_INTERVAL_MS = 100;
/** How long a step of a task takes (to input_required, to its result after an answer, to its end). */
const STEP_MS = 50;
/** The tools that run only as a task (the everything-server's `taskSupport: required`). */
const TASK_ONLY_TOOLS: ReadonlySet<string> = new Set([
  'failing_job',
  'protocol_error_job',
  'confirm_delete',
  'multi_input',
  'test_tool_with_task',
]);

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
  if (declaredInMeta(body.params?._meta)) return undefined;
  const error = missingTasksCapability();
  return Response.json(
    { jsonrpc: '2.0', id: body.id ?? null, error: { code: error.code, message: error.message, data: error.data } },
    { status: 400 },
  );
}

const elicit = (message: string, properties: Json, required: string[]): Json => ({
  method: 'elicitation/create',
  params: { mode: 'form', message, requestedSchema: { type: 'object', properties, required } },
});

export function createConformanceTasks(): ConformanceTasks {
  const book = new TaskBook({ ttlMs: TTL_MS, pollIntervalMs: POLL_INTERVAL_MS });
  const later = (task: TaskRecord, ms: number, step: () => void) => book.later(task, ms, step);
  const update = (task: TaskRecord, status: TaskStatus, statusMessage?: string) =>
    book.update(task, status, statusMessage);
  const complete = (task: TaskRecord, result: CallToolResult) => book.complete(task, result);
  const ask = (task: TaskRecord, requests: Record<string, [Json, (response: Json) => void]>, message: string) =>
    book.ask(task, requests, message);
  const create = (): TaskRecord => book.create('tools/call');
  const handle = (task: TaskRecord) => book.handle(task) as never;

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
        if (!declaredBy(ctx)) {
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

    book.registerTaskMethods(server.server);
  };

  return {
    register,
    close: () => book.close(),
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
