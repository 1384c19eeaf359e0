import { errorResponse, refuse } from '../http/errors';
import type { ExchangeContext } from '../http/exchange';
import { type AcceptPreference, accepted, jsonResponse } from '../http/responses';
import { describeError } from '../observability/logger';
import { capabilitiesForModernTarget } from '../protocol/capabilities';
import { errorHeaders, GatewayError, httpStatusOf, rpcError, rpcErrorOf } from '../protocol/errors';
import { MCP_HEADERS } from '../protocol/headers';
import type { ClientMessage, JSONRPCResponse } from '../protocol/jsonrpc';
import { META_KEYS } from '../protocol/meta';
import { LIST_METHODS, listingKindOf } from '../protocol/methods';
import type { JSONRPCMessage, RequestId } from '../protocol/types';
import { isModernVersion } from '../protocol/versions';
import { DeferredResponse } from '../relay/deferred-response';
import type { Caller } from '../targets/upstream';
import { forwardCall } from './call';
import type { StatelessDeps } from './deps';
import { discover } from './discover';
import { RequestScope } from './request-scope';
import { type ModernRequest, validateModernRequest } from './validate';

export interface StatelessInput {
  deps: StatelessDeps;
  message: ClientMessage;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  principal: string;
  headers: Headers;
}

/**
 * Dual-era detection (spec basic/versioning.mdx): a request whose `_meta` claims a protocol version
 * is served statelessly, and so is one whose `MCP-Protocol-Version` header names 2026-07-28 or later
 * (it is then validated, not silently treated as 2025). An `initialize` stays on the 2025 path unless
 * its `_meta` claims a 2026 version; posted responses (answers to relayed requests) are 2025 traffic.
 */
export function isModernRequest(headers: Headers, message: ClientMessage): boolean {
  if (message.kind === 'response') return false;
  const meta = (message.message.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const claim = typeof meta === 'object' && meta !== null ? meta[META_KEYS.protocolVersion] : undefined;
  const header = headers.get(MCP_HEADERS.protocolVersion)?.trim();
  if (message.kind === 'request' && message.message.method === 'initialize') {
    if (claim !== undefined) return typeof claim === 'string' && isModernVersion(claim);
    return header !== undefined && isModernVersion(header);
  }
  if (claim !== undefined) return true;
  return header !== undefined && isModernVersion(header);
}

/**
 * A POST on the 2026-07-28 path. The session store is not passed in: every request carries what the
 * gateway needs, and the cross-request state is the sealed requestState the client holds. The one
 * exception is a call bridged to a 2025-only target that asks for input, whose rounds live in
 * `deps.bridgeStore` (./bridge.ts).
 */
export async function handleStatelessPost(input: StatelessInput): Promise<Response> {
  const { deps, message } = input;
  if (message.kind === 'response') {
    return refuse('InvalidRequest', 'Invalid Request: clients do not send responses in protocol 2026-07-28', {
      id: message.message.id ?? null,
    });
  }
  if (message.kind === 'notification') {
    // The core protocol defines no client notifications over HTTP for 2026-07-28: accepted, nothing to do.
    return accepted();
  }
  const validation = validateModernRequest(message.message, input.headers, deps.config.supportedVersions);
  if (!validation.ok) {
    deps.logger.debug('stateless request refused', { method: message.message.method, kind: validation.error.kind });
    return errorResponse(message.message.id, validation.error);
  }
  const request = validation.request;
  const started = Date.now();
  // Everything ends at the deadline or when the client goes away; a relayed call may stop following the client.
  const scope = new RequestScope(input.exchange);
  let handedOver = false;
  const caller: Caller = {
    era: 'modern',
    protocolVersion: request.protocolVersion,
    capabilities: request.clientCapabilities,
    inputCapable: true,
    logLevel: request.logLevel,
    sessions: deps.legacySessions.slotsFor(input.principal, capabilitiesForModernTarget(request.clientCapabilities)),
  };
  try {
    const response = await dispatch(input, request, caller, scope, () => {
      handedOver = true;
    });
    deps.logger.debug('stateless request', { method: request.method, ms: Date.now() - started });
    return response;
  } catch (error) {
    return failureResponse(deps, request, error);
  } finally {
    if (!handedOver) scope.done();
  }
}

/** `handOver`: a relayed call finishes after its response began; it ends the request scope itself. */
async function dispatch(
  input: StatelessInput,
  request: ModernRequest,
  caller: Caller,
  requestScope: RequestScope,
  handOver: () => void,
): Promise<Response> {
  const { deps } = input;
  const signal = requestScope.signal;
  const scope = { caller, signal };
  const listKind = listingKindOf(request.method);
  if (listKind) {
    if (request.params.cursor !== undefined) {
      // Every aggregated list is one page, so the gateway never hands out cursors.
      throw new GatewayError('InvalidParams', 'Invalid params: unknown cursor');
    }
    const { items, ttlMs, cacheScope } = await deps.catalog.aggregate(listKind, scope);
    return complete(deps, request.id, { [LIST_METHODS[listKind].field]: items, ttlMs, cacheScope });
  }
  switch (request.method) {
    case 'server/discover':
      return complete(deps, request.id, await discover(deps, caller, signal));
    case 'completion/complete': {
      const response = await completion(deps, request, caller, signal);
      return jsonResponse(200, toClient(deps, { ...response, id: request.id }));
    }
    default:
      handOver();
      return relayCall(input, request, caller, requestScope);
  }
}

/**
 * The call is answered as one JSON body unless the target streams notifications the client asked
 * for (progress, log messages) before its result and the client accepts SSE: then the response
 * becomes an SSE stream whose last event is the result (the SDK's "auto" response mode).
 */
async function relayCall(
  input: StatelessInput,
  request: ModernRequest,
  caller: Caller,
  scope: RequestScope,
): Promise<Response> {
  const { deps, accept, exchange } = input;
  // Closing the request cancels it, until a bridged call has sent its first round: from then on the
  // client is expected to hang up, and this invocation holds the target's call regardless.
  let held = false;
  const out = new DeferredResponse({
    accept,
    keepAliveMs: deps.keepAliveMs,
    onClientGone: scope.onClientGone,
    stalledClientMs: deps.config.stalledClientTimeoutSeconds * 1000,
  });
  const streamAllowed = request.progressToken !== undefined || request.logLevel !== undefined;
  void forwardCall({
    deps,
    request,
    principal: input.principal,
    caller,
    signal: scope.signal,
    paramHeaders: paramHeaders(input.headers),
    onNotification: (notification) => {
      if (streamAllowed && !held) out.stream()?.send(notification);
    },
    backpressure: () => (held ? undefined : out.room()),
    emit: (message) => {
      const stream = out.stream();
      if (!stream) return false;
      held = true;
      scope.detachFromClient();
      stream.send(toClient(deps, message));
      return true;
    },
    keepAlive: () => out.streamAfter(deps.keepAliveMs),
    deadline: exchange.deadline,
    canStream: accept.sse,
  })
    .then((response) => (response ? out.finish(toClient(deps, response)) : out.end()))
    .catch((error: unknown) => {
      if (scope.clientGone) {
        // Closing a 2026-07-28 request is its cancellation: the target was told, nobody waits for an answer.
        deps.logger.info('the client cancelled the call (closed the request)', { method: request.method });
        out.finish(rpcErrorOf(request.id, 'ClientCancelled', 'Request cancelled by the client'));
        return;
      }
      const failure = asGatewayError(error);
      logFailure(deps, request, failure);
      out.finish(rpcError(request.id, failure), httpStatusOf(failure), errorHeaders(failure));
    })
    .finally(() => scope.done());
  return out.response;
}

async function completion(
  deps: StatelessDeps,
  request: ModernRequest,
  caller: Caller,
  signal: AbortSignal,
): Promise<JSONRPCResponse> {
  const scope = { caller, signal };
  const ref = request.params.ref as { type?: string; name?: unknown; uri?: unknown } | undefined;
  let target: string;
  let params = request.params;
  if (ref?.type === 'ref/prompt') {
    const resolved = await deps.catalog.resolveNamed(ref.name, 'prompt', scope);
    target = resolved.target;
    params = { ...params, ref: { ...ref, name: resolved.name } };
  } else if (ref?.type === 'ref/resource') {
    target = await deps.catalog.resolveTemplate(ref.uri, scope);
  } else {
    throw new GatewayError('InvalidParams', 'Invalid params: ref must be ref/prompt or ref/resource');
  }
  const { _meta: _ignored, ...upstreamParams } = params;
  const upstream = await deps.targets.open(target, caller, signal);
  // The target's answer, error or not, is relayed in-band.
  return upstream.call({ method: 'completion/complete', params: upstreamParams }, { signal });
}

/** Every result names its type and the gateway as the server (spec: resultType, serverInfo in `_meta`). */
function finishResult(deps: StatelessDeps, result: Record<string, unknown>): Record<string, unknown> {
  const meta = { ...(result._meta as Record<string, unknown> | undefined), [META_KEYS.serverInfo]: deps.serverInfo };
  return { ...result, resultType: result.resultType ?? 'complete', _meta: meta };
}

function complete(deps: StatelessDeps, id: RequestId, result: Record<string, unknown>): Response {
  return jsonResponse(200, { jsonrpc: '2.0', id, result: finishResult(deps, result) });
}

function toClient(deps: StatelessDeps, response: JSONRPCResponse): JSONRPCMessage {
  if ('error' in response) return response;
  return { jsonrpc: '2.0', id: response.id, result: finishResult(deps, response.result as Record<string, unknown>) };
}

/** A timeout or a cancelled request is a gateway timeout (504), not an internal error. */
function asGatewayError(error: unknown): unknown {
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) {
    return new GatewayError('UpstreamTimeout', 'Gateway timeout: the request ran out of time or was cancelled');
  }
  return error;
}

function logFailure(deps: StatelessDeps, request: ModernRequest, error: unknown): void {
  if (!(error instanceof GatewayError) || httpStatusOf(error) >= 500 || error.spec.retryable) {
    deps.logger.warn('stateless request failed', { method: request.method, error: describeError(error) });
  }
}

function failureResponse(deps: StatelessDeps, request: ModernRequest, error: unknown): Response {
  const failure = asGatewayError(error);
  logFailure(deps, request, failure);
  return errorResponse(request.id, failure);
}

/** The client's `Mcp-Param-*` headers: an intermediary forwards headers it does not interpret untouched. */
function paramHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (name.toLowerCase().startsWith(MCP_HEADERS.paramPrefix)) out[name] = value;
  });
  return out;
}
