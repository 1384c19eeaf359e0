import { describeError } from '../observability/logger';
import { recordExpiredInput, recordRelayedInput } from '../observability/metrics';
import { capabilitiesForLegacyTarget, clientAccepts } from '../protocol/capabilities';
import { GatewayError, rpcError, rpcErrorOf } from '../protocol/errors';
import type { JSONRPCNotification, JSONRPCRequest } from '../protocol/types';
import { pendingTimeUp } from '../relay/pending-verdict';
import { newPendingRecord } from '../state/records';
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
    const upstream = this.call.upstream;
    if (!upstream) return;
    const params = serverRequest.params as Record<string, unknown> | undefined;
    // What the session's version allows of what the client declared (as declared to the target).
    const usable = capabilitiesForLegacyTarget(loaded.session.clientCapabilities, loaded.session.protocolVersion);
    const stream =
      !this.call.finished && clientAccepts(usable, serverRequest.method, params) ? this.call.stream() : undefined;
    if (!stream) {
      // Only declared capabilities are relayed; the target gets Method not found and should fall back.
      this.call.log.info('refused a server request the client cannot take', { serverMethod: serverRequest.method });
      await upstream.reply(rpcErrorOf(serverRequest.id, 'MethodNotFound', `Method not found: ${serverRequest.method}`));
      return;
    }
    const record = this.call.withHolder(
      newPendingRecord(deps.config.pendingRequestTimeoutSeconds, {
        kind: 'relayed',
        method: serverRequest.method,
        target,
        targetSessionId: upstream.session?.targetSessionId,
        targetRequestId: serverRequest.id,
        targetProtocolVersion: upstream.session?.protocolVersion,
        clientRequestId: this.call.input.request.id,
      }),
      upstream.era === 'legacy' && this.call.cursor.lastEventId !== undefined,
    );
    try {
      await this.checkPendingCap(1);
      await deps.store.putPending(loaded.session, record);
    } catch (error) {
      if (error instanceof GatewayError && error.kind === 'TooManyPendingRequests') {
        this.call.log.warn('refused a server request: too many pending requests in the session');
        await upstream.reply(rpcError(serverRequest.id, error));
        return;
      }
      // Unrecorded, the client's answer could not be matched: refuse it at the target, which can fall back.
      this.call.log.warn('pending request not recorded; refused at the target', { error: describeError(error) });
      await upstream.reply(
        rpcErrorOf(serverRequest.id, 'Internal', 'Gateway could not relay the request; retry later'),
      );
      return;
    }
    this.trackRelayed(record.gatewayId, serverRequest.method, Date.now());
    this.call.lease.start();
    if (this.call.leased.has(record.gatewayId)) this.call.acknowledger.start();
    stream.send({ ...serverRequest, id: record.gatewayId });
    recordRelayedInput(serverRequest.method);
    this.call.log.info('relayed a server request', {
      serverMethod: serverRequest.method,
      gatewayRequestId: record.gatewayId,
    });
    // The target now waits for the client: when its stream can be resumed, the call may be released.
    if (this.call.upstreamCallId !== undefined && this.call.upstream?.era === 'legacy') {
      await this.release.holdWaiting({
        kind: 'target-stream',
        requestId: this.call.upstreamCallId,
        lastEventId: this.call.cursor.lastEventId ?? '',
        targetSessionId: upstream.session?.targetSessionId,
      });
    }
  }

  /** A relayed request waiting for the client, with its pending timeout (from when it was sent). */
  trackRelayed(gatewayId: string, method: string, askedAt: number): void {
    const timeoutMs = this.call.input.deps.config.pendingRequestTimeoutSeconds * 1000;
    this.schedulePendingTimeout(gatewayId, askedAt + timeoutMs - Date.now());
    this.call.relayed.set(gatewayId, { method, askedAt });
  }

  private schedulePendingTimeout(gatewayId: string, ms: number): void {
    this.call.timers.set(`pending:${gatewayId}`, ms, () =>
      this.call.tasks.run('looking at a timed-out pending request', () => this.onPendingTimeout(gatewayId)),
    );
  }

  onNotification(notification: JSONRPCNotification): void {
    const message = this.call.progress.map(notification);
    if (message) this.call.stream()?.send(message);
  }

  /**
   * A pending request nobody answered in time ends the call with -32001 unless the target took an
   * answer (relay/pending-verdict.ts decides; shared with the bridge). The deadline bounds the looks.
   */
  private async onPendingTimeout(gatewayId: string): Promise<void> {
    const entry = this.call.relayed.get(gatewayId);
    if (!entry || this.call.finished || this.call.endReason) return;
    const verdict = await pendingTimeUp(this.call.input.deps.store, this.call.input.loaded.session.id, gatewayId);
    switch (verdict.kind) {
      case 'answered':
        return; // the target took the answer and carries on
      case 'undecided':
        if (verdict.error !== undefined) {
          this.call.log.warn('pending timeout undecided: DynamoDB failed; looking again', {
            error: describeError(verdict.error),
          });
        }
        this.schedulePendingTimeout(gatewayId, verdict.afterMs);
        return;
      case 'expired':
        this.call.log.info('pending request timed out', { gatewayRequestId: gatewayId });
        break;
      case 'gone':
        this.call.log.info('pending request timed out (its record is gone)', { gatewayRequestId: gatewayId });
        break;
    }
    recordExpiredInput(entry.method);
    this.call.stop('pending-timeout');
  }

  /** The cap on pending requests per session (the Query costs only calls that relay something). */
  async checkPendingCap(adding: number): Promise<void> {
    const { deps, loaded } = this.call.input;
    const cap = deps.config.maxPendingRequestsPerSession;
    const count = await deps.store.countPending(loaded.session.id, cap);
    if (count + adding > cap) {
      throw new GatewayError(
        'TooManyPendingRequests',
        `Too many pending requests in this session (${count} waiting for the client, at most ${cap}: maxPendingRequestsPerSession); answer or cancel some first`,
        { limit: cap },
      );
    }
  }
}
