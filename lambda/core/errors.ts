import type { JSONRPCErrorResponse, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { StoreUnavailableError } from '../state/store';
import { DependencyFailedError } from '../targets/upstream-client';
import { jsonRpcError } from './http';
import { RpcCode } from './jsonrpc';

/** A protocol error the gateway answers with deliberately (code, message, optional data, HTTP status). */
export class GatewayError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
    readonly httpStatus = 200,
  ) {
    super(message);
    this.name = 'GatewayError';
  }
}

/**
 * Maps any failure to the JSON-RPC error a client sees. Target failures name DependencyFailedException
 * and the target (the client should retry the call); store failures carry a retry hint; anything
 * else is a generic internal error whose details stay in the logs.
 */
export function toRpcError(id: RequestId | null, error: unknown): JSONRPCErrorResponse {
  if (error instanceof GatewayError) return jsonRpcError(id, error.code, error.message, error.data);
  if (error instanceof DependencyFailedError) {
    return jsonRpcError(id, RpcCode.InternalError, `DependencyFailedException: ${error.message}`, {
      type: 'DependencyFailedException',
      target: error.target,
      retryable: true,
    });
  }
  if (error instanceof StoreUnavailableError) {
    return jsonRpcError(id, RpcCode.InternalError, 'Session store unavailable; retry shortly', {
      type: 'ServiceUnavailable',
      retryable: true,
      retryAfterSeconds: 1,
    });
  }
  return jsonRpcError(id, RpcCode.InternalError, 'Internal error');
}

/** HTTP status for a failure answered before any stream started. */
export function statusFor(error: unknown): number {
  if (error instanceof GatewayError) return error.httpStatus;
  if (error instanceof StoreUnavailableError) return 503;
  // A target failure is a JSON-RPC error to a valid request: 200, so SDK clients surface its text.
  if (error instanceof DependencyFailedError) return 200;
  return 500;
}
