import { type ErrorKind, errorHeaders, GatewayError, httpStatusOf, rpcError } from '../protocol/errors';
import type { RequestId } from '../protocol/types';
import { jsonResponse } from './responses';

/** An error as the whole HTTP response: the table's status and headers, plus the caller's (e.g. the session id). */
export function errorResponse(id: RequestId | null, error: unknown, headers: Record<string, string> = {}): Response {
  return jsonResponse(httpStatusOf(error), rpcError(id, error), { ...errorHeaders(error), ...headers });
}

/** Shorthand for a new error of `kind` as the whole response. */
export function refuse(
  kind: ErrorKind,
  message: string,
  options: { id?: RequestId | null; data?: unknown; headers?: Record<string, string> } = {},
): Response {
  return errorResponse(options.id ?? null, new GatewayError(kind, message, options.data), options.headers);
}

export function methodNotAllowed(allow: string): Response {
  return refuse('MethodNotAllowed', 'Method not allowed', { headers: { allow } });
}

/** Methods a fetch `Request` cannot carry (the Fetch standard forbids them): it throws on construction. */
const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);

/**
 * The adapters' answer to a request whose method fetch cannot represent: 405 like every other
 * method the endpoint does not serve (the core never sees it), instead of a failed construction (500).
 */
export function unrepresentableMethod(method: string): Response | undefined {
  // The methods the endpoint serves by default (GET: the standalone stream, unless turned off).
  return FORBIDDEN_METHODS.has(method.toUpperCase()) ? methodNotAllowed('GET, POST, DELETE') : undefined;
}
