import type { CatalogScope } from '../catalog/catalog';
import { errorResponse } from '../http/errors';
import { accepted, messageResponse } from '../http/responses';
import { describeError } from '../observability/logger';
import { GatewayError, httpStatusOf, rpcError } from '../protocol/errors';
import type { ClientMessage } from '../protocol/jsonrpc';
import type { JSONRPCNotification, JSONRPCRequest } from '../protocol/types';
import { SESSION_NOTIFICATIONS, SESSION_ROUTES, type SessionExchange } from './routes';
import { sessionCaller } from './session-caller';

/**
 * Everything a legacy-era client sends within a session, after the session was loaded and checked,
 * except answers (legacy-path.ts hands those to answer.ts with their one pending record). What each
 * method does is in the era's routing table (./routes.ts); here: the lookup, the unknown method, and
 * how a failure is answered.
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
  const handler = SESSION_NOTIFICATIONS.get(notification.method);
  if (handler) return handler(ctx, notification);
  // notifications/initialized and anything else: accepted, nothing to relay.
  ctx.deps.logger.debug('notification accepted', { sessionId: ctx.loaded.session.id, method: notification.method });
}

async function handleRequest(ctx: SessionExchange, request: JSONRPCRequest): Promise<Response> {
  const { deps, loaded, accept, exchange, headers } = ctx;
  const caller = sessionCaller(deps, loaded, ctx.identity, accept.sse, ctx.sessionRead);
  const scope: CatalogScope = { caller, signal: exchange.signal };
  const params = (request.params ?? {}) as Record<string, unknown>;
  deps.logger.debug('request', { sessionId: loaded.session.id, method: request.method });

  try {
    const route = SESSION_ROUTES.get(request.method);
    if (!route) throw new GatewayError('MethodNotFound', `Method not found: ${request.method}`);
    return await route.handler({ ctx, request, route, params, caller, scope });
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
