import { randomBytes } from 'node:crypto';
import { errorResponse, refuse } from '../http/errors';
import type { ExchangeContext } from '../http/exchange';
import { SseStream } from '../http/sse';
import { describeError } from '../observability/logger';
import { recordRelayedInput } from '../observability/metrics';
import { capabilitiesForLegacyTarget, clientAccepts } from '../protocol/capabilities';
import { GatewayError, rpcError, rpcErrorOf } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import { atOrAbove } from '../protocol/log-levels';
import type { JSONRPCNotification, JSONRPCRequest } from '../protocol/types';
import { BackgroundTasks } from '../scheduling/background-tasks';
import { CallTimers } from '../scheduling/call-timers';
import { waitAtMost } from '../scheduling/clock';
import { newPendingRecord, withoutHolder } from '../state/records';
import type { LoadedSession, TargetSessionRecord } from '../state/store';
import type { LegacySession } from '../targets/legacy-client';
import type { SessionStreamHandle } from '../targets/standalone-streams';
import type { LegacyDeps } from './deps';

/**
 * A 2025 session's standalone GET stream: what its targets send outside calls, on their own GET
 * streams of the session's target sessions — list changes, resource updates, log messages, and
 * requests not tied to a call (relayed with gateway ids and pending records, answered from any
 * instance). An open stream holds a Lambda invocation, so it is bounded: it ends after
 * `clientStreamHoldSeconds` (and always before the function deadline) with an SSE `retry`, and the
 * client reconnects (2025-11-25: a server MAY close the stream; the client reconnects after `retry`).
 * Where each target stream stopped is kept in its target-session record, so the next GET stream, on
 * any instance, resumes it with `Last-Event-ID` and a target with an event store replays the gap.
 *
 * One stream per session (the v1 SDK server's rule: a second GET is answered 409): here through this
 * instance's registry (ActiveCalls) and across instances through a `G#stream` item that names its
 * holder until its planned end.
 */

/** The stream's key among the calls of a session (call keys are derived request ids, `c.n.…`/`c.s.…`). */
export const CLIENT_STREAM_KEY = 'GET';

/** How long before the function deadline the stream ends, so its cleanup (a few DynamoDB writes) fits. */
const DEADLINE_MARGIN_MS = 3000;

/** How often an open stream reads its session again (target sessions opened meanwhile, a DELETE elsewhere). */
const RESCAN_MS = 2000;

/** How long the response waits at most for the target streams to be open. */
const LISTEN_WAIT_MS = 1000;

/**
 * Requests on the stream belong to no call: their pending records carry this in place of a client
 * request id, and no holder lease (any instance may deliver the answer until the record expires).
 */
/** The client request of a record tied to no call (a request sent on the session's GET stream). */
export const NO_CLIENT_REQUEST = 'standalone-stream';

export async function openClientStream(
  deps: LegacyDeps,
  loaded: LoadedSession,
  exchange: ExchangeContext,
  headers: Record<string, string>,
): Promise<Response> {
  const sessionId = loaded.session.id;
  const conflict = () => refuse('StreamConflict', 'Conflict: Only one SSE stream is allowed per session', { headers });
  if (deps.activeCalls.get(sessionId, CLIENT_STREAM_KEY)) return conflict();
  const now = deps.clock.now();
  const endsAt = Math.max(
    now,
    Math.min(now + deps.config.clientStreamHoldSeconds * 1000, exchange.deadline - DEADLINE_MARGIN_MS),
  );
  const token = randomBytes(12).toString('base64url');
  try {
    if (!(await deps.store.acquireClientStream(loaded.session, token, endsAt))) return conflict();
  } catch (error) {
    deps.logger.warn('the client stream could not be recorded', { sessionId, error: describeError(error) });
    return errorResponse(null, error, headers);
  }
  return new ClientStream(deps, loaded, exchange, token).start(endsAt, headers);
}

/** Why a client stream ends (not why its call does: that is CallEndReason). */
type StreamEndReason = 'hold' | 'client-gone' | 'session-ended' | 'shutdown';

interface Listened {
  session: LegacySession;
  handle: SessionStreamHandle;
  /** The id the record held when this stream started (nothing to write when it did not move). */
  storedEventId?: string;
}

class ClientStream {
  private readonly sse = new SseStream();
  private readonly listened = new Map<string, Listened>();
  private ended = false;
  /** The hold's end (`hold`) and the next rescan (`rescan`). */
  private readonly timers: CallTimers;
  /** What runs unawaited (the end, a rescan, a target's request): a failure is logged once. */
  private readonly tasks: BackgroundTasks;
  private rescanning = false;
  /**
   * The rescan's session read while it runs: the stream's end waits for it, or on a function URL it
   * would be frozen with the invocation and finish in the next one (nothing may run after the response).
   */
  private rescanRead?: Promise<void>;
  private unregister?: () => void;
  private readonly onAbort = () => this.tasks.run('ending the client stream', () => this.end('client-gone'));

  constructor(
    private readonly deps: LegacyDeps,
    private loaded: LoadedSession,
    private readonly exchange: ExchangeContext,
    private readonly token: string,
  ) {
    this.tasks = new BackgroundTasks(deps.logger, { sessionId: loaded.session.id });
    this.timers = new CallTimers(deps.clock);
  }

  private get sessionId(): string {
    return this.loaded.session.id;
  }

  start(endsAt: number, headers: Record<string, string>): Promise<Response> {
    this.unregister = this.deps.activeCalls.register(this.sessionId, CLIENT_STREAM_KEY, {
      // DELETE of the session on this instance (and a cancellation naming it, which no client sends).
      cancelByClient: () => this.tasks.run('ending the client stream', () => this.end('session-ended')),
      shutdown: () => this.end('shutdown'),
    });
    this.sse.onCancel = this.onAbort;
    this.exchange.signal.addEventListener('abort', this.onAbort, { once: true });
    this.timers.set('hold', endsAt - this.deps.clock.now(), () =>
      this.tasks.run('ending the client stream', () => this.end('hold')),
    );
    this.sse.startKeepAlive(this.deps.keepAliveMs);
    this.deps.logger.info('client stream opened', {
      sessionId: this.sessionId,
      holdMs: endsAt - this.deps.clock.now(),
    });
    return this.ready(headers);
  }

  /**
   * The response once the target streams are listened to (or after LISTEN_WAIT_MS: a slow target
   * must not hold the client's stream back), so a client that waits for it misses nothing sent after.
   */
  private async ready(headers: Record<string, string>): Promise<Response> {
    await waitAtMost(this.deps.clock, this.listenAll(), LISTEN_WAIT_MS);
    this.scheduleRescan();
    return this.sse.response(headers);
  }

  /** The target sessions the session has now (the response waits for them: `ready`). */
  private async listenAll(): Promise<void> {
    await Promise.all([...this.loaded.targets.values()].map((record) => this.listenTo(record)));
  }

  /**
   * One target session's GET stream. Only target sessions that exist are listened to: opening them
   * here would race with the client's own first requests, which open them in parallel (often on
   * another instance) and the last one stored wins; a subscription then lands on the stored one.
   * The rescan (below) follows what is stored.
   */
  private async listenTo(record: TargetSessionRecord): Promise<void> {
    const { deps } = this;
    const client = deps.targets.legacyClient(record.target);
    if (!client || !record.targetSessionId || this.ended) return;
    const session: LegacySession = { targetSessionId: record.targetSessionId, protocolVersion: record.protocolVersion };
    const current = this.listened.get(record.target);
    if (current?.session.targetSessionId === session.targetSessionId) return;
    current?.handle.close();
    this.listened.delete(record.target);
    const handle = await deps.targets.streams.listen(
      client,
      session,
      {
        onServerRequest: (request) =>
          this.tasks.run('relaying a server request', () => this.onServerRequest(record.target, session, request)),
        onNotification: (notification) => this.onNotification(record.target, notification),
        onGone: () => this.tasks.run('rescanning the session', () => this.rescan()),
      },
      { lastEventId: record.lastEventId },
    );
    if (this.ended || this.listened.has(record.target)) {
      if (this.listened.get(record.target)?.handle !== handle) handle.close();
      return;
    }
    this.listened.set(record.target, { session, handle, storedEventId: record.lastEventId });
  }

  /**
   * Every RESCAN_MS (and when a target forgot its session) the session is read again (one `Query`):
   * gone (deleted on another instance, expired) ends the stream; a target session opened or replaced
   * meanwhile, on any instance, is listened to; the session's log level is followed.
   */
  private async rescan(): Promise<void> {
    if (this.ended || this.rescanning) return;
    this.rescanning = true;
    try {
      const read = this.deps.store.loadSession(this.sessionId);
      this.rescanRead = read.then(
        () => undefined,
        () => undefined,
      );
      const current = await read;
      if (!current || current.session.principal !== this.loaded.session.principal) {
        await this.end('session-ended');
        return;
      }
      this.loaded = current;
      for (const target of this.listened.keys()) {
        if (!current.targets.has(target)) {
          this.listened.get(target)?.handle.close();
          this.listened.delete(target);
        }
      }
      await this.listenAll();
    } catch (error) {
      this.deps.logger.warn('client stream: session not read', { error: describeError(error) });
    } finally {
      this.rescanning = false;
      this.scheduleRescan();
    }
  }

  private scheduleRescan(): void {
    if (this.ended) return;
    this.timers.set('rescan', RESCAN_MS, () => this.tasks.run('rescanning the session', () => this.rescan()));
  }

  private onNotification(target: string, notification: JSONRPCNotification): void {
    const { session } = this.loaded;
    this.deps.catalog.noticed(target, notification);
    // The target filters by the level it was given; this holds the session's level when it did not.
    if (
      notification.method === 'notifications/message' &&
      session.logLevel &&
      !atOrAbove(notification, session.logLevel)
    )
      return;
    this.sse.send(notification);
  }

  /**
   * A request not tied to a call: relayed as a call's are (a pending record first, a gateway id),
   * but the record has no holder: the target waits on its own, so any instance may deliver the
   * client's answer until the record expires (`pendingRequestTimeoutSeconds`), even after this
   * stream ended. What the client did not declare is refused at the target (-32601).
   */
  private async onServerRequest(target: string, session: LegacySession, request: JSONRPCRequest): Promise<void> {
    const { deps, loaded } = this;
    const reply = (message: JSONRPCResponse) =>
      deps.targets
        .deliver(target, session, message)
        .catch((error) => deps.logger.warn('answering the target failed', { target, error: describeError(error) }));
    if (request.method === 'ping') return reply({ jsonrpc: '2.0', id: request.id, result: {} });
    const usable = capabilitiesForLegacyTarget(loaded.session.clientCapabilities, loaded.session.protocolVersion);
    const params = request.params as Record<string, unknown> | undefined;
    if (this.ended || !clientAccepts(usable, request.method, params)) {
      deps.logger.info('client stream: refused a server request the client cannot take', {
        target,
        serverMethod: request.method,
      });
      return reply(rpcErrorOf(request.id, 'MethodNotFound', `Method not found: ${request.method}`));
    }
    const record = withoutHolder(
      newPendingRecord(deps.clock.now(), deps.config.pendingRequestTimeoutSeconds, {
        kind: 'relayed',
        method: request.method,
        target,
        targetSessionId: session.targetSessionId,
        targetRequestId: request.id,
        targetProtocolVersion: session.protocolVersion,
        clientRequestId: NO_CLIENT_REQUEST,
      }),
    );
    try {
      const cap = deps.config.maxPendingRequestsPerSession;
      const count = await deps.store.countPending(this.sessionId, cap);
      if (count + 1 > cap) {
        throw new GatewayError(
          'TooManyPendingRequests',
          `Too many pending requests in this session (${count} waiting for the client, at most ${cap}: maxPendingRequestsPerSession)`,
          { limit: cap },
        );
      }
      await deps.store.putPending(loaded.session, record);
    } catch (error) {
      deps.logger.warn('client stream: pending request not recorded; refused at the target', {
        target,
        error: describeError(error),
      });
      const refusal =
        error instanceof GatewayError && error.kind === 'TooManyPendingRequests'
          ? rpcError(request.id, error)
          : rpcErrorOf(request.id, 'Internal', 'Gateway could not relay the request; retry later');
      return reply(refusal);
    }
    this.sse.send({ ...request, id: record.gatewayId });
    recordRelayedInput(request.method);
    deps.logger.info('client stream: relayed a server request', {
      target,
      serverMethod: request.method,
      gatewayRequestId: record.gatewayId,
    });
  }

  /**
   * Ends the stream once: the target streams are let go first (what a target sends from then on
   * stays in its event store, if it has one), where each stopped is recorded, the session's stream
   * item is released (so the client's reconnect is not refused), and then the client is told when
   * to come back (`retry`) — except when the session ended or the client left.
   */
  private async end(reason: StreamEndReason): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.timers.close();
    await this.rescanRead;
    this.unregister?.();
    this.exchange.signal.removeEventListener('abort', this.onAbort);
    const { deps, sessionId } = this;
    for (const { handle } of this.listened.values()) handle.close();
    const writes: Array<Promise<void>> = [];
    if (reason !== 'session-ended') {
      for (const [target, { session, handle, storedEventId }] of this.listened) {
        const eventId = handle.lastEventId();
        if (eventId && eventId !== storedEventId && session.targetSessionId) {
          writes.push(deps.store.saveTargetEventId(sessionId, target, session.targetSessionId, eventId));
        }
      }
      writes.push(deps.store.releaseClientStream(sessionId, this.token));
    }
    const failed = (await Promise.allSettled(writes)).filter((r) => r.status === 'rejected');
    if (failed.length > 0) {
      // The stream item lapses at its planned end anyway; a lost event id means no replay of the gap.
      deps.logger.warn('client stream: cleanup not written', { sessionId, error: describeError(failed[0]?.reason) });
    }
    if (reason === 'hold' || reason === 'shutdown') this.sse.write(`retry: ${deps.config.clientStreamRetryMs}\n\n`);
    this.sse.close();
    deps.logger.info('client stream ended', { sessionId, reason });
  }
}
