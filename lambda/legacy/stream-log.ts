import { randomBytes } from 'node:crypto';
import type { GatewayConfig } from '../config/schema';
import type { SseEventLog } from '../http/sse';
import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { DYNAMODB_ITEM_LIMIT_BYTES } from '../protocol/errors';
import type { JSONRPCMessage, RequestId } from '../protocol/types';
import { Backoff } from '../scheduling/backoff';
import { type Clock, sleep } from '../scheduling/clock';
import type { PendingRecord, SessionRecord, SessionStore, StreamEventRecord } from '../state/store';

/**
 * The event log of resumable streams, kept in the session's partition (`E#<streamId>#<seq>`, sorting
 * before `S`, so the one session Query per request never reads it). The API:
 *
 * - Only sessions whose version has SSE polling get resumable streams (protocol/versions.ts
 *   `hasStreamPolling`, the one table of what each version has: exactly 2025-11-25).
 * - `openStreamLog(store, session, settings, logger)`: an `SseEventLog` for `new SseStream({ log })`.
 *   Every event is written (one PutItem; events asked together, one BatchWriteItem: `keepAll`) before it is sent. Bounded: each event expires at
 *   `settings.ttlSeconds` (never after the session); events past `settings.maxBytes` per stream are
 *   sent without an id and not kept (a replay skips them); the final message is always kept (one
 *   that does not fit an item is kept as an error response telling the client to retry). When the
 *   stream ends, one BatchWriteItem writes the end (expiring after `settings.retainSeconds`, the
 *   window in which a client that missed it can still reconnect for it) and removes every other event.
 * - `parseEventId(id)` and `followStream(store, sessionId, from, options)`: what a `GET` with
 *   `Last-Event-ID` replays, then polls for, until the stream's end (legacy/resume.ts).
 */

export interface StreamLogSettings {
  /** How long events are kept at most (capped by the session's expiry). */
  ttlSeconds: number;
  /** How long a stream's end (its final message) is kept after the stream ended. */
  retainSeconds: number;
  /** Bytes of event data kept per stream; beyond it events are sent without being kept. */
  maxBytes: number;
  /** The gateway's clock: expiries are counted from it, a late write given up on it. */
  clock: Clock;
}

export function streamLogSettings(config: GatewayConfig, clock: Clock): StreamLogSettings {
  return {
    ttlSeconds: config.streamLogTtlSeconds,
    retainSeconds: config.streamLogRetainSeconds,
    maxBytes: config.streamLogMaxBytes,
    clock,
  };
}

/** 96 random bits, base64url: an id no client can guess or mistake for another stream's. */
export function newStreamId(): string {
  return randomBytes(12).toString('base64url');
}

/** `<streamId>.<seq>` → its parts; undefined for anything else (an id the gateway never issued). */
export function parseEventId(id: string): { streamId: string; seq: number } | undefined {
  const match = /^([A-Za-z0-9_-]{16})\.(\d{1,9})$/.exec(id.trim());
  if (!match) return undefined;
  return { streamId: match[1]!, seq: Number(match[2]) };
}

/** Room for the item's keys and attributes besides the data (well over what they take). */
const ITEM_OVERHEAD_BYTES = 1024;

/** What the stream-log operations need of the store. */
export type StreamStore = Pick<SessionStore, 'putStreamEvent' | 'endStream' | 'readStream'> &
  Partial<Pick<SessionStore, 'putStreamEvents' | 'deletePending'>>;

/**
 * How long past the invocation's deadline a write may still take: the deadline leaves a margin
 * before the function is stopped, and the stream's end must reach the client within it.
 */
const WRITE_GRACE_AFTER_DEADLINE_MS = 500;

/** After a failed write, the end is still tried (the response matters most), for at most this long. */
const BROKEN_END_WRITE_MS = 1000;

/**
 * The log of a stream, plus: a pending record written with the stream's next events (one request),
 * so the request the next event asks is recorded before it is sent; `written` says whether it was.
 */
export interface StreamLog extends SseEventLog {
  keepWithNext(pending: PendingRecord, written: (ok: boolean) => void): void;
}

export function openStreamLog(
  store: StreamStore,
  session: Pick<SessionRecord, 'id' | 'expiresAt'>,
  settings: StreamLogSettings,
  logger: GatewayLogger,
  options: {
    streamId?: string;
    deadline?: number;
    /** The seqs already kept for this stream by the invocations before (a continued stream): dropped at its end too. */
    kept?: number[];
    /**
     * Pending records (gateway ids) the stream's end removes with the same write (the call's, over
     * with it); read when the stream ends. When that write fails they are removed on their own.
     */
    removeAtEnd?: () => string[];
    /**
     * The client's request the stream answers: kept on the stream's head (seq 0, the priming event
     * when there is one), with the stream's first write, for as long as the session. A reconnect after
     * everything else expired then learns which request it was about (legacy/resume.ts).
     */
    requestId?: RequestId;
  } = {},
): StreamLog {
  const streamId = options.streamId ?? newStreamId();
  const { clock } = settings;
  /** The head is kept (or needs no keeping): a continued stream's first invocation kept it. */
  let headKept = options.requestId === undefined || (options.kept ?? []).includes(0);
  /** A write failed: the stream has a gap, and DynamoDB may be down; later events go out at once, unkept. */
  let broken = false;
  // A write still running at the deadline's grace (or, once broken, after 1 s) is given up: the event is then sent unkept.
  const bounded = (write: Promise<void>): Promise<void> => {
    const limits = [options.deadline === undefined ? Infinity : options.deadline + WRITE_GRACE_AFTER_DEADLINE_MS];
    if (broken) limits.push(clock.now() + BROKEN_END_WRITE_MS);
    const until = Math.min(...limits);
    if (until === Infinity) return write;
    const left = until - clock.now();
    let timer: unknown;
    const late = new Promise<never>((_, reject) => {
      timer = clock.setTimeout(
        () => reject(new Error('the write took too long (the deadline, or a store that already failed)')),
        Math.max(0, left),
      );
    });
    return Promise.race([write, late]).finally(() => clock.clearTimeout(timer));
  };
  const kept: number[] = [...(options.kept ?? [])];
  let keptBytes = 0;
  const nowSeconds = () => Math.floor(clock.now() / 1000);
  const expiry = (seconds: number) => Math.min(session.expiresAt, nowSeconds() + seconds);
  const warn = (message: string, extra: object) => logger.warn(message, { sessionId: session.id, streamId, ...extra });

  /** Whether an event fits the stream's cap (counted as kept when it does). */
  const fits = (data: string): boolean => {
    const bytes = Buffer.byteLength(data);
    if (keptBytes + bytes > settings.maxBytes || bytes + ITEM_OVERHEAD_BYTES > DYNAMODB_ITEM_LIMIT_BYTES) {
      warn('stream event not kept: over the stream log cap (a reconnect will not replay it)', {
        bytes,
        keptBytes,
        limitBytes: settings.maxBytes,
      });
      return false;
    }
    keptBytes += bytes;
    return true;
  };
  /** Pending records to write with the next events (keepWithNext), and who waits to know. */
  let riders: Array<{ record: PendingRecord; written: (ok: boolean) => void }> = [];
  /** Writes the events (one request), with the riders; false when the store failed: nothing more is kept but the end. */
  const write = async (asked: StreamEventRecord[]): Promise<boolean> => {
    const riding = riders;
    riders = [];
    // The head goes with the stream's first event (one request either way); the priming event is the head.
    const events =
      headKept || asked.length === 0 || asked.some((event) => event.seq === 0) ? asked : [head(), ...asked];
    const settle = (ok: boolean) => {
      for (const rider of riding) rider.written(ok);
    };
    if (events.length === 0 && riding.length === 0) return true;
    try {
      const [only] = events;
      await bounded(
        riding.length > 0 && store.putStreamEvents
          ? store.putStreamEvents(
              session.id,
              events,
              riding.map((r) => r.record),
            )
          : only && events.length === 1
            ? store.putStreamEvent(session.id, only)
            : // Several at once only from a store that can (the log's own tests give one that cannot).
              store.putStreamEvents
              ? store.putStreamEvents(session.id, events)
              : Promise.all(events.map((event) => store.putStreamEvent(session.id, event))).then(() => undefined),
      );
    } catch (error) {
      broken = true;
      settle(false);
      warn('stream event not kept: the store failed (this stream keeps nothing more but its end)', {
        error: describeError(error),
      });
      return false;
    }
    settle(true);
    for (const event of events) kept.push(event.seq);
    if (events.some((event) => event.seq === 0)) headKept = true;
    return true;
  };
  const head = (): StreamEventRecord => ({
    streamId,
    seq: 0,
    data: '',
    requestId: options.requestId,
    expiresAt: session.expiresAt,
  });
  const record = (seq: number, data: string): StreamEventRecord =>
    seq === 0 && options.requestId !== undefined
      ? { ...head(), data }
      : { streamId, seq, data, expiresAt: expiry(settings.ttlSeconds) };

  return {
    streamId,
    keepWithNext(pending: PendingRecord, written: (ok: boolean) => void): void {
      if (!store.putStreamEvents) {
        written(false);
        return;
      }
      riders.push({ record: pending, written });
    },
    async keep(seq: number, data: string): Promise<boolean> {
      if (broken || !fits(data)) {
        await write([]); // the riders still go (their event is then sent unkept)
        return false;
      }
      return write([record(seq, data)]);
    },
    async keepAll(events: ReadonlyArray<{ seq: number; data: string }>): Promise<boolean[]> {
      const keeping = events.map((e) => !broken && fits(e.data));
      const written = await write(events.filter((_, i) => keeping[i]).map((e) => record(e.seq, e.data)));
      return keeping.map((k) => k && written);
    },
    async end(seq: number, final: { message: JSONRPCMessage; data: string } | undefined): Promise<boolean> {
      // Requests whose event never came (the stream ended first) were never asked: not written.
      for (const rider of riders.splice(0)) rider.written(false);
      let data = final?.data ?? '';
      const fits = Buffer.byteLength(data) + ITEM_OVERHEAD_BYTES <= DYNAMODB_ITEM_LIMIT_BYTES;
      if (final && !fits) data = JSON.stringify(tooLargeToKeep(final.message, Buffer.byteLength(data)));
      const pending = options.removeAtEnd?.() ?? [];
      try {
        await bounded(
          store.endStream(
            session.id,
            { streamId, seq, data, end: true, expiresAt: expiry(settings.retainSeconds) },
            // The head stays, marked ended (it expires with the session); a stream begun before heads
            // were kept has none.
            kept.filter((keptSeq) => keptSeq !== 0 || options.requestId === undefined),
            pending,
            options.requestId === undefined ? undefined : { ...head(), ended: true },
          ),
        );
      } catch (error) {
        warn('stream end not kept: the store failed (a reconnect will not get the final message)', {
          error: describeError(error),
        });
        // A late answer must find nothing: the call's records go on their own (best effort, as before).
        if (pending.length > 0 && store.deletePending) {
          await store
            .deletePending(session.id, pending)
            .catch((deleteError) => warn('removing pending records failed', { error: describeError(deleteError) }));
        }
        return false;
      }
      return final !== undefined && fits;
    },
  };
}

/** What a reconnecting client gets instead of a final message that does not fit one item. */
function tooLargeToKeep(message: JSONRPCMessage, bytes: number): JSONRPCMessage {
  const id: RequestId | null = 'id' in message && message.id !== undefined ? (message.id as RequestId) : null;
  return {
    jsonrpc: '2.0',
    id: id as RequestId,
    error: {
      code: -32603,
      message: `The response (${bytes} bytes) was sent on the original connection but is too large to keep for a reconnect (DynamoDB item limit ${DYNAMODB_ITEM_LIMIT_BYTES} bytes); retry the call`,
      data: { type: 'ResponseNotKept', limitBytes: DYNAMODB_ITEM_LIMIT_BYTES, sizeBytes: bytes, retryable: true },
    },
  };
}

export interface FollowOptions {
  /** Stop following (without the stream's end) at this epoch ms: the invocation's deadline. */
  until: number;
  /** The gateway's clock: `until` is on it, the polls wait on it. */
  clock: Clock;
  /** The reader went away. */
  signal: AbortSignal;
  /** Poll interval while the stream is live: starts at `minMs`, doubles to `maxMs` while nothing new comes. */
  pollMs: { minMs: number; maxMs: number };
  /**
   * Called whenever the reader has caught up (after the replay, then after each poll that found
   * nothing new), with the last seq read: true stops following (the caller goes on with the stream).
   */
  caughtUp?: (lastSeq: number) => Promise<boolean>;
}

/** What a reconnect finds for its `Last-Event-ID`. */
export type FollowStart =
  /** Nothing of the stream is kept: an id never issued, or another session's stream. */
  | { kind: 'unknown' }
  /** Only the stream's head is left (the rest expired, or the id is past anything kept): the request it answered. */
  | { kind: 'expired'; requestId: RequestId }
  /** The id names the stream's end: the client has the final message; nothing follows. */
  | { kind: 'over'; end: StreamEventRecord }
  /** The events after the id, then the stream followed live. */
  | { kind: 'live'; events: AsyncGenerator<StreamEventRecord> };

/**
 * The stream named by an event id of this session. Live when something of it is kept after that id,
 * or it is still going (its head not marked ended): then the events after the id in order, then new
 * ones as they are kept (polled: one consistent Query per poll), ending with the stream's end event,
 * or when `until` passes or the reader leaves. Otherwise what is left says how the reconnect ends
 * (FollowStart): the id is the end itself; only the head is left; or nothing is.
 */
export async function followStream(
  store: StreamStore,
  sessionId: string,
  from: { streamId: string; seq: number },
  options: FollowOptions,
): Promise<FollowStart> {
  const first = await store.readStream(sessionId, from.streamId, from.seq);
  const end = first.find((event) => event.end);
  if (end && end.seq <= from.seq) return { kind: 'over', end };
  const head = first[0]?.seq === 0 ? first[0] : undefined;
  const live = end !== undefined || first.some((event) => event.seq > 0) || (head !== undefined && !head.ended);
  if (live) return { kind: 'live', events: follow(store, sessionId, from, first, options) };
  const kept = head ?? (await store.readStream(sessionId, from.streamId, 0)).find((event) => event.seq === 0);
  // Still going (its head not marked ended), though what the client last got expired: followed, not ended.
  if (kept?.requestId !== undefined && !kept.ended) {
    return { kind: 'live', events: follow(store, sessionId, from, [], options) };
  }
  return kept?.requestId !== undefined ? { kind: 'expired', requestId: kept.requestId } : { kind: 'unknown' };
}

async function* follow(
  store: StreamStore,
  sessionId: string,
  from: { streamId: string; seq: number },
  first: StreamEventRecord[],
  options: FollowOptions,
): AsyncGenerator<StreamEventRecord> {
  let last = from.seq;
  let batch = first;
  const backoff = new Backoff({ firstMs: options.pollMs.minMs, maxMs: options.pollMs.maxMs, factor: 2 });
  backoff.next(); // a batch without progress waits twice the least; right after progress, the least
  for (;;) {
    let progressed = false;
    for (const event of batch) {
      if (event.seq <= last) continue;
      last = event.seq;
      progressed = true;
      yield event;
      if (event.end) return;
    }
    if (options.caughtUp && (await options.caughtUp(last))) return;
    if (progressed) backoff.reset();
    const wait = Math.min(backoff.next(), options.until - options.clock.now());
    if (wait <= 0 || options.signal.aborted) return;
    await sleep(options.clock, wait, options.signal);
    if (options.signal.aborted) return;
    batch = await store.readStream(sessionId, from.streamId, last + 1);
  }
}
