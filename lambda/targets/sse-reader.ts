import type { IncomingMessage } from 'node:http';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
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

/** How long a stream may stay open after its response before its connection is given up. */
const TAIL_MS = 1000;

/**
 * Where a target's stream can be resumed from (SSE polling, SEP-1699): the last event id it sent and
 * the last `retry` interval it gave. Updated as events arrive; kept across the reconnects of one call.
 */
export interface StreamCursor {
  lastEventId?: string;
  retryMs?: number;
}

/**
 * Reads SSE events off a response body as they arrive, chunk by chunk (UTF-8 split across chunks
 * is decoded whole); `onChunk` sees every chunk, `onEvent` every event. Resolves when the body
 * ends; rejects when it breaks (aborted, connection reset) before its end.
 */
export function readEvents(
  body: IncomingMessage,
  onEvent: (event: EventSourceMessage) => void,
  onChunk?: () => void,
  onRetry?: (retryMs: number) => void,
): { done: Promise<void>; stop(): void } {
  const parser = createParser({ onEvent, onRetry });
  body.setEncoding('utf8');
  const onData = (chunk: string) => {
    onChunk?.();
    parser.feed(chunk);
  };
  body.on('data', onData);
  const done = new Promise<void>((resolve, reject) => {
    body.once('end', () => resolve());
    body.once('error', reject);
    body.once('close', () => {
      if (body.complete) resolve();
      else reject(new Error('the stream was cut'));
    });
  });
  return { done, stop: () => body.off('data', onData) };
}

/**
 * Reads an SSE response until the JSON-RPC response with `id` arrives, handing every request and
 * notification before it to the listeners. Returns undefined when the stream ends without it;
 * throws when the stream breaks. After the response the rest is drained, so a target that ends the
 * stream (as it should) leaves its connection to the pool; one that keeps it open loses it.
 * `cursor` records the event ids and `retry` seen, so a stream that ends early can be resumed.
 */
export async function readResponseStream(
  body: IncomingMessage,
  id: RequestId,
  listeners: StreamListeners = {},
  cursor: StreamCursor = {},
): Promise<JSONRPCResponse | undefined> {
  let response: JSONRPCResponse | undefined;
  let failure: TooDeepError | undefined;
  let found!: () => void;
  const responded = new Promise<void>((resolve) => {
    found = resolve;
  });
  const reader = readEvents(
    body,
    (event) => {
      // An empty `id:` resets the last event id (the SSE rules): nothing to resume from.
      if (event.id !== undefined && !response && !failure) cursor.lastEventId = event.id || undefined;
      if (response || failure || !event.data) return; // priming events carry no data
      let message: unknown;
      try {
        message = JSON.parse(event.data);
      } catch {
        return; // not ours to interpret; a well-formed response still ends the call
      }
      // Relaying it would overflow the stack somewhere (re-serializing, mapping): the call fails instead.
      if (nestedDeeperThan(message)) {
        failure = new TooDeepError();
        found();
        return;
      }
      if (isResponse(message)) {
        if (message.id === id) {
          response = message;
          found();
        }
      } else if (isRequest(message)) listeners.onServerRequest?.(message);
      else if (isNotification(message)) listeners.onNotification?.(message);
    },
    undefined,
    (retryMs) => {
      cursor.retryMs = retryMs;
    },
  );
  await Promise.race([reader.done, responded]);
  if (failure) {
    body.destroy();
    throw failure;
  }
  if (response) {
    reader.stop();
    reader.done.catch(() => undefined);
    if (!body.complete) {
      const tail = setTimeout(() => body.destroy(), TAIL_MS);
      tail.unref();
      body.once('close', () => clearTimeout(tail));
      body.resume();
    }
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
