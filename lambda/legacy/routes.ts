import type { CallerIdentity } from '../auth/identity';
import type { CatalogScope } from '../catalog/catalog';
import type { ExchangeContext } from '../http/exchange';
import { type AcceptPreference, messageResponse } from '../http/responses';
import { describeError } from '../observability/logger';
import { exposedNameOf, needsConfirmation } from '../policy/confirm-tools';
import { GatewayError } from '../protocol/errors';
import { isLogLevel, LOG_LEVELS } from '../protocol/log-levels';
import { LIST_METHODS, listingKindOf, type Route, type RoutingTable, routingTable } from '../protocol/methods';
import type { JSONRPCNotification, JSONRPCRequest } from '../protocol/types';
import type { LoadedSession } from '../state/store';
import type { Caller } from '../targets/target-link';
import { relayCall } from './call-relay';
import type { LegacyDeps } from './deps';
import { targetCallIdOf } from './ids';
import { sessionCaller } from './session-caller';
import { listSessionTasks, type NamedTask, SessionTasks, withTaskIds } from './tasks';

/**
 * The legacy era's routing table: every request method a session serves, with its name source, whether
 * it is safe to resend (protocol/methods.ts) and its handler. A method not in the table is -32601
 * (session-router.ts). Notifications have a table of their own below: they name nothing and get no answer.
 */

/** A message of a loaded, checked session, and what its answer needs. */
export interface SessionExchange {
  deps: LegacyDeps;
  /** Who sent this request (the session's principal; its claims as of this request's token). */
  identity: CallerIdentity;
  loaded: LoadedSession;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  headers: Record<string, string>;
  /**
   * A call started before its session's read returned (read-ahead, ./legacy-path.ts): settles with that
   * read, rejecting when the session is gone. Nothing new is opened at a target before it settles.
   */
  sessionRead?: Promise<void>;
}

/** One request within a loaded session, as its handler sees it. */
export interface SessionRequest {
  ctx: SessionExchange;
  request: JSONRPCRequest;
  route: Route<SessionRequestHandler>;
  params: Record<string, unknown>;
  caller: Caller;
  scope: CatalogScope;
}

export type SessionRequestHandler = (r: SessionRequest) => Promise<Response>;

export const SESSION_ROUTES: RoutingTable<SessionRequestHandler> = routingTable({
  ping: async (r) => reply(r, {}),
  initialize: async () => {
    throw new GatewayError('InvalidRequest', 'Invalid Request: the session is already initialized');
  },
  'tools/list': list,
  'prompts/list': list,
  'resources/list': list,
  'resources/templates/list': list,
  'tools/call': relayNamed,
  'prompts/get': relayNamed,
  'resources/read': relayNamed,
  'resources/subscribe': subscription,
  'resources/unsubscribe': subscription,
  'completion/complete': relayNamed,
  'logging/setLevel': async (r) => {
    await setLevel(r, r.params.level);
    return reply(r, {});
  },
  // 2025-11-25's tasks (experimental): routed by the gateway's task id (./tasks.ts).
  'tasks/get': relayTask,
  'tasks/result': relayTask,
  'tasks/cancel': relayTask,
  'tasks/list': async (r) =>
    reply(r, await listSessionTasks(r.ctx.deps, r.ctx.loaded, r.caller, r.params, r.ctx.exchange.signal)),
});

function reply(r: SessionRequest, result: Record<string, unknown>): Response {
  return messageResponse({ jsonrpc: '2.0', id: r.request.id, result }, r.ctx.accept, r.ctx.headers);
}

/** Every target's listing, merged into one page. */
async function list(r: SessionRequest): Promise<Response> {
  const kind = listingKindOf(r.route.method);
  if (!kind) throw new Error(`not a list method: ${r.route.method}`);
  if (r.params.cursor !== undefined) {
    // The gateway answers every list in one page, so it never hands out cursors.
    throw new GatewayError('InvalidParams', 'Invalid params: unknown cursor');
  }
  const { items } = await r.ctx.deps.catalog.aggregate(kind, r.scope);
  return reply(r, { [LIST_METHODS[kind].field]: items });
}

/** A call relayed to the one target its name source resolves to (the name rewritten to the target's own). */
async function relayNamed(r: SessionRequest): Promise<Response> {
  const { deps } = r.ctx;
  const { params, scope } = r;
  switch (r.route.nameSource) {
    case 'name': {
      const kind = r.route.method === 'tools/call' ? 'tool' : 'prompt';
      const { target, name } = await deps.catalog.resolveNamed(params.name, kind, scope);
      if (kind === 'tool') deps.catalog.authorizeCall(params.name, { target, name }, params.arguments, scope);
      // Policy before forwarding: the gateway asks the user itself for listed tools.
      const confirm =
        kind === 'tool' && needsConfirmation(deps.config.confirmTools, target, name)
          ? { exposedName: exposedNameOf(params.name, name), tool: name }
          : undefined;
      return relay(r, target, { ...params, name }, { confirm });
    }
    case 'uri':
      return relay(r, await deps.catalog.resolveResource(params.uri, scope), params);
    case 'ref': {
      const ref = params.ref as { type?: string; name?: unknown; uri?: unknown } | undefined;
      if (ref?.type === 'ref/prompt') {
        const { target, name } = await deps.catalog.resolveNamed(ref.name, 'prompt', scope);
        return relay(r, target, { ...params, ref: { ...ref, name } });
      }
      if (ref?.type === 'ref/resource') return relay(r, await deps.catalog.resolveTemplate(ref.uri, scope), params);
      throw new GatewayError('InvalidParams', 'Invalid params: ref must be ref/prompt or ref/resource');
    }
    default:
      throw new Error(`${r.route.method} names no target`);
  }
}

/**
 * A task request, to the target whose task the gateway id names (opened first: anything else is refused
 * as an unknown task, and no target is called), with the target's own id; relayed as a call, so a task's
 * result may wait and its questions reach the client (./tasks.ts).
 */
async function relayTask(r: SessionRequest): Promise<Response> {
  const named = new SessionTasks(r.ctx.deps.taskIds, r.ctx.loaded.session.principal).open(
    r.route.method,
    r.params.taskId,
  );
  if (!r.ctx.deps.targets.names.includes(named.target)) {
    r.ctx.deps.logger.info('task id of a target no longer configured', { method: r.route.method });
    throw new GatewayError('InvalidParams', `Task not found: ${named.gatewayId}`, { reason: 'unknown' });
  }
  // A session whose client did not declare tasks has none (its answers are not given the gateway's ids:
  // ./tasks.ts withTaskIds), though its principal's other sessions may: the target's own id stays there.
  if (!(r.ctx.loaded.session.clientCapabilities as { tasks?: unknown } | undefined)?.tasks) {
    throw new GatewayError('InvalidParams', `Task not found: ${named.gatewayId} (this session did not declare tasks)`, {
      reason: 'unknown',
    });
  }
  return relay(r, named.target, { ...r.params, taskId: named.taskId }, { task: named });
}

/**
 * Routed by URI as a read is; the updates come on the target session's GET stream, which the session's
 * client GET stream listens to (client-stream.ts). Without one there is nothing to route.
 */
async function subscription(r: SessionRequest): Promise<Response> {
  if (r.ctx.deps.config.clientStreamHoldSeconds === 0) {
    throw new GatewayError('MethodNotFound', `Method not found: ${r.request.method}`);
  }
  return relayNamed(r);
}

/**
 * Every relayed call hands the client the gateway's task ids (./tasks.ts): a task-augmented tools/call's
 * task, a task request's answer, and whatever names a task on the call's stream (a task's status, heard
 * on the target session's GET stream, may ride any call of the session).
 */
function relay(
  r: SessionRequest,
  target: string,
  params: Record<string, unknown>,
  options: { confirm?: { exposedName: string; tool: string }; task?: NamedTask } = {},
): Promise<Response> {
  const { deps, loaded, accept, exchange, headers } = r.ctx;
  const { confirm, task } = options;
  return relayCall({
    deps: withTaskIds(deps, loaded.session, task),
    loaded,
    caller: r.caller,
    accept,
    exchange,
    request: r.request,
    target,
    params,
    responseHeaders: headers,
    confirm,
    sessionRead: r.ctx.sessionRead,
  });
}

/**
 * logging/setLevel: kept in the session (every later target session gets it at initialize, and
 * 2026-07-28 targets get it in `_meta` on every request) and sent to the legacy targets now.
 */
async function setLevel(r: SessionRequest, level: unknown): Promise<void> {
  const { deps, loaded, exchange, accept, identity } = r.ctx;
  if (!isLogLevel(level)) {
    throw new GatewayError('InvalidParams', `Invalid params: level must be one of ${LOG_LEVELS.join(', ')}`);
  }
  await deps.store.setLogLevel(loaded.session, level);
  loaded.session.logLevel = level;
  const caller = sessionCaller(deps, loaded, identity, accept.sse);
  await Promise.all(
    deps.targets.names.map(async (target) => {
      try {
        const targetLink = await deps.targets.open(target, caller, exchange.signal);
        await targetLink.call({ method: 'logging/setLevel', params: { level } }, { signal: exchange.signal });
      } catch (error) {
        deps.logger.warn('logging/setLevel not relayed', { target, error: describeError(error) });
      }
    }),
  );
}

export type SessionNotificationHandler = (ctx: SessionExchange, notification: JSONRPCNotification) => Promise<void>;

/** The notifications a session acts on; any other (`notifications/initialized`, …) is accepted and dropped. */
export const SESSION_NOTIFICATIONS: ReadonlyMap<string, SessionNotificationHandler> = new Map([
  ['notifications/cancelled', cancelled],
  ['notifications/roots/list_changed', forEachTargetSession],
]);

async function cancelled(ctx: SessionExchange, notification: JSONRPCNotification): Promise<void> {
  const { deps, loaded } = ctx;
  const params = notification.params as { requestId?: string | number; reason?: unknown } | undefined;
  if (params?.requestId === undefined) return;
  const targetCallId = targetCallIdOf(params.requestId);
  const reason = typeof params.reason === 'string' ? params.reason : undefined;
  // Held here: the call stops, and its target is told with the client's reason.
  const held = deps.activeCalls.get(loaded.session.id, targetCallId);
  if (held) {
    held.cancelByClient(reason);
    return;
  }
  // Held by another instance: every target of the session is told (unknown ids are ignored), and a
  // marker lets the holding instance end the call even when its target keeps the stream open.
  await Promise.all([
    forEachTargetSession(ctx, {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { ...notification.params, requestId: targetCallId },
    }),
    deps.store
      .markCancelled(loaded.session.id, targetCallId, loaded.session.expiresAt)
      .catch((error) => deps.logger.warn('cancellation marker not written', { error: describeError(error) })),
  ]);
  deps.logger.info('the client cancelled a call held by another instance', { sessionId: loaded.session.id });
}

async function forEachTargetSession(ctx: SessionExchange, notification: JSONRPCNotification): Promise<void> {
  await Promise.all(
    [...ctx.loaded.targets.values()].map((record) =>
      ctx.deps.targets
        .deliver(
          record.target,
          { targetSessionId: record.targetSessionId, protocolVersion: record.protocolVersion },
          notification,
        )
        .catch((error) =>
          ctx.deps.logger.warn('notification to target failed', { target: record.target, error: describeError(error) }),
        ),
    ),
  );
}
