import type {
  JSONRPCNotification,
  JSONRPCRequest,
  Prompt,
  Resource,
  ResourceTemplate,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { confirmThenRelay, legacyCallNeedsConfirmation } from '../confirm/legacy-confirm';
import type { GatewayDeps } from '../core/deps';
import { GatewayError, statusFor, toRpcError } from '../core/errors';
import type { ExchangeContext } from '../core/exchange';
import { type AcceptPreference, accepted, jsonResponse, messageResponse } from '../core/http';
import { type ClientMessage, RpcCode } from '../core/jsonrpc';
import { describeError } from '../core/logger';
import type { LoadedSession } from '../state/store';
import { exposeByUri, exposeNamed, listFromTargets } from './aggregate';
import { deliverAnswer } from './answer';
import { upstreamRequestId } from './ids';
import { relayCall } from './relay';
import { Router } from './routing';
import { TargetSessions } from './target-sessions';

const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

export interface SessionExchange {
  deps: GatewayDeps;
  loaded: LoadedSession;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  headers: Record<string, string>;
}

/** Everything a 2025-era client sends within a session, after the session was loaded and checked. */
export async function handleSessionMessage(ctx: SessionExchange, message: ClientMessage): Promise<Response> {
  switch (message.kind) {
    case 'response':
      return deliverAnswer(ctx.deps, ctx.loaded, message.message, ctx.headers);
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
      const requestId = (notification.params as { requestId?: string | number } | undefined)?.requestId;
      if (requestId === undefined) return;
      // The call may stream from another instance: tell every target of the session; unknown ids are ignored.
      await forEachTargetSession(ctx, {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { ...notification.params, requestId: upstreamRequestId(requestId) },
      });
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
    [...ctx.loaded.targets.values()].map(async (record) => {
      const client = ctx.deps.targets.get(record.target);
      await client
        ?.send({ targetSessionId: record.targetSessionId, protocolVersion: record.protocolVersion }, notification)
        .catch((error) =>
          ctx.deps.logger.warn('notification to target failed', { target: record.target, error: describeError(error) }),
        );
    }),
  );
}

async function handleRequest(ctx: SessionExchange, request: JSONRPCRequest): Promise<Response> {
  const { deps, loaded, accept, exchange, headers } = ctx;
  const sessions = new TargetSessions(deps, loaded);
  const router = new Router(deps, sessions, loaded.session.id, exchange.signal);
  const params = (request.params ?? {}) as Record<string, unknown>;
  const reply = (result: unknown) =>
    messageResponse({ jsonrpc: '2.0', id: request.id, result: result as Record<string, unknown> }, accept, headers);
  const relay = (target: string, upstreamParams: Record<string, unknown>) =>
    relayCall({
      deps,
      loaded,
      sessions,
      accept,
      exchange,
      request,
      target,
      params: upstreamParams,
      responseHeaders: headers,
    });
  deps.logger.debug('request', { sessionId: loaded.session.id, method: request.method });

  try {
    switch (request.method) {
      case 'ping':
        return reply({});
      case 'initialize':
        throw new GatewayError(
          RpcCode.InvalidRequest,
          'Invalid Request: the session is already initialized',
          undefined,
          400,
        );
      case 'tools/list':
      case 'prompts/list':
      case 'resources/list':
      case 'resources/templates/list': {
        if (params.cursor !== undefined) {
          // The gateway answers every list in one page, so it never hands out cursors.
          throw new GatewayError(RpcCode.InvalidParams, 'Invalid params: unknown cursor');
        }
        return reply(await aggregate(ctx, sessions, request.method));
      }
      case 'tools/call':
      case 'prompts/get': {
        const { target, name } = await router.named(params.name, request.method === 'tools/call' ? 'tool' : 'prompt');
        // --- confirmTools hook (lambda/confirm): the gateway asks the user before relaying ---
        if (legacyCallNeedsConfirmation(deps, request.method, target, name)) {
          return await confirmThenRelay({ deps, loaded, accept, exchange, request, target, tool: name, headers }, () =>
            relay(target, { ...params, name }),
          );
        }
        // --- end confirmTools hook ---
        return await relay(target, { ...params, name });
      }
      case 'resources/read':
        return await relay(await router.resource(params.uri), params);
      case 'completion/complete': {
        const ref = params.ref as { type?: string; name?: unknown; uri?: unknown } | undefined;
        if (ref?.type === 'ref/prompt') {
          const { target, name } = await router.named(ref.name, 'prompt');
          return await relay(target, { ...params, ref: { ...ref, name } });
        }
        if (ref?.type === 'ref/resource') return await relay(await router.template(ref.uri), params);
        throw new GatewayError(RpcCode.InvalidParams, 'Invalid params: ref must be ref/prompt or ref/resource');
      }
      case 'logging/setLevel': {
        const level = params.level;
        if (typeof level !== 'string' || !LOG_LEVELS.includes(level)) {
          throw new GatewayError(
            RpcCode.InvalidParams,
            `Invalid params: level must be one of ${LOG_LEVELS.join(', ')}`,
          );
        }
        await deps.store.setLogLevel(loaded.session, level);
        loaded.session.logLevel = level;
        await Promise.all(
          deps.config.targets.map(({ name: target }) =>
            sessions
              .with(target, exchange.signal, (session, client) =>
                client.request(session, {
                  jsonrpc: '2.0',
                  id: `gw-log-${request.id}`,
                  method: 'logging/setLevel',
                  params: { level },
                }),
              )
              .catch((error) =>
                deps.logger.warn('logging/setLevel not relayed', { target, error: describeError(error) }),
              ),
          ),
        );
        return reply({});
      }
      default:
        throw new GatewayError(RpcCode.MethodNotFound, `Method not found: ${request.method}`);
    }
  } catch (error) {
    if (!(error instanceof GatewayError)) {
      deps.logger.warn('request failed', {
        sessionId: loaded.session.id,
        method: request.method,
        error: describeError(error),
      });
    }
    const status = statusFor(error);
    if (status !== 200)
      return jsonResponse(status, toRpcError(request.id, error), {
        ...headers,
        ...(status === 503 ? { 'retry-after': '1' } : {}),
      });
    return messageResponse(toRpcError(request.id, error), accept, headers);
  }
}

async function aggregate(
  ctx: SessionExchange,
  sessions: TargetSessions,
  method: string,
): Promise<Record<string, unknown>> {
  const { deps, exchange, loaded } = ctx;
  const sessionId = loaded.session.id;
  switch (method) {
    case 'tools/list':
      return {
        tools: exposeNamed<Tool>(deps, await listFromTargets(deps, sessions, 'tools', exchange.signal, sessionId)),
      };
    case 'prompts/list':
      return {
        prompts: exposeNamed<Prompt>(
          deps,
          await listFromTargets(deps, sessions, 'prompts', exchange.signal, sessionId),
        ),
      };
    case 'resources/list':
      return {
        resources: exposeByUri<Resource>(
          deps,
          await listFromTargets(deps, sessions, 'resources', exchange.signal, sessionId),
          (r) => r.uri,
        ),
      };
    default:
      return {
        resourceTemplates: exposeByUri<ResourceTemplate>(
          deps,
          await listFromTargets(deps, sessions, 'resourceTemplates', exchange.signal, sessionId),
          (t) => t.uriTemplate,
        ),
      };
  }
}
