import { handleLegacyDelete, handleLegacyPost } from '../legacy/legacy-path';
import { handleStatelessPost, isModernRequest } from '../stateless/stateless-path';
import type { GatewayDeps } from './deps';
import type { ExchangeContext, FetchHandler } from './exchange';
import { errorResponse, MCP_HEADERS, methodNotAllowed, parseAccept, readBodyLimited } from './http';
import { type ClientMessage, parseClientMessage, RpcCode } from './jsonrpc';
import { describeError } from './logger';

export const MCP_PATH = '/mcp';

/**
 * The gateway core: one fetch-style handler for every adapter. It checks the transport-level
 * rules (path, method, body size, JSON-RPC shape), picks the protocol era of the request and
 * hands it to that era's path. Nothing here knows about Lambda or node:http.
 */
export function createGateway(deps: GatewayDeps): FetchHandler {
  return async (request: Request, exchange: ExchangeContext): Promise<Response> => {
    try {
      return await route(deps, request, exchange);
    } catch (error) {
      deps.logger.error('unhandled error', { error: describeError(error) });
      return errorResponse(500, null, RpcCode.InternalError, 'Internal error');
    }
  };
}

async function route(deps: GatewayDeps, request: Request, exchange: ExchangeContext): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname !== MCP_PATH) {
    // Protected resource metadata (auth jwt) is the only other path, and needs no token.
    const metadata = await deps.auth.wellKnown(request, url);
    return metadata ?? errorResponse(404, null, RpcCode.InvalidRequest, `Not found: the MCP endpoint is ${MCP_PATH}`);
  }
  // Before anything else: every state the request may touch is bound to this principal.
  const auth = await deps.auth.authenticate(request, exchange);
  if (!auth.ok) return auth.response;
  const principal = auth.principal;

  switch (request.method) {
    case 'POST':
      break;
    case 'DELETE':
      if (request.headers.get(MCP_HEADERS.sessionId)) {
        return handleLegacyDelete({ deps, exchange, principal, headers: request.headers });
      }
      return methodNotAllowed('POST, DELETE');
    default:
      // No standalone GET stream: on Lambda it would hold an invocation open with nothing to send.
      return methodNotAllowed('POST, DELETE');
  }

  const contentType = request.headers.get('content-type');
  if (contentType && !/^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType.trim())) {
    return errorResponse(415, null, RpcCode.InvalidRequest, 'Unsupported Media Type: send application/json');
  }
  const body = await readBodyLimited(request, deps.config.maxBodyBytes);
  if (body === undefined) {
    return errorResponse(
      413,
      null,
      RpcCode.InvalidRequest,
      `Payload Too Large: the limit is ${deps.config.maxBodyBytes} bytes`,
    );
  }
  const parsed = parseClientMessage(body);
  if (!parsed.ok) return errorResponse(400, parsed.id, parsed.code, parsed.message);
  const message: ClientMessage = parsed.value;
  const accept = parseAccept(request.headers.get('accept'));

  if (isModernRequest(request.headers, message)) {
    return handleStatelessPost({
      deps: statelessDeps(deps),
      message,
      accept,
      exchange,
      principal,
      headers: request.headers,
    });
  }
  return handleLegacyPost({ deps, message, accept, exchange, principal, headers: request.headers });
}

/** The stateless path is handed no store, so it cannot read or write session state by mistake. */
function statelessDeps(deps: GatewayDeps): Omit<GatewayDeps, 'store'> {
  const { store: _store, ...rest } = deps;
  return rest;
}
