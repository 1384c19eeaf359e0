import type { CatalogScope } from '../catalog/catalog';
import { errorResponse } from '../http/errors';
import type { ExchangeContext } from '../http/exchange';
import { type AcceptPreference, accepted, messageResponse } from '../http/responses';
import { describeError } from '../observability/logger';
import { exposedNameOf, needsConfirmation } from '../policy/confirm-tools';
import { GatewayError, httpStatusOf, rpcError } from '../protocol/errors';
import type { ClientMessage } from '../protocol/jsonrpc';
import { isLogLevel, LOG_LEVELS } from '../protocol/log-levels';
import { LIST_METHODS, listingKindOf } from '../protocol/methods';
import type { JSONRPCNotification, JSONRPCRequest } from '../protocol/types';
import { upstreamRequestId } from '../relay/ids';
import type { LoadedSession } from '../state/store';
import { relayCall } from './call-relay';
import type { LegacyDeps } from './deps';
import { sessionCaller } from './session-caller';

export interface SessionExchange {
  deps: LegacyDeps;
  loaded: LoadedSession;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  headers: Record<string, string>;
}

/**
 * Everything a 2025-era client sends within a session, after the session was loaded and checked,
 * except answers (legacy-path.ts hands those to answer.ts with their one pending record).
 */
export async function handleSessionMessage(
  ctx: SessionExchange,
  message: Exclude<ClientMessage, { kind: 'response' }>,
): Promise<Response> {
  switch (message.kind) {
    case 'notification':
      await handleNotification(ctx, message.message);
      return accepted(ctx.headers);
    case 'request':
      return handleRequest(ctx, message.message);
  }
}

async function handleNotification(ctx: SessionExchange, notification: JSONRPCNotification): Promise<void> {
  const { deps, loaded } = ctx;
  switch (notification.method) {
    case 'notifications/cancelled': {
      const params = notification.params as { requestId?: string | number; reason?: unknown } | undefined;
      if (params?.requestId === undefined) return;
      const upstreamId = upstreamRequestId(params.requestId);
      const reason = typeof params.reason === 'string' ? params.reason : undefined;
      // Held here: the call stops, and its target is told with the client's reason.
      const held = deps.activeCalls.get(loaded.session.id, upstreamId);
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
          params: { ...notification.params, requestId: upstreamId },
        }),
        deps.store
          .markCancelled(loaded.session.id, upstreamId, loaded.session.expiresAt)
          .catch((error) => deps.logger.warn('cancellation marker not written', { error: describeError(error) })),
      ]);
      deps.logger.info('the client cancelled a call held by another instance', { sessionId: loaded.session.id });
      return;
    }
    case 'notifications/roots/list_changed':
      await forEachTargetSession(ctx, notification);
      return;
    default:
      // notifications/initialized and anything else: accepted, nothing to relay.
      deps.logger.debug('notification accepted', { sessionId: loaded.session.id, method: notification.method });
  }
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

async function handleRequest(ctx: SessionExchange, request: JSONRPCRequest): Promise<Response> {
  const { deps, loaded, accept, exchange, headers } = ctx;
  const caller = sessionCaller(deps.store, loaded, accept.sse);
  const scope: CatalogScope = { caller, signal: exchange.signal };
  const params = (request.params ?? {}) as Record<string, unknown>;
  const reply = (result: Record<string, unknown>) =>
    messageResponse({ jsonrpc: '2.0', id: request.id, result }, accept, headers);
  const relay = (
    target: string,
    upstreamParams: Record<string, unknown>,
    confirm?: { exposedName: string; tool: string },
  ) =>
    relayCall({
      deps,
      loaded,
      caller,
      accept,
      exchange,
      request,
      target,
      params: upstreamParams,
      responseHeaders: headers,
      confirm,
    });
  deps.logger.debug('request', { sessionId: loaded.session.id, method: request.method });

  try {
    const listKind = listingKindOf(request.method);
    if (listKind) {
      if (params.cursor !== undefined) {
        // The gateway answers every list in one page, so it never hands out cursors.
        throw new GatewayError('InvalidParams', 'Invalid params: unknown cursor');
      }
      const { items } = await deps.catalog.aggregate(listKind, scope);
      return reply({ [LIST_METHODS[listKind].field]: items });
    }
    switch (request.method) {
      case 'ping':
        return reply({});
      case 'initialize':
        throw new GatewayError('InvalidRequest', 'Invalid Request: the session is already initialized');
      case 'tools/call':
      case 'prompts/get': {
        const kind = request.method === 'tools/call' ? 'tool' : 'prompt';
        const { target, name } = await deps.catalog.resolveNamed(params.name, kind, scope);
        // Policy before forwarding: the gateway asks the user itself for listed tools.
        const confirm =
          kind === 'tool' && needsConfirmation(deps.config.confirmTools, target, name)
            ? { exposedName: exposedNameOf(params.name, name), tool: name }
            : undefined;
        return await relay(target, { ...params, name }, confirm);
      }
      case 'resources/read':
        return await relay(await deps.catalog.resolveResource(params.uri, scope), params);
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        // Routed by URI as a read is; the updates come on the target session's GET stream, which the
        // session's client GET stream listens to (client-stream.ts). Without one there is nothing to route.
        if (deps.config.clientStreamHoldSeconds === 0) {
          throw new GatewayError('MethodNotFound', `Method not found: ${request.method}`);
        }
        return await relay(await deps.catalog.resolveResource(params.uri, scope), params);
      case 'completion/complete': {
        const ref = params.ref as { type?: string; name?: unknown; uri?: unknown } | undefined;
        if (ref?.type === 'ref/prompt') {
          const { target, name } = await deps.catalog.resolveNamed(ref.name, 'prompt', scope);
          return await relay(target, { ...params, ref: { ...ref, name } });
        }
        if (ref?.type === 'ref/resource')
          return await relay(await deps.catalog.resolveTemplate(ref.uri, scope), params);
        throw new GatewayError('InvalidParams', 'Invalid params: ref must be ref/prompt or ref/resource');
      }
      case 'logging/setLevel':
        await setLevel(ctx, params.level);
        return reply({});
      default:
        throw new GatewayError('MethodNotFound', `Method not found: ${request.method}`);
    }
  } catch (error) {
    if (!(error instanceof GatewayError) || httpStatusOf(error) >= 500 || error.spec.retryable) {
      deps.logger.warn('request failed', {
        sessionId: loaded.session.id,
        method: request.method,
        error: describeError(error),
      });
    }
    if (httpStatusOf(error) !== 200) return errorResponse(request.id, error, headers);
    return messageResponse(rpcError(request.id, error), accept, headers);
  }
}

/**
 * logging/setLevel: kept in the session (every later target session gets it at initialize, and
 * 2026-07-28 targets get it in `_meta` on every request) and sent to the legacy targets now.
 */
async function setLevel(ctx: SessionExchange, level: unknown): Promise<void> {
  const { deps, loaded, exchange } = ctx;
  if (!isLogLevel(level)) {
    throw new GatewayError('InvalidParams', `Invalid params: level must be one of ${LOG_LEVELS.join(', ')}`);
  }
  await deps.store.setLogLevel(loaded.session, level);
  loaded.session.logLevel = level;
  const caller = sessionCaller(deps.store, loaded, ctx.accept.sse);
  await Promise.all(
    deps.targets.names.map(async (target) => {
      try {
        const upstream = await deps.targets.open(target, caller, exchange.signal);
        await upstream.call({ method: 'logging/setLevel', params: { level } }, { signal: exchange.signal });
      } catch (error) {
        deps.logger.warn('logging/setLevel not relayed', { target, error: describeError(error) });
      }
    }),
  );
}
