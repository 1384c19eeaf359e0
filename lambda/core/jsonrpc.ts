import {
  type JSONRPCErrorResponse,
  JSONRPCErrorResponseSchema,
  type JSONRPCNotification,
  JSONRPCNotificationSchema,
  type JSONRPCRequest,
  JSONRPCRequestSchema,
  type JSONRPCResultResponse,
  JSONRPCResultResponseSchema,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';

/** JSON-RPC 2.0 error codes used by the gateway (MCP spec, both eras). */
export const RpcCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  RequestTimeout: -32001,
  UrlElicitationRequired: -32042,
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
} as const;

export type ClientMessage =
  | { kind: 'request'; message: JSONRPCRequest }
  | { kind: 'notification'; message: JSONRPCNotification }
  | { kind: 'response'; message: JSONRPCResultResponse | JSONRPCErrorResponse };

export type ParseOutcome =
  | { ok: true; value: ClientMessage }
  | { ok: false; code: number; message: string; id: RequestId | null };

/** Parses one POSTed JSON-RPC message. Batches were removed from MCP in 2025-06-18 and are refused. */
export function parseClientMessage(text: string): ParseOutcome {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, code: RpcCode.ParseError, message: 'Parse error: the body is not valid JSON', id: null };
  }
  const id = idOf(raw);
  if (Array.isArray(raw)) {
    return {
      ok: false,
      code: RpcCode.InvalidRequest,
      message: 'Invalid Request: JSON-RPC batches are not supported',
      id: null,
    };
  }
  if (JSONRPCRequestSchema.safeParse(raw).success)
    return { ok: true, value: { kind: 'request', message: raw as JSONRPCRequest } };
  if (JSONRPCNotificationSchema.safeParse(raw).success && !hasKey(raw, 'id')) {
    return { ok: true, value: { kind: 'notification', message: raw as JSONRPCNotification } };
  }
  if (JSONRPCResultResponseSchema.safeParse(raw).success) {
    return { ok: true, value: { kind: 'response', message: raw as JSONRPCResultResponse } };
  }
  if (JSONRPCErrorResponseSchema.safeParse(raw).success && hasKey(raw, 'id')) {
    return { ok: true, value: { kind: 'response', message: raw as JSONRPCErrorResponse } };
  }
  return {
    ok: false,
    code: RpcCode.InvalidRequest,
    message: 'Invalid Request: not a JSON-RPC 2.0 request, notification or response',
    id,
  };
}

function hasKey(value: unknown, key: string): boolean {
  return typeof value === 'object' && value !== null && key in value;
}

/** The id of a malformed message when it is usable, so the error can still be correlated. */
function idOf(value: unknown): RequestId | null {
  if (!hasKey(value, 'id')) return null;
  const id = (value as { id: unknown }).id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}
