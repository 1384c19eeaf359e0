import { ANONYMOUS_IDENTITY, type CallerIdentity } from '../../lambda/auth/identity';
import type { ModernDeps } from '../../lambda/modern/deps';
import { handleModernPost } from '../../lambda/modern/modern-path';
import { encodeMirrored } from '../../lambda/protocol/headers';
import type { ClientMessage } from '../../lambda/protocol/jsonrpc';
import { META_KEYS, nameSourceOf } from '../../lambda/protocol/meta';
import type { JSONRPCRequest, ModernClientCapabilities } from '../../lambda/protocol/types';

/**
 * A 2026-07-28 POST handed to the modern path in this process (modern/modern-path.ts `handleModernPost`,
 * as app/gateway.ts hands it over after parsing): the headers a conforming client sends, the `_meta`
 * envelope, and an exchange with its abort signal and deadline. Answers a web `Response`.
 */

export interface ModernPostOptions {
  capabilities?: ModernClientCapabilities;
  meta?: Record<string, unknown>;
  headers?: Record<string, string>;
  accept?: { json: boolean; sse: boolean };
  signal?: AbortSignal;
  deadlineMs?: number;
  principal?: string;
  /** Who sent it, as policy sees it (default: anonymous). */
  identity?: CallerIdentity;
  id?: string | number;
}

export function modernRequestMessage(
  method: string,
  params: Record<string, unknown> = {},
  options: ModernPostOptions = {},
): JSONRPCRequest {
  return {
    jsonrpc: '2.0',
    id: options.id ?? 'req-1',
    method,
    params: {
      ...params,
      _meta: {
        [META_KEYS.protocolVersion]: '2026-07-28',
        [META_KEYS.clientCapabilities]: options.capabilities ?? {},
        ...options.meta,
      },
    },
  } as JSONRPCRequest;
}

export function modernHeaders(request: JSONRPCRequest, extra: Record<string, string> = {}): Headers {
  const headers = new Headers({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': request.method });
  const source = nameSourceOf(request.method);
  const name = source ? (request.params as Record<string, unknown> | undefined)?.[source] : undefined;
  if (typeof name === 'string') headers.set('mcp-name', encodeMirrored(name));
  for (const [key, value] of Object.entries(extra)) headers.set(key, value);
  return headers;
}

export function postModern(
  deps: ModernDeps,
  message: ClientMessage,
  options: ModernPostOptions = {},
): Promise<Response> {
  const headers =
    message.kind === 'request'
      ? modernHeaders(message.message, options.headers)
      : new Headers({ 'mcp-protocol-version': '2026-07-28', ...options.headers });
  return handleModernPost({
    deps,
    message,
    accept: options.accept ?? { json: true, sse: true },
    exchange: {
      signal: options.signal ?? new AbortController().signal,
      deadline: Date.now() + (options.deadlineMs ?? 30_000),
    },
    principal: options.principal ?? 'alice',
    identity: options.identity ?? ANONYMOUS_IDENTITY,
    headers,
  });
}

/** A request of `method` POSTed as a conforming client sends it. */
export function requestModern(
  deps: ModernDeps,
  method: string,
  params: Record<string, unknown> = {},
  options: ModernPostOptions = {},
): Promise<Response> {
  return postModern(deps, { kind: 'request', message: modernRequestMessage(method, params, options) }, options);
}
