import type { JSONRPCMessage } from '../protocol/types';
import type { AcceptPreference } from './responses';
import { jsonResponse } from './responses';
import { type SseEventLog, SseStream } from './sse';

/**
 * "JSON now, SSE if needed", for both eras: a relayed call answers with one JSON body when the
 * target just answers, and turns into an SSE stream at the first message that must reach the client
 * before the result (a server request, progress, a log message) — or, with `streamAfterMs`, once the
 * call runs long enough to need keep-alives. A client that accepts only SSE gets a stream at once;
 * one that accepts only JSON never gets one.
 */
export interface DeferredResponseOptions {
  accept: AcceptPreference;
  headers?: Record<string, string>;
  keepAliveMs: number;
  /** Open the stream after this long even if nothing was relayed yet. */
  streamAfterMs?: number;
  /** The client cancelled the stream (went away), or left it full past `stalledClientMs`. */
  onClientGone?: () => void;
  /** How long the client's stream may stay full without being read (config `stalledClientTimeoutSeconds`). */
  stalledClientMs?: number;
  /** Makes the stream resumable (http/sse.ts): called once, when the stream opens. */
  eventLog?: () => SseEventLog;
  /** Whether a resumable stream opens with a priming event (http/sse.ts `prime`; default true), asked when it opens. */
  prime?: () => boolean;
  /** A stream already open (a call taken over on the client's reconnect): used as this response's stream. */
  existing?: SseStream;
}

export class DeferredResponse {
  readonly response: Promise<Response>;
  private resolve!: (response: Response) => void;
  private sse?: SseStream;
  private finished = false;
  private timer?: NodeJS.Timeout;

  constructor(private readonly options: DeferredResponseOptions) {
    this.response = new Promise((resolve) => {
      this.resolve = resolve;
    });
    if (options.existing) {
      // Its response is already the client's (the reconnect's): `response` is never used then.
      this.sse = options.existing;
      this.sse.onCancel = () => options.onClientGone?.();
    } else if (options.accept.sse && !options.accept.json) this.stream();
    else if (options.streamAfterMs !== undefined) this.streamAfter(options.streamAfterMs);
  }

  /** Opens the stream after `ms` unless the call is over by then (a long wait gets keep-alives). */
  streamAfter(ms: number): void {
    if (!this.options.accept.sse || this.sse || this.timer || this.finished) return;
    this.timer = setTimeout(() => this.stream(), ms);
    this.timer.unref();
  }

  get streaming(): boolean {
    return this.sse !== undefined;
  }

  /** Whether the client's stream (when open) is resumable: its events are kept and carry ids. */
  get resumable(): boolean {
    return this.sse?.resumable ?? false;
  }

  /** Resolves once everything asked of the stream so far was kept and written. */
  flushed(): Promise<void> {
    return this.sse?.flushed() ?? Promise.resolve();
  }

  /** The client's stream, opened on first use; undefined when the client takes no SSE or the call is over. */
  stream(): SseStream | undefined {
    if (!this.sse && this.options.accept.sse && !this.finished) {
      clearTimeout(this.timer);
      const sse = new SseStream({
        stalledClientMs: this.options.stalledClientMs,
        log: this.options.eventLog?.(),
        prime: this.options.prime?.(),
      });
      sse.onCancel = () => this.options.onClientGone?.();
      sse.startKeepAlive(this.options.keepAliveMs);
      this.sse = sse;
      this.resolve(sse.response(this.options.headers));
    }
    return this.sse;
  }

  /** Undefined while the client can take more; else a promise that settles when it can (backpressure). */
  room(): Promise<void> | undefined {
    return this.sse?.room();
  }

  /** Ends the connection but not the stream: the client reconnects after `retryMs` (a released call, http/sse.ts). */
  hangUp(retryMs: number): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    this.sse?.hangUp(retryMs);
  }

  /** Ends a stream whose last message was already sent (a held call); a JSON answer cannot be left without a body. */
  end(): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    this.sse?.close();
  }

  /** Ends the call with its last message: the last event of the stream, or the JSON body with `status` and `headers`. */
  finish(message: JSONRPCMessage, status = 200, headers: Record<string, string> = {}): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    if (this.sse) {
      this.sse.end(message);
    } else {
      this.resolve(jsonResponse(status, message, { ...headers, ...this.options.headers }));
    }
  }
}
