import { isConnectionsPath } from '../connections/consent-routes';
import { errorResponse, methodNotAllowed, refuse } from '../http/errors';
import type { ExchangeContext, ExchangeRequest, FetchHandler } from '../http/exchange';
import { MCP_PATH } from '../http/paths';
import { parseAccept, readBodyLimited } from '../http/responses';
import { handleLegacyDelete, handleLegacyGet, handleLegacyPost, handleLegacyResume } from '../legacy/legacy-path';
import type { ModernDeps } from '../modern/deps';
import { handleModernPost } from '../modern/modern-path';
import type { RequestTracer } from '../observability/active-tracing';
import { describeError } from '../observability/logger';
import { noteRequest } from '../observability/request-context';
import { GatewayError } from '../protocol/errors';
import { MCP_HEADERS } from '../protocol/headers';
import { type ClientMessage, parseClientMessage } from '../protocol/jsonrpc';
import { clientEraOf } from './client-era';
import type { GatewayDeps } from './deps';
import { withOperations } from './operations';

/**
 * The gateway core: one fetch-style handler for every adapter. It checks the transport-level
 * rules (path, method, body size, JSON-RPC shape), picks the protocol era of the request and
 * hands it to that era's path. Nothing here knows about Lambda or node:http.
 */
export function createGateway(deps: GatewayDeps, options: GatewayOptions = {}): FetchHandler {
  const core = async (request: ExchangeRequest, exchange: ExchangeContext): Promise<Response> => {
    try {
      return await route(deps, request, exchange);
    } catch (error) {
      deps.logger.error('unhandled error', { error: describeError(error) });
      return errorResponse(null, new GatewayError('Internal', 'Internal error'));
    }
  };
  // /health, CORS, the request context (trace), the access log: ./operations.ts.
  return withOperations(deps, core, MCP_PATH, options);
}

export interface GatewayOptions {
  /** `platform` when the function URL answers CORS (deployed); default `gateway`. */
  cors?: 'gateway' | 'platform';
  /** X-Ray active tracing (Lambda). */
  tracer?: RequestTracer;
}

async function route(deps: GatewayDeps, request: ExchangeRequest, exchange: ExchangeContext): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname !== MCP_PATH) {
    // Per-user connections: the consent pages (a browser, no token) and /connections (inbound auth).
    if (deps.consentRoutes && isConnectionsPath(url.pathname)) return deps.consentRoutes(request, exchange, url);
    // Protected resource metadata (auth jwt) is the only other path, and needs no token.
    const metadata = await deps.auth.wellKnown(request, url);
    return metadata ?? refuse('NotFound', `Not found: the MCP endpoint is ${MCP_PATH}`);
  }
  // Before anything else: every state the request may touch is bound to this principal.
  const auth = await deps.auth.authenticate(request, exchange);
  if (!auth.ok) return auth.response;
  const principal = auth.principal;
  noteRequest({
    principal,
    origin: url.origin,
    sessionId: request.headers.get(MCP_HEADERS.sessionId) ?? undefined,
  });

  // The standalone GET stream is bounded (it holds an invocation); 0 s turns it off.
  const allow = deps.config.clientStreamHoldSeconds > 0 ? 'GET, POST, DELETE' : 'POST, DELETE';
  switch (request.method) {
    case 'POST':
      break;
    case 'DELETE':
      if (request.headers.get(MCP_HEADERS.sessionId)) {
        return handleLegacyDelete({ deps, exchange, principal, identity: auth.identity, headers: request.headers });
      }
      return methodNotAllowed(allow);
    case 'GET': {
      // A client resuming a stream it lost (2025-11-25 resumability): replayed from the session's event log.
      // An empty Last-Event-ID is no id (an EventSource sends none before its first id); 2026-07-28 has no resumption.
      const lastEventId = request.headers.get(MCP_HEADERS.lastEventId);
      if (lastEventId && request.headers.get(MCP_HEADERS.sessionId) && clientEraOf(request.headers) === 'legacy') {
        return handleLegacyResume({
          deps,
          exchange,
          principal,
          identity: auth.identity,
          headers: request.headers,
          lastEventId,
        });
      }
      if (deps.config.clientStreamHoldSeconds > 0 && !lastEventId) {
        return handleLegacyGet({ deps, exchange, principal, identity: auth.identity, headers: request.headers });
      }
      // The transport lets a server answer 405 where it offers no stream, and SDK clients ask once per
      // session: the normal answer, not an error worth an alarm.
      return refuse('NoStandaloneStream', 'Method not allowed', { headers: { allow } });
    }
    default:
      return methodNotAllowed(allow);
  }

  const contentType = request.headers.get('content-type');
  if (contentType && !/^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType.trim())) {
    return refuse('UnsupportedMediaType', 'Unsupported Media Type: send application/json');
  }
  const body = await readBodyLimited(request, deps.config.maxBodyBytes);
  if (body === undefined) {
    return refuse('PayloadTooLarge', `Payload Too Large: the limit is ${deps.config.maxBodyBytes} bytes`);
  }
  const parsed = parseClientMessage(body);
  if (!parsed.ok) {
    return refuse(parsed.kind, parsed.message, { id: parsed.id });
  }
  const message: ClientMessage = parsed.value;
  const accept = parseAccept(request.headers.get('accept'));
  const modern = clientEraOf(request.headers, message) === 'modern';
  noteRequest({
    era: modern ? 'modern' : 'legacy',
    kind: message.kind,
    method: message.kind === 'response' ? undefined : message.message.method,
  });

  const input = { message, accept, exchange, principal, identity: auth.identity, headers: request.headers };
  return modern ? handleModernPost({ deps: modernDeps(deps), ...input }) : handleLegacyPost({ deps, ...input });
}

/**
 * The 2026-07-28 path is handed no session store, so it cannot read or write a 2025 session by mistake;
 * bridged calls reach the table through `bridgeStore`, which holds only their records.
 */
function modernDeps(deps: GatewayDeps): ModernDeps {
  const { store: _store, auth: _auth, sessionCache: _sessions, consentRoutes: _consentRoutes, ...rest } = deps;
  return rest;
}
