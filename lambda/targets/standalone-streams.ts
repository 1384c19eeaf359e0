import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { MCP_HEADERS } from '../protocol/headers';
import { isNotification, isRequest } from '../protocol/jsonrpc';
import type { JSONRPCNotification, JSONRPCRequest } from '../protocol/types';
import { BackgroundTasks } from '../scheduling/background-tasks';
import { CallTimers } from '../scheduling/call-timers';
import { type Clock, waitAtMost } from '../scheduling/clock';
import type { TargetResponse } from './http-client';
import type { LegacySession, LegacyTargetClient } from './legacy-client';
import { readEvents, type StreamListeners, TooLargeError } from './sse-reader';
import { DEFAULT_RESUME_POLICY, resumeDelayMs } from './stream-resume';

/**
 * The standalone GET stream of legacy target sessions. A target may send its requests to the user
 * (elicitation, sampling, roots) and notifications there instead of on the call's POST stream: the
 * official SDKs do so for every request not tied to the call (v1 `server.server.elicitInput(params)`
 * without `relatedRequestId`, v2 `ctx.mcpReq.elicitInput` in a 2025 session), and drop them when no
 * GET stream is open. So a call that can relay such requests attaches to its target session's
 * stream first, and the stream is open before the call is sent — except when the GET resumes from
 * an event id the target gave on that session's GET stream (kept after the stream closes,
 * `resumeIds`): a target that gives ids keeps what it sends in its event store, also while no stream
 * is open, and replays it after that id, so the call goes out with the GET, not after it. Only for
 * target sessions no other instance reads (`resumable`, the 2026-07-28 pool's): the last id seen
 * here is then the stream's last; a 2025 session's target session is read by whichever instance
 * serves its calls, and resuming from this instance's older id would replay what another instance
 * already relayed (a question put to the user twice).
 *
 * - One GET connection per (target session, instance), shared by the calls of that session that run
 *   here; opened on the first attach, closed when the last call detaches (nothing outlives the
 *   invocations that use it, as Lambda requires).
 * - A request on the stream belongs to no call: it goes to the call that attached first (still
 *   attached) among those that can relay requests. Progress goes to the call whose token it names;
 *   other notifications to the first call.
 * - 409 (the target allows one GET stream per session and another instance holds it): retried every
 *   `retryMs` (250 ms) while calls are attached; meanwhile that instance relays the requests on its own call's
 *   stream of the same client session.
 * - A stream that ends early is reopened, with `Last-Event-ID` when the target gave event ids, after
 *   the target's `retry` when it gave one (bounded as ./stream-resume.ts bounds it).
 * - 405 (no GET stream): remembered per target for `unsupportedTtlMs`; calls then go ahead without.
 * - The session's client GET stream (legacy/client-stream.ts) may own a connection (`listen`): it then
 *   takes the requests and every notification but progress, and keeps the connection open without
 *   calls; `Last-Event-ID` given by it resumes where a previous stream (any instance) stopped; a 404
 *   tells it (the target forgot the session); an event id the target refuses (4xx) is dropped.
 * - 409 right after this instance closed the session's previous stream (back-to-back calls): the
 *   target has not yet noticed that close, and what it sends meanwhile on "the" GET stream is lost (the
 *   v1 SDK drops it, or keeps it in an event store nobody resumes). So within `OWN_CLOSE_WINDOW_MS`
 *   of our own close the GET is retried every `OWN_CLOSE_RETRY_MS` and the call waits for it
 *   (at most `openTimeoutMs`), instead of going ahead without a stream.
 */

export interface StandaloneListener extends StreamListeners {
  /** The progress token this call's request carries to the target, to route progress to it. */
  progressToken?: string;
  /** The call can relay the target's requests to the user (else it listens for notifications only). */
  relaysRequests?: boolean;
  /** No other instance reads this target session's GET stream: it may resume from this instance's last id. */
  resumable?: boolean;
}

/**
 * The client's own GET stream of the gateway session that owns the target session: what the target
 * sends outside calls goes here first (requests, and every notification but progress, which belongs
 * to the call whose token it names).
 */
export interface SessionStreamListener {
  onServerRequest(request: JSONRPCRequest): void;
  onNotification(notification: JSONRPCNotification): void;
  /** The target no longer knows the session (404): the stream is not reopened. */
  onGone(): void;
}

/** A client GET stream's hold on one target session's stream. */
export interface SessionStreamHandle {
  /** The last event id the target gave on the stream (to resume it from another instance later). */
  lastEventId(): string | undefined;
  /** Lets go (the stream closes unless calls of this instance still use it). */
  close(): void;
}

interface Connection {
  target: string;
  client: LegacyTargetClient;
  session: LegacySession;
  listeners: StandaloneListener[];
  /** The gateway session's client GET stream, while one is open here. */
  owner?: SessionStreamListener;
  abort?: AbortController;
  lastEventId?: string;
  /** The target's last `retry` interval: the wait before reopening a stream it ended. */
  retryMs?: number;
  /** Resolves once the stream answered (open, refused, busy) or could not be reached. */
  ready?: Promise<void>;
  /** The last GET was sent with `Last-Event-ID`: the target replays on it what it sent before (no wait). */
  resuming?: boolean;
  /** Only this instance reads the target session's GET stream: its last event id is kept (`resumeIds`). */
  resumable?: boolean;
  /** Chunks read so far (drain watches it). */
  received: number;
}

/** How long a finishing call waits at most for its session's GET stream to deliver what is in flight. */
const DRAIN_MAX_MS = 50;
/** Target sessions whose last GET-stream event id an instance keeps (an id is under 100 bytes). */
const RESUME_IDS_MAX = 10_000;
/** How long a target's notifications on its GET stream make this instance wait for it to settle. */
const TALKED_TTL_MS = 10 * 60_000;
/** Listening calls that settle while an instance learns whether a target talks on its GET stream. */
const PROBE_CALLS = 20;
/** A settling call waits at most this many quiet windows (data that keeps flowing does not hold it longer). */
const SETTLE_ROUNDS = 5;
/** A 409 this soon after this instance closed the session's GET stream is that close not yet seen by the target. */
const OWN_CLOSE_WINDOW_MS = 1000;
const OWN_CLOSE_RETRY_MS = 15;

export interface StandaloneStreamsOptions {
  /** How long to wait for the GET's response headers before sending the call anyway. */
  openTimeoutMs?: number;
  /** Wait before opening again after a 409 (another instance holds the stream), a 5xx, or an unreachable target. */
  retryMs?: number;
  /** How long a 405 (no GET stream) is remembered per target. */
  unsupportedTtlMs?: number;
  /**
   * How long a call's stream must be quiet after its answer, for a target seen sending notifications on
   * its GET stream (config `targetStreamSettleMs`): what it sent just before answering may still be on its
   * way, the two streams having no common order.
   */
  settleMs?: number;
}

/** The timer that reopens a connection's stream (one per connection). */
const reopenTimer = (key: string) => `reopen:${key}`;

export class StandaloneStreams {
  private readonly connections = new Map<string, Connection>();
  private readonly unsupported = new Map<string, number>();
  /** When this instance last closed each session's stream (see the 409 rule above). */
  private readonly closedAt = new Map<string, number>();
  /** The last event id each target session's GET stream gave here (oldest dropped beyond RESUME_IDS_MAX). */
  private readonly resumeIds = new Map<string, string>();
  private readonly openTimeoutMs: number;
  private readonly retryMs: number;
  private readonly unsupportedTtlMs: number;
  private readonly settleMs: number;
  /** When each target last sent a notification (not progress) on a GET stream here: it talks there. */
  private readonly talked = new Map<string, number>();
  /** Settled calls in a row that heard nothing from each target (see mayTalk). */
  private readonly quietCalls = new Map<string, number>();
  /** Each connection's reopening, by its key. */
  private readonly timers: CallTimers;
  /** Reading the streams: a failure is logged once (what reads a stream settles when the stream closes). */
  private readonly tasks: BackgroundTasks;
  /** GET requests sent (for tests and metrics). */
  opened = 0;

  constructor(
    private readonly logger: GatewayLogger,
    /** The gateway's clock: refusals and closes are aged by it, reopenings scheduled on it. */
    private readonly clock: Clock,
    options: StandaloneStreamsOptions = {},
  ) {
    this.openTimeoutMs = options.openTimeoutMs ?? 500;
    // Short: while another instance holds the session's stream, a request the target sends in the moment
    // between that instance letting go and this one taking over is dropped by a target without an event store.
    this.retryMs = options.retryMs ?? 250;
    this.unsupportedTtlMs = options.unsupportedTtlMs ?? 10 * 60_000;
    this.settleMs = options.settleMs ?? 0;
    this.timers = new CallTimers(clock);
    this.tasks = new BackgroundTasks(logger);
  }

  /**
   * Attaches a call's listeners to its target session's stream, opening the stream if needed; resolves
   * when the stream is open (or known unavailable), so the call can be sent — at once when the GET
   * resumes from an event id (the target replays on it what it sent before it arrived). Returns the detach
   * function: it first lets what the target already sent on the stream be read (a target writes a
   * log message there just before it answers on the call's stream, and the two race), then detaches.
   */
  async attach(
    client: LegacyTargetClient,
    session: LegacySession,
    listener: StandaloneListener,
  ): Promise<() => Promise<void>> {
    const target = client.name;
    const sessionId = session.targetSessionId;
    const refusedAt = this.unsupported.get(target);
    if (!sessionId || (refusedAt !== undefined && this.clock.now() - refusedAt < this.unsupportedTtlMs)) {
      return async () => undefined;
    }
    const { key, connection: current } = this.connectionFor(client, session, sessionId);
    current.listeners.push(listener);
    if (listener.resumable && !current.resumable) {
      current.resumable = true;
      current.lastEventId ??= this.resumeIds.get(key);
    }
    if (!current.abort && !this.timers.has(reopenTimer(key))) current.ready = this.open(key, current);
    if (!current.resuming) await current.ready;
    return async () => {
      // A resumed GET overlapped the call; what the target replays on it belongs to the call too.
      if (current.resuming) await current.ready;
      const settling = this.settleMs > 0 && this.mayTalk(target);
      const talkedBefore = this.talked.get(target);
      await this.drain(current, settling ? this.settleMs : 0);
      // A settled call in which the target sent no notification on the stream (a comment is not one).
      if (settling && this.talked.get(target) === talkedBefore)
        this.quietCalls.set(target, (this.quietCalls.get(target) ?? 0) + 1);
      this.detach(key, current, listener);
    };
  }

  /**
   * The client GET stream of the gateway session that owns `session` listens on it (opened if
   * needed; `lastEventId` resumes it where a previous GET stream, perhaps on another instance, left
   * off). Resolves when the stream answered or the wait is over. One owner per target session.
   */
  async listen(
    client: LegacyTargetClient,
    session: LegacySession,
    owner: SessionStreamListener,
    options: { lastEventId?: string } = {},
  ): Promise<SessionStreamHandle> {
    const sessionId = session.targetSessionId;
    const refusedAt = this.unsupported.get(client.name);
    if (!sessionId || (refusedAt !== undefined && this.clock.now() - refusedAt < this.unsupportedTtlMs)) {
      return { lastEventId: () => options.lastEventId, close: () => undefined };
    }
    const { key, connection } = this.connectionFor(client, session, sessionId);
    connection.owner = owner;
    if (!connection.lastEventId && options.lastEventId) connection.lastEventId = options.lastEventId;
    if (!connection.abort && !this.timers.has(reopenTimer(key))) connection.ready = this.open(key, connection);
    await connection.ready;
    return {
      lastEventId: () => connection.lastEventId,
      close: () => {
        if (connection.owner !== owner) return;
        connection.owner = undefined;
        this.closeIfUnused(key, connection);
      },
    };
  }

  /** Whether the target answered a GET stream with 405 lately (it sends nothing outside calls). */
  refusesStreams(target: string): boolean {
    const refusedAt = this.unsupported.get(target);
    return refusedAt !== undefined && this.clock.now() - refusedAt < this.unsupportedTtlMs;
  }

  private connectionFor(
    client: LegacyTargetClient,
    session: LegacySession,
    sessionId: string,
  ): { key: string; connection: Connection } {
    const key = `${client.name}\u0000${sessionId}`;
    let connection = this.connections.get(key);
    if (!connection) {
      connection = { target: client.name, client, session, listeners: [], received: 0 };
      this.connections.set(key, connection);
    }
    return { key, connection };
  }

  /**
   * Waits while the stream is still delivering: a few event-loop turns, longer (bounded, real time) while
   * data flows; with `settleMs`, until nothing arrived for that long (at most SETTLE_ROUNDS windows).
   */
  private async drain(connection: Connection, settleMs: number): Promise<void> {
    if (!connection.abort) return;
    // A bound on event-loop turns spent here, not a time the protocol reads: the process's monotonic
    // clock, whichever clock the gateway runs on (a fake one would not move while the loop turns).
    const until = performance.now() + DRAIN_MAX_MS;
    do {
      const seen = connection.received;
      for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
      if (connection.received === seen) break;
    } while (performance.now() < until);
    for (let round = 0; settleMs > 0 && round < SETTLE_ROUNDS && connection.abort; round++) {
      const seen = connection.received;
      await new Promise<void>((resolve) => this.clock.setTimeout(resolve, settleMs));
      if (connection.received === seen) return;
    }
  }

  private detach(key: string, connection: Connection, listener: StandaloneListener): void {
    connection.listeners = connection.listeners.filter((l) => l !== listener);
    this.closeIfUnused(key, connection);
  }

  private closeIfUnused(key: string, connection: Connection): void {
    if (inUse(connection)) return;
    this.timers.clear(reopenTimer(key));
    if (connection.abort) this.noteClosed(key);
    connection.abort?.abort();
    connection.abort = undefined;
    if (this.connections.get(key) === connection) this.connections.delete(key);
  }

  private noteClosed(key: string): void {
    const now = this.clock.now();
    if (this.closedAt.size > 1000) {
      for (const [k, at] of this.closedAt) if (now - at > OWN_CLOSE_WINDOW_MS) this.closedAt.delete(k);
    }
    this.closedAt.set(key, now);
  }

  /** One GET; settles when its headers arrive (or the wait is over), then reads in the background. */
  private open(key: string, connection: Connection): Promise<void> {
    const abort = new AbortController();
    connection.abort = abort;
    connection.resuming = connection.resumable === true && connection.lastEventId !== undefined;
    this.opened++;
    const headersIn = (async () => {
      const headers = await connection.client.endpoint.headers({
        [MCP_HEADERS.protocolVersion]: connection.session.protocolVersion,
        [MCP_HEADERS.sessionId]: connection.session.targetSessionId ?? '',
        accept: 'text/event-stream',
        ...(connection.lastEventId ? { [MCP_HEADERS.lastEventId]: connection.lastEventId } : {}),
      });
      delete headers['content-type'];
      return connection.client.endpoint.get(headers, abort.signal);
    })();
    const settled = headersIn.then(
      (res) => this.onResponse(key, connection, abort, res),
      (error: unknown) => {
        if (!abort.signal.aborted) {
          this.logger.debug('standalone stream not opened', { target: connection.target, error: describeError(error) });
          this.scheduleRetry(key, connection, abort);
        }
      },
    );
    // The call goes ahead once the stream is open, or after the wait: a slow GET must not stall it.
    return waitAtMost(this.clock, settled, this.openTimeoutMs);
  }

  private onResponse(
    key: string,
    connection: Connection,
    abort: AbortController,
    res: TargetResponse,
  ): Promise<void> | undefined {
    if (abort.signal.aborted) {
      res.body.destroy();
      return;
    }
    const type = res.headers.get('content-type') ?? '';
    if (res.status === 409 && this.clock.now() - (this.closedAt.get(key) ?? 0) < OWN_CLOSE_WINDOW_MS) {
      res.discard();
      return this.retryOwnClose(key, connection, abort);
    }
    if (res.ok && type.includes('text/event-stream')) {
      this.closedAt.delete(key);
      this.tasks.run('reading a standalone stream', async () => {
        const clean = await this.read(key, connection, res.body);
        // Ended early (the target closed it, or a proxy): reopen while calls still need it, after the
        // target's `retry` when it gave one (SSE polling), else at once (a request meanwhile may be
        // dropped); not at once after an oversized message: the target would likely send it again.
        const polled = connection.retryMs === undefined ? 0 : resumeDelayMs(DEFAULT_RESUME_POLICY, connection.retryMs);
        if (!abort.signal.aborted && connection.abort === abort)
          this.scheduleRetry(key, connection, abort, clean ? polled : Math.max(polled, this.retryMs));
      });
      return;
    }
    res.discard();
    if (res.status === 405) {
      this.unsupported.set(connection.target, this.clock.now());
      this.logger.debug('target has no standalone stream', { target: connection.target });
      return;
    }
    if (res.status === 404) {
      // The target no longer knows the session: a call re-initializes it; the client GET stream is told.
      connection.owner?.onGone();
      return;
    }
    // An event id the target no longer has (its event store forgot it): open afresh rather than loop.
    if (connection.lastEventId && res.status >= 400 && res.status < 500 && res.status !== 409) {
      connection.lastEventId = undefined;
      this.resumeIds.delete(key);
    }
    // 409: another instance holds the session's stream; 5xx: the target is in trouble. Both: try again.
    this.scheduleRetry(key, connection, abort);
  }

  private rememberEventId(key: string, eventId: string): void {
    this.resumeIds.delete(key); // re-inserted last: the map's order is the age of each entry
    this.resumeIds.set(key, eventId);
    if (this.resumeIds.size > RESUME_IDS_MAX) this.resumeIds.delete(this.resumeIds.keys().next().value as string);
  }

  /** Opens again shortly; settles when that open does (the call waits for it, bounded by the first open's wait). */
  private retryOwnClose(key: string, connection: Connection, abort: AbortController): Promise<void> | undefined {
    if (connection.abort !== abort || !inUse(connection)) return;
    connection.abort = undefined;
    return new Promise<void>((resolve) => {
      this.timers.set(reopenTimer(key), OWN_CLOSE_RETRY_MS, () => {
        if (inUse(connection) && this.connections.get(key) === connection) {
          const ready = this.open(key, connection);
          connection.ready = ready;
          this.tasks.run('reopening a standalone stream', async () => {
            await ready;
            resolve();
          });
        } else resolve();
      });
    });
  }

  private scheduleRetry(key: string, connection: Connection, abort: AbortController, delayMs = this.retryMs): void {
    if (connection.abort !== abort || !inUse(connection)) return;
    connection.abort = undefined;
    this.timers.set(reopenTimer(key), delayMs, () => {
      if (inUse(connection) && this.connections.get(key) === connection) {
        connection.ready = this.open(key, connection);
      }
    });
  }

  private read(key: string, connection: Connection, body: TargetResponse['body']): Promise<boolean> {
    const reader = readEvents(
      body,
      (event) => {
        if (event.id) {
          connection.lastEventId = event.id;
          if (connection.resumable) this.rememberEventId(key, event.id);
        }
        if (!event.data) return;
        let message: unknown;
        try {
          message = JSON.parse(event.data);
        } catch {
          return;
        }
        if (isRequest(message)) this.route(connection, message);
        else if (isNotification(message)) this.routeNotification(connection, message);
      },
      {
        onChunk: () => {
          connection.received++;
        },
        maxEventBytes: connection.client.endpoint.limits.maxMessageBytes,
        onRetry: (retryMs) => {
          connection.retryMs = retryMs;
        },
      },
    );
    // Aborted (the last call detached) or broken: the caller decides whether to reopen.
    return reader.done.then(
      () => true,
      (error: unknown) => {
        if (!(error instanceof TooLargeError)) return true;
        this.logger.warn('standalone stream given up: a message over the limit', { target: connection.target });
        return false;
      },
    );
  }

  /**
   * A request on the GET stream belongs to no call: the session's client GET stream takes it when one
   * is open here, else the call that attached first. Every listener of a connection belongs to the
   * one gateway session (or pooled caller) that owns the target session, so nothing crosses clients.
   */
  private route(connection: Connection, request: JSONRPCRequest): void {
    if (connection.owner) {
      connection.owner.onServerRequest(request);
      return;
    }
    // The first call that can relay it to the user; else the first call (it answers ping, refuses the rest).
    const first = connection.listeners.find((listener) => listener.relaysRequests) ?? connection.listeners[0];
    if (first?.onServerRequest) first.onServerRequest(request);
    else this.logger.info('request on a standalone stream with no call to relay it', { target: connection.target });
  }

  /**
   * Whether a call to `target` waits for its GET stream to settle after the answer: when the target sent
   * notifications there (here, in the last TALKED_TTL_MS), and while it is being learnt: the first
   * PROBE_CALLS listening calls of an instance settle, and whatever arrives while they wait (also what
   * arrives late: the window is there for it) shows the target talks. A target heard nothing from in that
   * many settled calls is taken to send nothing there, and its calls no longer wait: the wait would add
   * `settleMs` to every call of every target that declared logging, and most never log there.
   */
  private mayTalk(target: string): boolean {
    const at = this.talked.get(target);
    if (at !== undefined && this.clock.now() - at < TALKED_TTL_MS) return true;
    return (this.quietCalls.get(target) ?? 0) < PROBE_CALLS;
  }

  private routeNotification(connection: Connection, notification: JSONRPCNotification): void {
    const token = (notification.params as { progressToken?: unknown } | undefined)?.progressToken;
    if (notification.method !== 'notifications/progress') {
      this.talked.set(connection.target, this.clock.now());
      this.quietCalls.delete(connection.target);
    }
    if (notification.method === 'notifications/progress') {
      connection.listeners
        .find((l) => l.progressToken !== undefined && l.progressToken === token)
        ?.onNotification?.(notification);
      return;
    }
    if (connection.owner) connection.owner.onNotification(notification);
    else connection.listeners[0]?.onNotification?.(notification);
  }
}

/** A connection stays open while a call of this instance or the session's client GET stream uses it. */
function inUse(connection: Connection): boolean {
  return connection.listeners.length > 0 || connection.owner !== undefined;
}
