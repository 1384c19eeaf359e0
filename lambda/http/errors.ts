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
