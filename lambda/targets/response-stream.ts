import type {
  JSONRPCErrorResponse,
  JSONRPCNotification,
  JSONRPCRequest,
  JSONRPCResultResponse,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { createParser } from 'eventsource-parser';

/** What a target streams back for one request, read the same way in both protocol eras. */

export type JSONRPCResponse = JSONRPCResultResponse | JSONRPCErrorResponse;

export interface StreamListeners {
  /** A request the target sends while answering (2025 era only; a 2026 stream never carries one). */
  onServerRequest?(request: JSONRPCRequest): void;
  onNotification?(notification: JSONRPCNotification): void;
}

/**
 * Reads an SSE response until the JSON-RPC response with `id` arrives, handing every request and
 * notification before it to the listeners. Returns undefined when the stream ends without it;
 * throws what the reader throws when the stream breaks.
 */
export async function readResponseStream(
  res: Response,
  id: RequestId,
  listeners: StreamListeners = {},
): Promise<JSONRPCResponse | undefined> {
  let response: JSONRPCResponse | undefined;
  const parser = createParser({
    onEvent: (event) => {
      if (response || !event.data) return; // priming events carry no data
      let message: unknown;
      try {
        message = JSON.parse(event.data);
      } catch {
        return; // not ours to interpret; a well-formed response still ends the call
      }
      if (isResponse(message)) {
        if (message.id === id) response = message;
      } else if (isRequest(message)) listeners.onServerRequest?.(message);
      else if (isNotification(message)) listeners.onNotification?.(message);
    },
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  try {
    while (!response) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(value);
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
  return response;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isResponse(value: unknown): value is JSONRPCResponse {
  return (
    isObject(value) &&
    value.jsonrpc === '2.0' &&
    'id' in value &&
    ('result' in value || 'error' in value) &&
    !('method' in value)
  );
}

export function isRequest(value: unknown): value is JSONRPCRequest {
  return isObject(value) && typeof value.method === 'string' && 'id' in value;
}

export function isNotification(value: unknown): value is JSONRPCNotification {
  return isObject(value) && typeof value.method === 'string' && !('id' in value);
}
