import type { IncomingMessage } from 'node:http';
import {
  isNotification,
  isRequest,
  isResponse,
  type JSONRPCResponse,
  MAX_JSON_DEPTH,
  nestedDeeperThan,
} from '../protocol/jsonrpc';
import type { JSONRPCNotification, JSONRPCRequest, RequestId } from '../protocol/types';
import { BoundedSseParser, type SseMessage, TooLargeError } from './sse-parser';

export { TooLargeError };

/** What a target streams while it answers one request (both eras). */
export interface StreamListeners {
  /** A request the target sends while answering (legacy era only; a 2026 stream never carries one). */
  onServerRequest?(request: JSONRPCRequest): void;
  onNotification?(notification: JSONRPCNotification): void;
  /**
   * Backpressure: a promise while whoever takes the messages cannot take more (the client's stream is
   * full); reading the target pauses until it settles, so its bytes wait in the socket, not here.
   */
  backpressure?(): Promise<void> | undefined;
}

export interface ReadOptions {
  /** Largest event (or unfinished line) accepted; beyond it the stream is given up. */
  maxEventBytes?: number;
  /** Called with every chunk read (before parsing). */
  onChunk?(): void;
  backpressure?(): Promise<void> | undefined;
  /** A `retry:` field: the reconnection time the target asks for (ms). */
  onRetry?(retryMs: number): void;
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
 * ends; rejects when it breaks (aborted, connection reset) before its end, or with a TooLargeError
 * (the body destroyed) as soon as one event — or a line that never ends — grows past
 * `maxEventBytes`: the parser holds at most that much (plus one chunk) of a target's stream.
 */
export function readEvents(
  body: IncomingMessage,
  onEvent: (event: SseMessage) => void,
  options: ReadOptions = {},
): { done: Promise<void>; stop(): void } {
  let tooLarge!: (error: TooLargeError) => void;
  const overrun = new Promise<never>((_, reject) => {
    tooLarge = reject;
  });
  // Characters, not bytes: the body is decoded as it arrives (a character is at most 3 UTF-8 bytes here).
  const parser = new BoundedSseParser(onEvent, () => undefined, options.maxEventBytes, options.onRetry);
  body.setEncoding('utf8');
  const onData = (chunk: string) => {
    options.onChunk?.();
    try {
      parser.feed(chunk);
    } catch (error) {
      if (!(error instanceof TooLargeError)) throw error;
      body.off('data', onData);
      body.destroy();
      tooLarge(error);
      return;
    }
    const wait = options.backpressure?.();
    if (wait) {
      body.pause();
      void wait.finally(() => body.resume());
    }
  };
  body.on('data', onData);
  const ended = new Promise<void>((resolve, reject) => {
    body.once('end', () => resolve());
    body.once('error', reject);
    body.once('close', () => {
      if (body.complete) resolve();
      else reject(new Error('the stream was cut'));
    });
  });
  const done = Promise.race([overrun, ended]);
  // The losing promise of the race must not surface as an unhandled rejection.
  ended.catch(() => undefined);
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
  options: Omit<ReadOptions, 'backpressure' | 'onRetry'> & { cursor?: StreamCursor } = {},
): Promise<JSONRPCResponse | undefined> {
  const cursor = options.cursor ?? {};
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
    {
      ...options,
      backpressure: listeners.backpressure,
      onRetry: (retryMs) => {
        cursor.retryMs = retryMs;
      },
    },
  );
  await Promise.race([reader.done, responded]).catch((error: unknown) => {
    // The stream broke (or was detached) just as the response was read: the response wins. Its event id
    // is already the cursor's, so resuming from there would never see it again.
    if (!response) throw error;
  });
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
