import { createParser } from 'eventsource-parser';
import {
  isNotification,
  isRequest,
  isResponse,
  type JSONRPCResponse,
  MAX_JSON_DEPTH,
  nestedDeeperThan,
} from '../protocol/jsonrpc';
import type { JSONRPCNotification, JSONRPCRequest, RequestId } from '../protocol/types';

/** What a target streams while it answers one request (both eras). */
export interface StreamListeners {
  /** A request the target sends while answering (legacy era only; a 2026 stream never carries one). */
  onServerRequest?(request: JSONRPCRequest): void;
  onNotification?(notification: JSONRPCNotification): void;
}

/**
 * Reads an SSE response until the JSON-RPC response with `id` arrives, handing every request and
 * notification before it to the listeners. Returns undefined when the stream ends without it;
 * throws what the reader throws when the stream breaks.
 */
export async function readResponseStream(
  body: NonNullable<Response['body']>,
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
      // Relaying it would overflow the stack somewhere (re-serializing, mapping): the call fails instead.
      if (nestedDeeperThan(message)) throw new TooDeepError();
      if (isResponse(message)) {
        if (message.id === id) response = message;
      } else if (isRequest(message)) listeners.onServerRequest?.(message);
      else if (isNotification(message)) listeners.onNotification?.(message);
    },
  });
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
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

/** A target's message nested deeper than MAX_JSON_DEPTH. */
export class TooDeepError extends Error {
  constructor() {
    super(`sent a message nested deeper than ${MAX_JSON_DEPTH} levels`);
    this.name = 'TooDeepError';
  }
}
