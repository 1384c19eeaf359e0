import { stringifyMessage } from '../protocol/request-id';
import type { JSONRPCMessage } from '../protocol/types';
import { observeClientMessage } from './client-messages';

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

/**
 * Resumable streams (MCP 2025-11-25, transports "Resumability and redelivery", SEP-1699).
 *
 * An `SseStream` built with an `SseEventLog` is resumable: it opens with a priming event (an `id`
 * and empty `data`), and every message event carries an `id` of the form `<streamId>.<seq>` (seq
 * 0 is the priming event, then 1, 2, … in the order sent). Each event is handed to the log and
 * kept before it is written to the client, so what a client was sent can be read back by any
 * instance: `GET /mcp` with `Last-Event-ID` replays that stream after the id and then follows it
 * live (legacy/resume.ts). Whoever builds the stream decides whether it may be resumable (only for
 * sessions of 2025-11-25 or later: older clients may choke on the empty priming data); the log
 * implementation over the session store is `legacy/stream-log.ts` (`openStreamLog`, with the settings
 * of the `streamLog*` configuration keys).
 *
 *   const sse = new SseStream({ log: openStreamLog(store, session, settings, logger) });
 *   sse.send(message);          // kept, then written with its id
 *   sse.end(finalMessage);      // the stream's last event, kept as its end; then closed
 *   sse.close();                // ends the stream without a final message (the log records the end)
 *
 * Ordering: `send`, `end` and `close` return at once; events are kept and written strictly in call
 * order. `flushed()` resolves once everything asked so far is kept and written (or dropped).
 */
export interface SseEventLog {
  /** Names the stream within its session; the first part of every event id. */
  readonly streamId: string;
  /**
   * Keeps event `seq` (`data`: the message's JSON, '' for the priming event) before it is sent. Resolves true when
   * kept (the event is then sent with its id), false when it was not (over the stream's size cap, or
   * the store failed: it is sent without an id, and a replay skips it). Never rejects.
   */
  keep(seq: number, data: string): Promise<boolean>;
  /**
   * Keeps several consecutive events with one write (as `keep` each, in order; one result each).
   * Optional: a log without it is asked event by event.
   */
  keepAll?(events: ReadonlyArray<{ seq: number; data: string }>): Promise<boolean[]>;
  /**
   * The stream ends: with its final message (kept as seq `seq`, marking the end), or without one
   * (an end marker at `seq`). The log then drops the stream's other events: once the stream is over
   * a reconnecting client needs only its end (an earlier server request would be stale). Resolves
   * whether the final message was kept as sent. Never rejects.
   */
  end(seq: number, final: { message: JSONRPCMessage; data: string } | undefined): Promise<boolean>;
}

/** `<streamId>.<seq>`: the event ids of resumable streams (see SseEventLog). */
export function eventId(streamId: string, seq: number): string {
  return `${streamId}.${seq}`;
}

export interface SseStreamOptions {
  /**
   * How long the stream may stay full without the client reading (config `stalledClientTimeoutSeconds`):
   * then the body fails with a StalledClientError (the adapter cuts the connection) and `onCancel` runs.
   */
  stalledClientMs?: number;
  /** Makes the stream resumable: a priming event first (unless `prime` is false), every event kept and sent with an id. */
  log?: SseEventLog;
  /**
   * Whether a resumable stream opens with the priming event (an id and empty `data`). A client not
   * known to resume gets none: a plain SSE parser dispatches its empty data as an event (the WHATWG
   * rules, `sseclient-py`), which a client that parses every event as JSON fails on. Its events still
   * carry ids; seq 0 is then never sent.
   */
  prime?: boolean;
  /** The `retry` field (ms) sent with the priming event: how long a client waits before reconnecting. */
  retryMs?: number;
  /**
   * Goes on with a stream another invocation began (a released call taken over on a reconnect): no
   * priming event, and the events go on at this seq.
   */
  continueAtSeq?: number;
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
  /** No more writes reach the client (closed by us, or the reader went away). */
  closed = false;
  /** The reader cancelled the body (the client went away). */
  cancelled = false;
  /** Closing was asked (end/close); later sends are dropped. */
  private ending = false;
  /** An event with an id was written: the client has one to reconnect with. */
  private idSent = false;
  private log?: SseEventLog;
  private seq = 0;
  /**
   * Events asked while the events before them are being kept: kept together, with one write, when
   * their turn comes (the priming event and the message that opened the stream).
   */
  private batch?: Array<{
    seq: number;
    data: string;
    bytes: number;
    framed: (id: string | undefined) => string;
    unless?: Promise<boolean>;
  }>;
  /** The priming event waits this long for the first message, to be kept with it (see PRIMING_GATHER_MS). */
  private gathering?: { promise: Promise<void>; done: () => void };
  /** Events are kept and written in call order. */
  private queue: Promise<void> = Promise.resolve();
  /**
   * Bytes of events asked for but not yet written (waiting in `queue` for the log): they are held in
   * memory just like the stream's own buffer, so `room()` counts them too.
   */
  private queuedBytes = 0;
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
          this.cancelled = true;
          this.stop();
          this.onCancel?.();
        },
      },
      new ByteLengthQueuingStrategy({ highWaterMark: STREAM_HIGH_WATER_BYTES }),
    );
    this.log = options.log;
    if (this.log && options.continueAtSeq !== undefined) this.seq = options.continueAtSeq;
    else if (this.log && options.prime === false) this.seq = 1;
    else if (this.log) {
      const retry = options.retryMs !== undefined ? `retry: ${options.retryMs}\n` : '';
      this.gathering = gatherFor(PRIMING_GATHER_MS);
      this.logged('', (id) => (id ? `id: ${id}\n${retry}data: \n\n` : ''));
    }
  }

  /** Whether events carry ids and are kept (a resumable stream). */
  get resumable(): boolean {
    return this.log !== undefined;
  }

  /**
   * Undefined while the client's stream has room; else a promise that settles when it has again (or
   * the stream is over): a writer that can wait (reading a target's stream) waits for it.
   */
  room(): Promise<void> | undefined {
    if (!this.full()) return undefined;
    if (!this.waiting) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.waiting = { promise, resolve };
    }
    return this.waiting.promise;
  }

  /**
   * Whether a writer must wait: the client's buffer plus what waits for the log reach the mark. After
   * the stream closed only the queue counts: a resumable stream still keeps each event for a reconnect.
   */
  private full(): boolean {
    const buffered = this.closed
      ? 0
      : STREAM_HIGH_WATER_BYTES - (this.controller.desiredSize ?? STREAM_HIGH_WATER_BYTES);
    return buffered + this.queuedBytes >= STREAM_HIGH_WATER_BYTES;
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

  /**
   * Sends a message (kept first on a resumable stream). `unless`: settled by the time the event is
   * kept (what was written with it, e.g. the record of the request it asks); true drops the event.
   */
  send(message: JSONRPCMessage, options: { unless?: Promise<boolean> } = {}): void {
    if (this.ending) return;
    observeClientMessage(message); // the access log's facts, and GatewayErrors for the gateway's own errors
    const data = stringifyMessage(message);
    if (!this.log) {
      this.write(frame(undefined, data));
      return;
    }
    this.logged(data, (id) => frame(id, data), options.unless);
  }

  /** Sends the stream's final message and closes it (a resumable stream keeps it as the stream's end). */
  end(message: JSONRPCMessage): void {
    if (this.ending) return;
    observeClientMessage(message);
    const data = stringifyMessage(message);
    this.ending = true;
    const log = this.log;
    if (!log) {
      this.write(frame(undefined, data));
      this.closeNow();
      return;
    }
    const seq = this.seq++;
    this.enqueue(async () => {
      const kept = await log.end(seq, { message, data });
      if (kept) this.writeWithId(frame(eventId(log.streamId, seq), data));
      else this.write(frame(undefined, data));
      this.closeNow();
    });
  }

  comment(text = 'keep-alive'): void {
    this.write(`: ${text}\n\n`);
  }

  /** Raw SSE text (already framed), e.g. another stream's bytes piped through. Never kept. */
  write(text: string): void {
    if (this.closed || text === '') return;
    try {
      this.controller.enqueue(this.encoder.encode(text));
    } catch {
      this.stop();
      return;
    }
    if ((this.controller.desiredSize ?? 1) <= 0) this.watchStall();
  }

  /** Writes an event that carries an id (the client can reconnect from it). */
  private writeWithId(text: string): void {
    if (text === '' || this.closed) return;
    this.idSent = true;
    this.write(text);
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
    this.release();
  }

  /** A writer waiting for room goes on once there is room (or the stream is over and nothing is queued). */
  private release(): void {
    if (this.full()) return;
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

  /** Ends the stream without a final message (after what was already asked is kept and written). */
  close(): void {
    if (this.ending) return;
    this.ending = true;
    const log = this.log;
    if (!log) {
      this.closeNow();
      return;
    }
    const seq = this.seq++;
    this.enqueue(async () => {
      await log.end(seq, undefined);
      this.closeNow();
    });
  }

  /**
   * Goes on with a stream another invocation began, from here on kept in `log` at `seq` on (a call
   * taken over on a reconnect; what was replayed before was written raw, with its own ids).
   */
  continueWith(log: SseEventLog, seq: number): void {
    this.log = log;
    this.seq = seq;
    // A reconnect's stream begins with the id it resumed from (legacy/resume.ts).
    this.idSent = true;
  }

  /** The stream's id within its session (resumable streams only). */
  get streamId(): string | undefined {
    return this.log?.streamId;
  }

  /** The seq the next event gets (the stream's events so far are below it). */
  get nextSeq(): number {
    return this.seq;
  }

  /**
   * Ends the connection but not the stream (SSE polling, MCP 2025-11-25): after what was asked so far
   * is kept and written, a `retry` field tells the client when to reconnect with `Last-Event-ID`; the
   * log records no end, so the stream goes on on whichever instance the client reconnects to. A client
   * that got no event with an id yet (a stream opened without a priming event, nothing sent on it) is
   * sent one first, the spec's priming event: without an id it could not reconnect at all.
   */
  hangUp(retryMs: number): void {
    if (this.ending) return;
    this.ending = true;
    const log = this.log;
    this.enqueue(async () => {
      if (log && !this.idSent) {
        const seq = this.seq++;
        if (await log.keep(seq, '')) this.writeWithId(`id: ${eventId(log.streamId, seq)}\ndata: \n\n`);
      }
      this.write(`retry: ${Math.max(0, Math.round(retryMs))}\n\n`);
      this.closeNow();
    });
  }

  /** Resolves once everything asked so far was kept and written (or dropped). */
  flushed(): Promise<void> {
    return this.queue;
  }

  private logged(data: string, framed: (id: string | undefined) => string, unless?: Promise<boolean>): void {
    const log = this.log!;
    const seq = this.seq++;
    const bytes = Buffer.byteLength(data);
    this.queuedBytes += bytes;
    const event = { seq, data, bytes, framed, unless };
    if (this.batch) {
      this.batch.push(event);
      if (this.batch.length > 1) this.gathering?.done(); // the priming event has its message
      return;
    }
    const batch = [event];
    this.batch = batch;
    this.enqueue(async () => {
      await this.gathering?.promise;
      this.gathering = undefined;
      if (this.batch === batch) this.batch = undefined; // later events go in the next batch
      try {
        const kept = batch.length > 1 && log.keepAll ? await log.keepAll(batch) : await keepEach(log, batch);
        const dropped = await Promise.all(batch.map((e) => e.unless ?? false));
        batch.forEach((e, i) => {
          if (dropped[i]) return;
          if (kept[i]) this.writeWithId(e.framed(eventId(log.streamId, e.seq)));
          else this.write(e.framed(undefined));
        });
      } finally {
        for (const e of batch) this.queuedBytes -= e.bytes;
        this.release();
      }
    }, true);
  }

  private enqueue(task: () => Promise<void>, batching = false): void {
    if (!batching) {
      // What comes after (the end, a hang-up) goes after the batch, which need not wait any more.
      this.batch = undefined;
      this.gathering?.done();
    }
    // A log never rejects; the catch keeps one broken write from stopping the ones after it.
    this.queue = this.queue.then(task).catch(() => undefined);
  }

  private closeNow(): void {
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

/**
 * How long a new resumable stream's priming event waits for the stream's first message before it is
 * kept alone: a stream opened for a message (a target's request relayed to the client) keeps both with
 * one write. Nothing is sent before it is kept, so a reconnect never names an event that is not kept.
 */
const PRIMING_GATHER_MS = 50;

function gatherFor(ms: number): { promise: Promise<void>; done: () => void } {
  let done!: () => void;
  const promise = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    done = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { promise, done };
}

async function keepEach(log: SseEventLog, events: ReadonlyArray<{ seq: number; data: string }>): Promise<boolean[]> {
  const kept: boolean[] = [];
  for (const e of events) kept.push(await log.keep(e.seq, e.data));
  return kept;
}

/** One message event; `id` only on resumable streams (also what a replay writes). */
export function frame(id: string | undefined, data: string): string {
  return `${id ? `id: ${id}\n` : ''}event: message\ndata: ${data}\n\n`;
}
