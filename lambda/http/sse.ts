import { noteClientMessage } from '../observability/request-context';
import type { JSONRPCMessage } from '../protocol/types';

/**
 * Bytes a client's stream may hold before whoever writes to it is told to wait (`room()`): with the
 * adapters waiting for the socket to drain, what a client does not read stops here, and the target's
 * stream is not read meanwhile (the target's own socket buffers take the rest).
 */
export const STREAM_HIGH_WATER_BYTES = 256 * 1024;

/** The client took nothing from its full stream for the stalled-client bound: it is treated as gone. */
export class StalledClientError extends Error {
  constructor(ms: number) {
    super(`the client read nothing for ${ms} ms while its stream was full`);
    this.name = 'StalledClientError';
  }
}

export interface SseStreamOptions {
  /**
   * How long the stream may stay full without the client reading (config `stalledClientTimeoutSeconds`):
   * then the body fails with a StalledClientError (the adapter cuts the connection) and `onCancel` runs.
   */
  stalledClientMs?: number;
}

/**
 * The one SSE writer: a response body written event by event. Writes after close (or after the
 * client went away) are dropped, so a relay never throws because its reader left. A client that
 * reads slower than the target writes is pushed back: `room()` says when to stop writing.
 */
export class SseStream {
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private readonly encoder = new TextEncoder();
  private keepAlive?: NodeJS.Timeout;
  private stall?: NodeJS.Timeout;
  private waiting?: { promise: Promise<void>; resolve: () => void };
  closed = false;
  readonly body: ReadableStream<Uint8Array>;
  /** Called once when the reader cancels the body (the client went away), or the client stalled. */
  onCancel?: () => void;

  constructor(private readonly options: SseStreamOptions = {}) {
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller;
        },
        // The reader took something and the stream is below its mark again.
        pull: () => this.relieve(),
        cancel: () => {
          this.stop();
          this.onCancel?.();
        },
      },
      new ByteLengthQueuingStrategy({ highWaterMark: STREAM_HIGH_WATER_BYTES }),
    );
  }

  /**
   * Undefined while the client's stream has room; else a promise that settles when it has again (or
   * the stream is over): a writer that can wait (reading a target's stream) waits for it.
   */
  room(): Promise<void> | undefined {
    if (this.closed || (this.controller.desiredSize ?? 1) > 0) return undefined;
    if (!this.waiting) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.waiting = { promise, resolve };
    }
    return this.waiting.promise;
  }

  response(headers: Record<string, string> = {}, status = 200): Response {
    return new Response(this.body, {
      status,
      headers: {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
        ...headers,
      },
    });
  }

  send(message: JSONRPCMessage): void {
    noteClientMessage(message); // an error's code goes to the request's access log line
    this.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  comment(text = 'keep-alive'): void {
    this.write(`: ${text}\n\n`);
  }

  /** Raw SSE text (already framed), e.g. another stream's bytes piped through. */
  write(text: string): void {
    if (this.closed) return;
    try {
      this.controller.enqueue(this.encoder.encode(text));
    } catch {
      this.stop();
      return;
    }
    if ((this.controller.desiredSize ?? 1) <= 0) this.watchStall();
  }

  /** Full: the client must read within the bound, or it is given up. */
  private watchStall(): void {
    const ms = this.options.stalledClientMs;
    if (ms === undefined || this.stall) return;
    this.stall = setTimeout(() => {
      this.stall = undefined;
      if (this.closed) return;
      this.stop();
      try {
        this.controller.error(new StalledClientError(ms));
      } catch {
        // already closed
      }
      this.onCancel?.();
    }, ms);
    this.stall.unref();
  }

  private relieve(): void {
    clearTimeout(this.stall);
    this.stall = undefined;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.resolve();
  }

  /** SSE comments keep proxies and clients from timing out an idle stream while a person answers. */
  startKeepAlive(intervalMs: number): void {
    if (this.keepAlive) return;
    this.keepAlive = setInterval(() => this.comment(), intervalMs);
    this.keepAlive.unref();
  }

  close(): void {
    if (this.closed) return;
    this.stop();
    try {
      this.controller.close();
    } catch {
      // already cancelled by the reader
    }
  }

  private stop(): void {
    this.closed = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.relieve(); // a writer waiting for room goes on (and finds the stream over)
  }
}
