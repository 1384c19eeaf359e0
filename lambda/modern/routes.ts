import type { CallerIdentity } from '../auth/identity';
import { DeferredResponse } from '../http/deferred-response';
import type { ExchangeContext } from '../http/exchange';
import { type AcceptPreference, jsonResponse } from '../http/responses';
import { errorHeaders, GatewayError, httpStatusOf, rpcError, rpcErrorOf } from '../protocol/errors';
import { MCP_HEADERS } from '../protocol/headers';
import type { ClientMessage, JSONRPCResponse } from '../protocol/jsonrpc';
import { META_KEYS } from '../protocol/meta';
import {
  LIST_METHODS,
  listingKindOf,
  type ModernMethod,
  type Route,
  type RoutingTable,
  routingTable,
} from '../protocol/methods';
import type { JSONRPCMessage, RequestId } from '../protocol/types';
import type { Caller } from '../targets/target-link';
import { forwardCall } from './call';
import type { ModernDeps } from './deps';
import { discover } from './discover';
import { asGatewayError, logFailure } from './failures';
import { serveListen } from './listen';
import { parseListenFilter } from './listen-filter';
import type { RequestScope } from './request-scope';
import { relayTaskRequest } from './tasks';
import type { ModernRequest } from './validate';

/**
 * The 2026-07-28 routing table: every method of the protocol version (protocol/methods.ts
 * `MODERN_METHOD_LIST`, which validation checks first: any other is 404 -32601), with its name
 * source, whether it is safe to resend, and its handler. Lists and discovery are answered as one
 * JSON body; the calls named by `name` or `uri` are relayed to their target (./call.ts resolves the
 * name), and may become a stream.
 */

export interface ModernInput {
  deps: ModernDeps;
  message: ClientMessage;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  principal: string;
  identity: CallerIdentity;
  headers: Headers;
}

/** One validated 2026-07-28 request, as its handler sees it. */
export interface ModernCall {
  input: ModernInput;
  request: ModernRequest;
  route: Route<ModernHandler>;
  caller: Caller;
  scope: RequestScope;
  /** A relayed call finishes after its response began: it takes the request scope over and ends it itself. */
  handOver(): void;
}

export type ModernHandler = (call: ModernCall) => Promise<Response>;

const handlers: { readonly [M in ModernMethod]: ModernHandler } = {
  'server/discover': async ({ input, request, caller, scope }) =>
    complete(input.deps, request.id, await discover(input.deps, caller, scope.signal)),
  'tools/list': list,
  'prompts/list': list,
  'resources/list': list,
  'resources/templates/list': list,
  'tools/call': relayed,
  'prompts/get': relayed,
  'resources/read': relayed,
  'completion/complete': async ({ input, request, caller, scope }) => {
    const response = await completion(input.deps, request, caller, scope.signal);
    return jsonResponse(200, toClient(input.deps, { ...response, id: request.id }));
  },
  'tasks/get': task,
  'tasks/update': task,
  'tasks/cancel': task,
  'subscriptions/listen': async ({ input, request, caller, scope, handOver }) => {
    // Refused before any stream: a malformed filter, one over the limits, or one listen too many for the caller.
    const { config } = input.deps;
    const filter = parseListenFilter(request.params, {
      resourceSubscriptions: config.maxResourceSubscriptionsPerListen,
      taskIds: config.maxTaskIdsPerListen,
    });
    const release = input.deps.listens.take(input.principal);
    handOver();
    return serveListen(input.deps, request, filter, input.principal, caller, {
      signal: scope.signal,
      deadline: input.exchange.deadline,
      done: () => {
        scope.done();
        release();
      },
    });
  },
};

/** A Tasks extension request, relayed to the task's target by the gateway's task id (./tasks.ts). */
async function task({ input, request, caller, scope }: ModernCall): Promise<Response> {
  const response = await relayTaskRequest(input.deps, request, input.principal, caller, scope.signal);
  return jsonResponse(200, toClient(input.deps, response));
}

export const MODERN_ROUTES: RoutingTable<ModernHandler> = routingTable(handlers);

/** Every target's listing merged into one page, with the catalog's cache hints. */
async function list({ input, request, route, caller, scope }: ModernCall): Promise<Response> {
  const kind = listingKindOf(route.method);
  if (!kind) throw new Error(`not a list method: ${route.method}`);
  if (request.params.cursor !== undefined) {
    // Every aggregated list is one page, so the gateway never hands out cursors.
    throw new GatewayError('InvalidParams', 'Invalid params: unknown cursor');
  }
  const { items, ttlMs, cacheScope } = await input.deps.catalog.aggregate(kind, { caller, signal: scope.signal });
  return complete(input.deps, request.id, { [LIST_METHODS[kind].field]: items, ttlMs, cacheScope });
}

async function relayed(call: ModernCall): Promise<Response> {
  call.handOver();
  return respondToCall(call.input, call.request, call.caller, call.scope);
}

/**
 * The call is answered as one JSON body unless the target streams notifications the client asked
 * for (progress, log messages) before its result and the client accepts SSE: then the response
 * becomes an SSE stream whose last event is the result (the SDK's "auto" response mode).
 */
async function respondToCall(
  input: ModernInput,
  request: ModernRequest,
  caller: Caller,
  scope: RequestScope,
): Promise<Response> {
  const { deps, accept, exchange } = input;
  // Closing the request cancels it, until a bridged call has sent its first round: from then on the
  // client is expected to hang up, and this invocation holds the target's call regardless.
  let roundSent = false;
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
      if (streamAllowed && !roundSent) out.stream()?.send(notification);
    },
    backpressure: () => (roundSent ? undefined : out.room()),
    emit: (message) => {
      const stream = out.stream();
      if (!stream) return false;
      roundSent = true;
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
      logFailure(deps.logger, request.method, failure);
      out.finish(rpcError(request.id, failure), httpStatusOf(failure), errorHeaders(failure));
    })
    .finally(() => scope.done());
  return out.response;
}

async function completion(
  deps: ModernDeps,
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
  const { _meta: _ignored, ...targetParams } = params;
  const targetLink = await deps.targets.open(target, caller, signal);
  // The target's answer, error or not, is relayed in-band.
  return targetLink.call({ method: 'completion/complete', params: targetParams }, { signal });
}

/** Every result names its type and the gateway as the server (spec: resultType, serverInfo in `_meta`). */
function finishResult(deps: ModernDeps, result: Record<string, unknown>): Record<string, unknown> {
  const meta = { ...(result._meta as Record<string, unknown> | undefined), [META_KEYS.serverInfo]: deps.serverInfo };
  return { ...result, resultType: result.resultType ?? 'complete', _meta: meta };
}

function complete(deps: ModernDeps, id: RequestId, result: Record<string, unknown>): Response {
  return jsonResponse(200, { jsonrpc: '2.0', id, result: finishResult(deps, result) });
}

function toClient(deps: ModernDeps, response: JSONRPCResponse): JSONRPCMessage {
  if ('error' in response) return response;
  return { jsonrpc: '2.0', id: response.id, result: finishResult(deps, response.result as Record<string, unknown>) };
}

/** The client's `Mcp-Param-*` headers: an intermediary forwards headers it does not interpret untouched. */
function paramHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (name.toLowerCase().startsWith(MCP_HEADERS.paramPrefix)) out[name] = value;
  });
  return out;
}
