import type { JSONRPCMessage, JSONRPCNotification, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { GatewayError, statusFor, toRpcError } from '../core/errors';
import type { ExchangeContext } from '../core/exchange';
import {
  type AcceptPreference,
  accepted,
  errorResponse,
  jsonResponse,
  jsonRpcError,
  MCP_HEADERS,
  SseStream,
} from '../core/http';
import { type ClientMessage, RpcCode } from '../core/jsonrpc';
import { describeError } from '../core/logger';
import { META_KEYS } from '../targets/modern-client';
import { discover } from './discover';
import { type CallOutcome, forwardCall } from './forward';
import { MODERN_HEADERS } from './headers';
import { aggregateList, LIST_KIND_BY_METHOD, resolveNamed, resolveTemplate } from './lists';
import { CrossEraInputError, callUpstream, type StatelessDeps } from './upstream';
import { isModernVersion, type ModernRequest, validateModernRequest } from './validate';

export const META_PROTOCOL_VERSION = META_KEYS.protocolVersion;

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
  const claim = typeof meta === 'object' && meta !== null ? meta[META_PROTOCOL_VERSION] : undefined;
  const header = headers.get(MCP_HEADERS.protocolVersion)?.trim();
  if (message.kind === 'request' && message.message.method === 'initialize') {
    if (claim !== undefined) return typeof claim === 'string' && isModernVersion(claim);
    return header !== undefined && isModernVersion(header);
  }
  if (claim !== undefined) return true;
  return header !== undefined && isModernVersion(header);
}

/**
 * A POST on the 2026-07-28 path. No store is passed in and none is used: every request carries
 * what the gateway needs, and the only cross-request state is the sealed requestState the client holds.
 */
export async function handleStatelessPost(input: StatelessInput): Promise<Response> {
  const { deps, message } = input;
  if (message.kind === 'response') {
    return errorResponse(
      400,
      message.message.id ?? null,
      RpcCode.InvalidRequest,
      'Invalid Request: clients do not send responses in protocol 2026-07-28',
    );
  }
  if (message.kind === 'notification') {
    // The core protocol defines no client notifications over HTTP for 2026-07-28: accepted, nothing to do.
    return accepted();
  }
  const validation = validateModernRequest(message.message, input.headers, deps.config.supportedVersions);
  if (!validation.ok) {
    const { status, code, message: text, data } = validation.failure;
    deps.logger.debug('stateless request refused', { method: message.message.method, code });
    return errorResponse(status, message.message.id, code, text, data);
  }
  const request = validation.request;
  const started = Date.now();
  try {
    const response = await dispatch(input, request);
    deps.logger.debug('stateless request', { method: request.method, ms: Date.now() - started });
    return response;
  } catch (error) {
    return failureResponse(deps, request.id, request.method, error);
  }
}

async function dispatch(input: StatelessInput, request: ModernRequest): Promise<Response> {
  const { deps, exchange, principal } = input;
  const ctx = { deps, request, principal, signal: withDeadline(exchange) };
  switch (request.method) {
    case 'server/discover':
      return complete(deps, request.id, await discover(ctx));
    case 'tools/list':
    case 'prompts/list':
    case 'resources/list':
    case 'resources/templates/list':
      if (request.params.cursor !== undefined) {
        // Every aggregated list is one page, so the gateway never hands out cursors.
        throw new GatewayError(RpcCode.InvalidParams, 'Invalid params: unknown cursor');
      }
      return complete(deps, request.id, await aggregateList(ctx, LIST_KIND_BY_METHOD[request.method]));
    case 'completion/complete':
      return complete(deps, request.id, await completion(ctx));
    default:
      return relayCall(input, request, ctx.signal);
  }
}

/**
 * The call is answered as one JSON body unless the target streams notifications the client asked
 * for (progress, log messages) before its result and the client accepts SSE: then the response
 * becomes an SSE stream whose last event is the result (the SDK's "auto" response mode).
 */
async function relayCall(input: StatelessInput, request: ModernRequest, signal: AbortSignal): Promise<Response> {
  const { deps, accept } = input;
  let stream: SseStream | undefined;
  let resolveEarly!: (response: Response) => void;
  const early = new Promise<Response>((resolve) => (resolveEarly = resolve));
  const streamAllowed = accept.sse && (request.progressToken !== undefined || request.logLevel !== undefined);
  const clientGone = new AbortController();
  const callSignal = AbortSignal.any([signal, clientGone.signal]);

  const onNotification = (notification: JSONRPCNotification) => {
    if (!streamAllowed) return;
    if (!stream) {
      stream = new SseStream();
      stream.onCancel = () => clientGone.abort();
      stream.startKeepAlive(deps.keepAliveMs);
      resolveEarly(stream.response());
    }
    stream.send(notification);
  };

  const work = forwardCall({
    deps,
    request,
    principal: input.principal,
    signal: callSignal,
    paramHeaders: paramHeaders(input.headers),
    onNotification,
  })
    .then((outcome) => ({ outcome }))
    .catch((error: unknown) => ({ error }));

  const finish = async (): Promise<Response> => {
    const done = await work;
    if (stream) {
      const message: JSONRPCMessage =
        'outcome' in done ? toMessage(deps, request.id, done.outcome) : toRpcErrorLogged(deps, request, done.error);
      stream.send(message);
      stream.close();
      return early;
    }
    if ('error' in done) return failureResponse(deps, request.id, request.method, done.error);
    const { outcome } = done;
    return jsonResponse(outcome.status, toMessage(deps, request.id, outcome));
  };
  const final = finish();
  return Promise.race([early, final]);
}

async function completion(ctx: {
  deps: StatelessDeps;
  request: ModernRequest;
  principal: string;
  signal: AbortSignal;
}): Promise<Record<string, unknown>> {
  const { deps, request } = ctx;
  const ref = request.params.ref as { type?: string; name?: unknown; uri?: unknown } | undefined;
  let target: string;
  let params = request.params;
  if (ref?.type === 'ref/prompt') {
    const resolved = await resolveNamed(ctx, ref.name, 'prompt');
    target = resolved.target;
    params = { ...params, ref: { ...ref, name: resolved.name } };
  } else if (ref?.type === 'ref/resource') {
    target = await resolveTemplate(ctx, ref.uri);
  } else {
    throw new GatewayError(RpcCode.InvalidParams, 'Invalid params: ref must be ref/prompt or ref/resource');
  }
  const { _meta: _ignored, ...upstreamParams } = params;
  const { response } = await callUpstream(deps, {
    target,
    principal: ctx.principal,
    method: 'completion/complete',
    params: upstreamParams,
    clientCapabilities: request.clientCapabilities,
    protocolVersion: request.protocolVersion,
    signal: ctx.signal,
  });
  if ('error' in response) throw new GatewayError(response.error.code, response.error.message, response.error.data);
  return response.result as Record<string, unknown>;
}

/** Every result names its type and the gateway as the server (spec: resultType, serverInfo in `_meta`). */
function finishResult(deps: StatelessDeps, result: Record<string, unknown>): Record<string, unknown> {
  const meta = { ...(result._meta as Record<string, unknown> | undefined), [META_KEYS.serverInfo]: deps.serverInfo };
  return { ...result, resultType: result.resultType ?? 'complete', _meta: meta };
}

function complete(deps: StatelessDeps, id: RequestId, result: Record<string, unknown>): Response {
  return jsonResponse(200, { jsonrpc: '2.0', id, result: finishResult(deps, result) });
}

function toMessage(deps: StatelessDeps, id: RequestId, outcome: CallOutcome): JSONRPCMessage {
  if (outcome.error) return jsonRpcError(id, outcome.error.code, outcome.error.message, outcome.error.data);
  return { jsonrpc: '2.0', id, result: finishResult(deps, outcome.result ?? {}) } as JSONRPCMessage;
}

function toRpcErrorLogged(deps: StatelessDeps, request: ModernRequest, error: unknown): JSONRPCMessage {
  if (error instanceof CrossEraInputError) {
    return jsonRpcError(request.id, RpcCode.InternalError, error.message, {
      type: 'CrossEraInputUnsupported',
      target: error.target,
      inputMethod: error.inputMethod,
    });
  }
  if (!(error instanceof GatewayError))
    deps.logger.warn('stateless request failed', { method: request.method, error: describeError(error) });
  return toRpcError(request.id, error);
}

function failureResponse(deps: StatelessDeps, id: RequestId, method: string, error: unknown): Response {
  const message = toRpcErrorLogged(deps, { id, method } as ModernRequest, error);
  const status = error instanceof CrossEraInputError ? 200 : statusFor(error);
  return jsonResponse(status === 500 && isAbort(error) ? 504 : status, message);
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError');
}

/** The client's `Mcp-Param-*` headers: an intermediary forwards headers it does not interpret untouched. */
function paramHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (name.toLowerCase().startsWith(MODERN_HEADERS.paramPrefix)) out[name] = value;
  });
  return out;
}

/** Aborted when the client goes away or the invocation's deadline comes. */
function withDeadline(exchange: ExchangeContext): AbortSignal {
  const remaining = Math.max(0, exchange.deadline - Date.now());
  return AbortSignal.any([exchange.signal, AbortSignal.timeout(remaining)]);
}
