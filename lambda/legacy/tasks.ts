import type { TaskIdSealer } from '../crypto/task-ids';
import { describeError } from '../observability/logger';
import { GatewayError } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { InitializeResult, JSONRPCNotification, JSONRPCRequest } from '../protocol/types';
import type { LoadedSession, SessionRecord } from '../state/store';
import type { SessionStreamListener, StandaloneStreams } from '../targets/standalone-streams';
import type { Caller, TargetCallOptions, TargetCallRequest, TargetLink } from '../targets/target-link';
import type { Targets } from '../targets/targets';
import type { LegacyDeps } from './deps';

/**
 * Tasks of MCP 2025-11-25 (experimental, in the core protocol) through a 2025 session: a target's
 * task reaches the client with the gateway's task id, and every task request finds its target by it.
 *
 * - The id is the target's own, sealed with the target and the session's principal (crypto/task-ids.ts,
 *   the keys of `requestState`), valid for the task's `ttl` from its `createdAt` (at most
 *   `taskIdMaxTtlSeconds`; a `createdAt` in the future counts as the gateway's now). Nothing is stored: any instance opens it. The sealed target is tagged
 *   `legacy/` (target names have no `/`), so the 2026-07-28 path never routes a 2025 task's id, nor this
 *   path a Tasks-extension id.
 * - Where a target's id goes to the client it is replaced: a `CreateTaskResult` (`task.taskId`), the
 *   task of `tasks/get` and `tasks/cancel`, `notifications/tasks/status` (on a call's stream or the
 *   session's GET stream), and the related-task `_meta` of anything (a task's question, its result).
 *   The client's own id goes back in what answers a request naming it; any other is the id this
 *   instance last issued or accepted for that task, else a new one (a sealed id is random, so a task
 *   listed or announced on another instance may reach the client under a second id; both open to it).
 * - `tasks/get`, `tasks/result`, `tasks/cancel` are relayed calls (legacy/call-relay.ts: a task's result
 *   waits, and its questions reach the client as any call's); an id altered, made up, another
 *   principal's or past its time is refused as a v1 server refuses a task it does not know (-32602),
 *   before any target is called. `tasks/list` is every listing target's list of this session's tasks.
 */

/** The related-task `_meta` key (2025-11-25): on a task's messages, naming the task. */
export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';

/** Inside a sealed id, before the target's name: a task of a 2025 session. */
const ERA_TAG = 'legacy/';

/** The task a request names, once its gateway id was opened. */
export interface NamedTask {
  target: string;
  /** The target's own id. */
  taskId: string;
  /** The id the client sent. */
  gatewayId: string;
}

/**
 * The gateway id this instance last issued or accepted per (principal, target, target's task id), so a
 * task announced or listed here keeps the id its client knows. Bounded: the oldest go first.
 */
const recentIds = new Map<string, string>();
const MAX_RECENT_IDS = 10_000;

function remember(key: string, gatewayId: string): void {
  recentIds.delete(key);
  recentIds.set(key, gatewayId);
  if (recentIds.size > MAX_RECENT_IDS) recentIds.delete(recentIds.keys().next().value as string);
}

/** The gateway's task ids of one principal: sealed, opened, and put in place of the target's. */
export class SessionTasks {
  constructor(
    private readonly sealer: TaskIdSealer,
    readonly principal: string,
    /** The task the request at hand names: its own id goes back where the target names that task. */
    private readonly named?: NamedTask,
  ) {}

  /** The gateway id of a target's task (`ttl` in ms from `createdAt`, as the spec's Task gives them). */
  gatewayId(target: string, task: { taskId: string; ttl?: unknown; createdAt?: unknown }): string {
    const { named } = this;
    if (named && named.target === target && named.taskId === task.taskId) return named.gatewayId;
    const key = `${this.principal}\u0000${target}\u0000${task.taskId}`;
    const recent = recentIds.get(key);
    if (recent !== undefined && this.sealer.open(recent, this.principal).ok) return recent;
    const sealed = this.sealer.seal(
      { target: `${ERA_TAG}${target}`, taskId: task.taskId, principal: this.principal },
      { ttlMs: task.ttl, createdAt: task.createdAt },
    );
    remember(key, sealed);
    return sealed;
  }

  /** The task a gateway id names, or the refusal a v1 server gives for a task it does not know. */
  open(method: string, gatewayId: unknown): NamedTask {
    if (typeof gatewayId !== 'string') {
      throw new GatewayError('InvalidParams', `Invalid params: ${method} needs params.taskId (a string)`);
    }
    const opened = this.sealer.open(gatewayId, this.principal);
    if (!opened.ok || !opened.task.target.startsWith(ERA_TAG)) {
      const reason = opened.ok ? 'unknown' : opened.reason === 'expired' ? 'expired' : 'unknown';
      // The v1 SDK server's words for an unknown task (tasks/get has its own).
      const message =
        method === 'tasks/get' ? 'Failed to retrieve task: Task not found' : `Task not found: ${gatewayId}`;
      throw new GatewayError(
        'InvalidParams',
        reason === 'expired' ? `${message} (its id expired with the task's ttl)` : message,
        { reason },
      );
    }
    const named = { target: opened.task.target.slice(ERA_TAG.length), taskId: opened.task.taskId, gatewayId };
    remember(`${this.principal}\u0000${named.target}\u0000${named.taskId}`, gatewayId);
    return named;
  }

  /** What a target sends about its tasks, with the gateway's ids (a status, a task's log message or progress). */
  notification(target: string, notification: JSONRPCNotification): JSONRPCNotification {
    const params = notification.params as Record<string, unknown> | undefined;
    if (!params) return notification;
    if (notification.method === 'notifications/tasks/status' && typeof params.taskId === 'string') {
      const task = params as { taskId: string; ttl?: unknown; createdAt?: unknown };
      return {
        ...notification,
        params: { ...this.withRelatedTask(target, params), taskId: this.gatewayId(target, task) },
      };
    }
    const rewritten = this.withRelatedTask(target, params);
    return rewritten === params ? notification : { ...notification, params: rewritten };
  }

  /** A target's request to the client (a question of a task), its related task named by the gateway id. */
  serverRequest(target: string, request: JSONRPCRequest): JSONRPCRequest {
    const params = request.params as Record<string, unknown> | undefined;
    if (!params) return request;
    const rewritten = this.withRelatedTask(target, params);
    return rewritten === params ? request : { ...request, params: rewritten };
  }

  /** The target's answer to `request`, with the gateway's ids where the target named its tasks. */
  response(target: string, request: TargetCallRequest, response: JSONRPCResponse): JSONRPCResponse {
    const { named } = this;
    if ('error' in response) {
      // "Task not found: <id>": the id the client knows.
      if (!named || !response.error.message.includes(named.taskId)) return response;
      const message = response.error.message.split(named.taskId).join(named.gatewayId);
      return { ...response, error: { ...response.error, message } };
    }
    let result = this.withRelatedTask(target, response.result as Record<string, unknown>);
    const task = result.task as { taskId?: unknown } | undefined;
    if (request.method === 'tools/call' && request.params.task !== undefined && typeof task?.taskId === 'string') {
      // A CreateTaskResult: the task as the client will name it.
      const created = task as { taskId: string; ttl?: unknown; createdAt?: unknown };
      result = { ...result, task: { ...created, taskId: this.gatewayId(target, created) } };
    } else if (
      (request.method === 'tasks/get' || request.method === 'tasks/cancel') &&
      typeof result.taskId === 'string'
    ) {
      const own = result as { taskId: string; ttl?: unknown; createdAt?: unknown };
      result = { ...result, taskId: this.gatewayId(target, own) };
    }
    return result === response.result ? response : { ...response, result };
  }

  /** `params` (or a result) whose `_meta` names a task of `target`, naming it by the gateway id. */
  private withRelatedTask(target: string, params: Record<string, unknown>): Record<string, unknown> {
    const meta = params._meta as Record<string, unknown> | undefined;
    const related = meta?.[RELATED_TASK_META] as { taskId?: unknown } | undefined;
    if (typeof related?.taskId !== 'string') return params;
    const taskId = this.gatewayId(target, { taskId: related.taskId });
    return { ...params, _meta: { ...meta, [RELATED_TASK_META]: { ...related, taskId } } };
  }
}

/**
 * The legacy path's deps as one request of a session uses them: every target link it opens, and the
 * GET streams it listens to, hand the client the gateway's task ids (`SessionTasks`). A view of the
 * instance's `Targets` (its own object, delegating everything else), so the relay and the client
 * stream need not know tasks exist. A session whose client did not declare `tasks` has no task at any
 * target (none is declared to them: protocol/capabilities.ts), so its requests use `deps` as they are:
 * nothing is wrapped or rewritten on their hot path (its task requests are refused: ./routes.ts).
 */
export function withTaskIds(
  deps: LegacyDeps,
  session: Pick<SessionRecord, 'principal' | 'clientCapabilities'>,
  named?: NamedTask,
): LegacyDeps {
  if (!(session.clientCapabilities as { tasks?: unknown } | undefined)?.tasks) return deps;
  const tasks = new SessionTasks(deps.taskIds, session.principal, named);
  const targets = deps.targets;
  const streams = targets.streams;
  const streamsView: StandaloneStreams = Object.create(streams, {
    listen: {
      value: (...[client, session, owner, options]: Parameters<StandaloneStreams['listen']>) => {
        const listener: SessionStreamListener = {
          onServerRequest: (request) => owner.onServerRequest(tasks.serverRequest(client.name, request)),
          onNotification: (notification) => owner.onNotification(tasks.notification(client.name, notification)),
          onGone: () => owner.onGone(),
        };
        return streams.listen(client, session, listener, options);
      },
    },
  });
  const targetsView: Targets = Object.create(targets, {
    streams: { value: streamsView },
    open: {
      value: async (name: string, caller: Caller, signal?: AbortSignal) =>
        linkWithTaskIds(await targets.open(name, caller, signal), tasks),
    },
  });
  return { ...deps, targets: targetsView };
}

function linkWithTaskIds(link: TargetLink, tasks: SessionTasks): TargetLink {
  return {
    get target() {
      return link.target;
    },
    get era() {
      return link.era;
    },
    get session() {
      return link.session;
    },
    async call(request: TargetCallRequest, options: TargetCallOptions): Promise<JSONRPCResponse> {
      const { onNotification, onServerRequest } = options;
      const response = await link.call(request, {
        ...options,
        onNotification:
          onNotification && ((notification) => onNotification(tasks.notification(link.target, notification))),
        onServerRequest:
          onServerRequest && ((serverRequest) => onServerRequest(tasks.serverRequest(link.target, serverRequest))),
      });
      return tasks.response(link.target, request, response);
    },
    reply: (message) => link.reply(message),
    notify: (notification, signal) => link.notify(notification, signal),
    serverCapabilities: (signal) => link.serverCapabilities(signal),
  };
}

/** What the gateway's `initialize` declares of tasks: what its legacy targets declared, merged. */
export type ServerTasksCapability = NonNullable<InitializeResult['capabilities']['tasks']>;

/** How long `initialize` waits for the targets' handshakes to learn whether any has tasks. */
const TASKS_PROBE_MS = 5000;

/**
 * The tasks capability the gateway declares in a session's `initialize` result: `requests.tools.call`,
 * `list`, `cancel` each when some legacy target of the session declared it. Learning it opens the
 * session's target sessions now (the client's first list would; the same ones are kept), within
 * `TASKS_PROBE_MS`; a target that fails or is slower is left out of the declaration, not the session.
 */
export async function tasksOfTargets(
  deps: LegacyDeps,
  caller: Caller,
  signal: AbortSignal,
): Promise<ServerTasksCapability | undefined> {
  const bounded = AbortSignal.any([signal, AbortSignal.timeout(TASKS_PROBE_MS)]);
  const declared = await Promise.all(
    deps.targets.names.map(async (name) => {
      try {
        const targetLink = await deps.targets.open(name, caller, bounded);
        if (targetLink.era !== 'legacy') return undefined; // a 2026-07-28 target's tasks are not bridged
        const capabilities = await targetLink.serverCapabilities(bounded);
        return capabilities?.tasks as ServerTasksCapability | undefined;
      } catch (error) {
        deps.logger.warn('target left out of the tasks declaration', { target: name, error: describeError(error) });
        return undefined;
      }
    }),
  );
  let merged: ServerTasksCapability | undefined;
  for (const tasks of declared) {
    if (!tasks || typeof tasks !== 'object') continue;
    merged ??= {};
    if (tasks.requests?.tools?.call !== undefined) merged.requests = { tools: { call: {} } };
    if (tasks.list !== undefined) merged.list = {};
    if (tasks.cancel !== undefined) merged.cancel = {};
  }
  return merged;
}

/** At most this many pages of one target's `tasks/list` (as the catalog's lists). */
const MAX_TASK_PAGES = 50;

/**
 * `tasks/list`: the tasks of this session at each of its target sessions whose target declared
 * `tasks.list`, with the gateway's ids, in one page (as every list of the gateway: a cursor it never
 * issued is -32602). A target that fails is left out and logged, as in the other lists.
 */
export async function listSessionTasks(
  deps: LegacyDeps,
  loaded: LoadedSession,
  caller: Caller,
  params: Record<string, unknown>,
  signal: AbortSignal,
): Promise<Record<string, unknown>> {
  if (params.cursor !== undefined) throw new GatewayError('InvalidParams', 'Invalid params: unknown cursor');
  const tasks = new SessionTasks(deps.taskIds, loaded.session.principal);
  const listing = [...loaded.targets.values()].filter((record) => {
    const declared = record.serverCapabilities?.tasks as ServerTasksCapability | undefined;
    return record.serverCapabilities === undefined || declared?.list !== undefined;
  });
  const perTarget = await Promise.all(
    listing.map(async ({ target }) => {
      try {
        const targetLink = await deps.targets.open(target, caller, signal);
        if (targetLink.era !== 'legacy') return [];
        const found: Record<string, unknown>[] = [];
        let cursor: unknown;
        for (let page = 0; page < MAX_TASK_PAGES; page++) {
          const response = await targetLink.call(
            { method: 'tasks/list', params: cursor === undefined ? {} : { cursor } },
            { signal },
          );
          if ('error' in response)
            throw new Error(`tasks/list answered ${response.error.code}: ${response.error.message}`);
          const result = response.result as { tasks?: unknown; nextCursor?: unknown };
          for (const task of Array.isArray(result.tasks) ? result.tasks : []) {
            if (typeof task?.taskId !== 'string') continue;
            found.push({ ...task, taskId: tasks.gatewayId(target, task) });
          }
          cursor = result.nextCursor;
          if (typeof cursor !== 'string') break;
        }
        return found;
      } catch (error) {
        if (signal.aborted) throw error;
        deps.logger.warn('target left out of tasks/list', { target, error: describeError(error) });
        return [];
      }
    }),
  );
  return { tasks: perTarget.flat() };
}
