import { describeError } from '../observability/logger';
import { recordAnsweredInput, recordExpiredInput, recordRelayedInput } from '../observability/metrics';
import type { PendingWatch } from '../pending/holder';
import { deliverRecordedUntilTaken } from '../pending/recorded-answer';
import { capabilitiesForLegacyTarget, clientAccepts } from '../protocol/capabilities';
import { GatewayError, rpcError, rpcErrorOf } from '../protocol/errors';
import type { JSONRPCNotification, JSONRPCRequest } from '../protocol/types';
import { newPendingRecord } from '../state/records';
import type { PendingRecord } from '../state/store';
import type { CallRelease } from './call-release';
import type { CallState } from './call-state';

/**
 * What the target sends for the call besides its response: its requests to the client, each recorded
 * as pending (with a fresh gateway id) before it is forwarded and ended by its pending timeout when
 * nobody answers; and its notifications (progress with the client's own token, log messages).
 */
export class ServerRequests {
  constructor(
    private readonly call: CallState,
    private readonly release: CallRelease,
  ) {}

  async onServerRequest(serverRequest: JSONRPCRequest): Promise<void> {
    const { deps, loaded, target } = this.call.input;
    const targetLink = this.call.targetLink;
    if (!targetLink) return;
    const params = serverRequest.params as Record<string, unknown> | undefined;
    // What the session's version allows of what the client declared (as declared to the target).
    const usable = capabilitiesForLegacyTarget(loaded.session.clientCapabilities, loaded.session.protocolVersion);
    const stream =
      !this.call.finished && clientAccepts(usable, serverRequest.method, params) ? this.call.stream() : undefined;
    if (!stream) {
      // Only declared capabilities are relayed; the target gets Method not found and should fall back.
      this.call.log.info('refused a server request the client cannot take', { serverMethod: serverRequest.method });
      await targetLink.reply(
        rpcErrorOf(serverRequest.id, 'MethodNotFound', `Method not found: ${serverRequest.method}`),
      );
      return;
    }
    const record = this.call.withHolder(
      newPendingRecord(deps.clock.now(), deps.config.pendingRequestTimeoutSeconds, {
        kind: 'relayed',
        method: serverRequest.method,
        target,
        targetSessionId: targetLink.session?.targetSessionId,
        targetRequestId: serverRequest.id,
        targetProtocolVersion: targetLink.session?.protocolVersion,
        clientRequestId: this.call.input.request.id,
        session: loaded.session,
      }),
      targetLink.era === 'legacy' && this.call.cursor.lastEventId !== undefined,
    );
    // On this call's own resumable stream the record is written with the event that asks it (one
    // BatchWriteItem, before the event is sent: legacy/stream-log.ts); otherwise on its own.
    const log = stream.resumable ? this.call.streamLog : undefined;
    let recorded: Promise<boolean> = Promise.resolve(true);
    try {
      await this.checkPendingCap(1);
      if (log) recorded = new Promise<boolean>((resolve) => log.keepWithNext(record, resolve));
      else await deps.store.putPending(loaded.session, record);
    } catch (error) {
      if (error instanceof GatewayError && error.kind === 'TooManyPendingRequests') {
        this.call.log.warn('refused a server request: too many pending requests in the session');
        await targetLink.reply(rpcError(serverRequest.id, error));
        return;
      }
      // Unrecorded, the client's answer could not be matched: refuse it at the target, which can fall back.
      this.call.log.warn('pending request not recorded; refused at the target', { error: describeError(error) });
      await targetLink.reply(
        rpcErrorOf(serverRequest.id, 'Internal', 'Gateway could not relay the request; retry later'),
      );
      return;
    }
    this.trackRelayed(record.gatewayId, serverRequest.method, this.call.holder.clock.now());
    // Not sent at all when its record could not be written (the client's answer could not be matched).
    stream.send({ ...serverRequest, id: record.gatewayId }, { unless: recorded.then((ok) => !ok) });
    // The lease and the holder's looks once the record exists (a look that finds none stops looking).
    this.call.holder.tasks.run('relaying a server request', async () => {
      if (await recorded) {
        this.call.stored.add(record.gatewayId);
        this.call.holder.asked(this.call.leased.has(record.gatewayId));
        return;
      }
      // Unrecorded (its event was not sent), the client's answer could not be matched: refused at the target.
      this.call.log.warn('pending request not recorded; refused at the target');
      this.call.holder.timers.clear(`pending:${record.gatewayId}`);
      this.call.relayed.delete(record.gatewayId);
      this.call.leased.delete(record.gatewayId);
      await targetLink.reply(
        rpcErrorOf(serverRequest.id, 'Internal', 'Gateway could not relay the request; retry later'),
      );
    });
    recordRelayedInput(serverRequest.method);
    this.call.log.info('relayed a server request', {
      serverMethod: serverRequest.method,
      gatewayRequestId: record.gatewayId,
    });
    // The target now waits for the client: when its stream can be resumed, the call may be released.
    if (this.call.currentTargetCallId !== undefined && this.call.targetLink?.era === 'legacy') {
      await this.release.holdWaiting({
        kind: 'target-stream',
        requestId: this.call.currentTargetCallId,
        lastEventId: this.call.cursor.lastEventId ?? '',
        targetSessionId: targetLink.session?.targetSessionId,
      });
    }
  }

  /** A relayed request waiting for the client, with its pending timeout (from when it was sent). */
  trackRelayed(gatewayId: string, method: string, askedAt: number): void {
    const timeoutMs = this.call.input.deps.config.pendingRequestTimeoutSeconds * 1000;
    this.call.relayed.set(gatewayId, { method, askedAt });
    this.call.holder.watchPending(
      `pending:${gatewayId}`,
      [gatewayId],
      askedAt + timeoutMs - this.call.holder.clock.now(),
      this.pendingWatch,
    );
  }

  /**
   * A pending request nobody answered in time ends the call with -32001 unless the target took an
   * answer (the holder's verdict, pending/holder.ts; shared with the bridge). The deadline bounds the
   * looks. An answer recorded for this holder that the target has not taken by then ends it too.
   */
  private readonly pendingWatch: PendingWatch = {
    waiting: (gatewayId) => this.call.relayed.has(gatewayId) && !this.call.finished && !this.call.endReason,
    delivering: (gatewayId) => this.call.delivering.has(gatewayId),
    timeUp: (gatewayId, verdict) => {
      const entry = this.call.relayed.get(gatewayId);
      if (!entry) return;
      const keys = { gatewayRequestId: gatewayId };
      if (verdict.kind === 'delivering') {
        this.call.log.info('pending request timed out: the target did not take its answer', keys);
      } else if (verdict.kind === 'gone') {
        this.call.log.info('pending request timed out (its record is gone)', keys);
      } else this.call.log.info('pending request timed out', keys);
      recordExpiredInput(entry.method);
      this.call.stop('pending-timeout');
    },
  };

  onNotification(notification: JSONRPCNotification): void {
    this.call.input.deps.catalog.noticed(this.call.input.target, notification);
    const message = this.call.progress.map(notification);
    if (message) this.call.stream()?.send(message);
  }

  /**
   * An answer recorded for this holder (pending/recorded-answer.ts): delivered to the target from here,
   * sent again while the target does not take it (until the call ends); refused, it ends the call.
   */
  async deliverRecorded(record: PendingRecord): Promise<void> {
    const { call } = this;
    const { gatewayId } = record;
    const entry = call.relayed.get(gatewayId);
    // A call being released is delivered by whoever takes it over (its record keeps the answer).
    if (!entry || call.finished || call.endReason || call.releasing || call.delivering.has(gatewayId)) return;
    call.delivering.add(gatewayId);
    const keys = { gatewayRequestId: gatewayId };
    const outcome = await deliverRecordedUntilTaken(
      call.input.deps.targets,
      record,
      call.input.loaded.session.protocolVersion,
      {
        signal: AbortSignal.any([call.targetAbort.signal, call.callOver.signal]),
        clock: call.holder.clock,
        onFailedAttempt: (error) =>
          call.log.warn('delivering an answer to the target failed; sending it again', {
            ...keys,
            error: describeError(error),
          }),
      },
    ).finally(() => call.delivering.delete(gatewayId));
    if (outcome.kind === 'delivered') {
      call.holder.timers.clear(`pending:${gatewayId}`);
      call.relayed.delete(gatewayId);
      call.delivered.push(gatewayId);
      recordAnsweredInput(entry.method);
      call.log.info('answer delivered', { ...keys, serverMethod: entry.method });
    } else if (outcome.kind === 'refused') {
      call.log.warn('the target refused an answer; the call is ended', {
        ...keys,
        error: describeError(outcome.error),
      });
      call.stop('answer-lost', 'gateway: an answer could not be delivered');
    }
  }

  /**
   * A taken-over call's relayed requests whose answer was recorded for the holder that released it:
   * the release removed the holder lease, so no answer is recorded after it, and one recorded before
   * it is delivered here (one read per relayed request at a takeover).
   */
  async deliverRecordedBeforeTakeover(): Promise<void> {
    const { deps, loaded } = this.call.input;
    await Promise.all(
      [...this.call.relayed.keys()].map(async (gatewayId) => {
        const record = await deps.store.getPending(loaded.session.id, gatewayId);
        if (record?.status === 'recorded') await this.deliverRecorded(record);
      }),
    );
  }

  /**
   * The cap on pending requests per session: the count the call's own session read took (a soft
   * bound, stale by the call's duration) plus what this call asked since; a call that has no such
   * count (taken over by a reconnect) pays a Query.
   */
  async checkPendingCap(adding: number): Promise<void> {
    const { deps, loaded } = this.call.input;
    const cap = deps.config.maxPendingRequestsPerSession;
    const { relayed, questions, delivered } = this.call;
    const count =
      loaded.pendingCount !== undefined && !this.call.input.resumed
        ? loaded.pendingCount + relayed.size + questions.length + delivered.length
        : await deps.store.countPending(loaded.session.id, cap);
    if (count + adding > cap) {
      throw new GatewayError(
        'TooManyPendingRequests',
        `Too many pending requests in this session (${count} waiting for the client, at most ${cap}: maxPendingRequestsPerSession); answer or cancel some first`,
        { limit: cap },
      );
    }
  }
}
