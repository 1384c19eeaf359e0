import { randomBytes } from 'node:crypto';
import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { recordAnsweredInput, recordExpiredInput, recordRelayedInput } from '../observability/metrics';
import { GatewayError, rpcError } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { InputRequest, JSONRPCRequest, RequestId } from '../protocol/types';
import { LATEST_LEGACY_VERSION } from '../protocol/versions';
import { waitForHeldAnswer } from '../relay/held';
import { newPendingRecord } from '../state/records';
import type { PendingStore } from '../state/store';
import type { Targets } from '../targets/targets';
import type { Upstream } from '../targets/upstream';

/**
 * A 2026-07-28 client calling a 2025-only target that asks for input during the call
 * (elicitation/create, sampling/createMessage, roots/list on the call's stream or its session's GET
 * stream). The target's call is held by the invocation that started it ("A"); every request of the
 * target becomes an `input_required` round for the client, and the client's retry — on any instance
 * ("B") — delivers the answers and returns the target's next request or its final result.
 *
 * Lambda's rule decides the shape: on the Node.js 24 runtime Lambda does not wait for unresolved
 * promises once the handler returns or the response stream ends. A must keep working after round 1
 * (it reads the target's stream), so A never ends its response early: round 1 goes to the client as
 * the `input_required` result on an SSE stream that stays open (keep-alives) until the call is over.
 * A client that reads the result and hangs up does not end A (on Lambda a disconnect is not even
 * signalled); the call's end, the deadline or an abandoned round does.
 *
 * State (one partition per bridged call, `S#<bridge id>` with no session item):
 * - `P#<gateway id>`: one per request of the target (kind `relayed`), with the target's session id,
 *   request id and protocol version. B claims it (conditional write, once) and POSTs the answer to the
 *   target, which continues on A's stream.
 * - `P#<bridge id>.n<k>`: what follows round k-1 (kind `held`). A creates it when it sends round k-1
 *   and fills it once (the next round's requests, the result, or an error); B polls it.
 * Abandoned rounds (no retry within `pendingRequestTimeoutSeconds`): A claims the unanswered records
 * itself, cancels the call at the target (notifications/cancelled) and removes every record.
 */

export interface BridgePayload {
  kind: 'input' | 'result' | 'error';
  /** Round k's requests, keyed by gateway id. */
  inputRequests?: Record<string, InputRequest>;
  response?: JSONRPCResponse;
  /** Why the held call ended without a result (a gateway failure, told through the error table). */
  failure?: { kind: 'RequestTimeout' | 'DependencyFailed'; message: string };
}

export interface BridgeSettings {
  store: PendingStore;
  logger: GatewayLogger;
  pendingTimeoutSeconds: number;
}

const nextKey = (bridgeId: string, round: number) => `${bridgeId}.n${round}`;

/** The holding side (A): turns the target's requests into rounds and fills the records B reads. */
export class BridgeHolder {
  readonly id = `mrtr-${randomBytes(16).toString('base64url')}`;
  private round = 0;
  private batch: JSONRPCRequest[] = [];
  private readonly ids: string[] = [];
  private readonly methods = new Map<string, string>();
  private readonly nextRecords: string[] = [];
  private queue: Promise<void> = Promise.resolve();
  private timer?: NodeJS.Timeout;
  private over = false;

  constructor(
    private readonly settings: BridgeSettings,
    private readonly call: {
      upstream: Upstream;
      clientRequestId: RequestId;
      /** Sends round 1 to the client (the input_required result on the held stream). */
      emitFirstRound(inputRequests: Record<string, InputRequest>, round: number): void;
      /** Nobody retried in time: the call is cancelled at the target and the held stream ends. */
      abandon(): void;
      /** A round could not be recorded (DynamoDB): the call is cancelled and the client told. */
      fail(error: unknown): void;
    },
  ) {}

  get bridged(): boolean {
    return this.round > 0;
  }

  /** A request of the target; requests that arrive together form one round. */
  onServerRequest(request: JSONRPCRequest): void {
    if (this.over) return;
    this.batch.push(request);
    if (this.batch.length === 1) setImmediate(() => this.enqueue(() => this.flush()));
  }

  /** The call ended (result or failure); B gets it from the record its retry waits on. */
  finish(outcome: { response: JSONRPCResponse } | { error: unknown }): Promise<void> {
    return this.enqueue(async () => {
      this.over = true;
      clearTimeout(this.timer);
      if (this.round === 0) return;
      const payload: BridgePayload =
        'response' in outcome
          ? { kind: 'result', response: outcome.response }
          : {
              kind: 'error',
              failure: {
                kind:
                  outcome.error instanceof Error && outcome.error.name === 'AbortError'
                    ? 'RequestTimeout'
                    : 'DependencyFailed',
                message: outcome.error instanceof Error ? outcome.error.message : String(outcome.error),
              },
            };
      await this.fill(this.round + 1, payload);
      // The target's requests were answered (or are moot now): their records go; B removes the last one it reads.
      await this.settings.store.deletePending(this.id, this.ids).catch(() => undefined);
    });
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(task).catch((error) => {
      this.settings.logger.warn('bridged round failed', { bridge: this.id, error: describeError(error) });
      if (!this.over) {
        this.over = true;
        this.call.fail(error);
      }
    });
    return this.queue;
  }

  private async flush(): Promise<void> {
    const requests = this.batch.splice(0);
    if (requests.length === 0 || this.over) return;
    const { store, pendingTimeoutSeconds } = this.settings;
    const { upstream } = this.call;
    const session = upstream.session;
    const inputRequests: Record<string, InputRequest> = {};
    const roundIds: string[] = [];
    for (const request of requests) {
      const record = newPendingRecord(pendingTimeoutSeconds, {
        kind: 'relayed',
        method: request.method,
        target: upstream.target,
        targetSessionId: session?.targetSessionId,
        targetRequestId: request.id,
        clientRequestId: this.call.clientRequestId,
      });
      record.targetProtocolVersion = session?.protocolVersion;
      await store.putPending({ id: this.id }, record);
      this.ids.push(record.gatewayId);
      this.methods.set(record.gatewayId, request.method);
      roundIds.push(record.gatewayId);
      inputRequests[record.gatewayId] = { method: request.method, params: request.params } as InputRequest;
      recordRelayedInput(request.method);
    }
    this.round++;
    // The record the retry of this round waits on exists before the client can retry.
    const next = newPendingRecord(pendingTimeoutSeconds + 60, {
      kind: 'held',
      method: 'bridge/next',
      target: upstream.target,
      clientRequestId: this.call.clientRequestId,
    });
    next.gatewayId = nextKey(this.id, this.round + 1);
    next.targetRequestId = next.gatewayId;
    await store.putPending({ id: this.id }, next);
    this.nextRecords.push(next.gatewayId);
    if (this.round === 1) this.call.emitFirstRound(inputRequests, this.round);
    else await this.fill(this.round, { kind: 'input', inputRequests });
    this.settings.logger.info('bridged a 2025 target request to an input_required round', {
      target: upstream.target,
      bridge: this.id,
      round: this.round,
      gatewayRequestIds: roundIds,
    });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.enqueue(() => this.checkAbandoned(roundIds)), pendingTimeoutSeconds * 1000);
    this.timer.unref();
  }

  private async fill(round: number, payload: BridgePayload): Promise<void> {
    const key = nextKey(this.id, round);
    await this.settings.store.answerPending(this.id, key, JSON.stringify({ jsonrpc: '2.0', id: key, result: payload }));
  }

  /** No retry answered the round in time: claim what is left, cancel at the target, remove everything. */
  private async checkAbandoned(roundIds: string[]): Promise<void> {
    if (this.over) return;
    const { store } = this.settings;
    const unanswered = await Promise.all(roundIds.map((id) => store.claimPending(this.id, id, 0).catch(() => false)));
    if (!unanswered.some(Boolean)) return; // answered: the target carries on
    this.over = true;
    for (const id of roundIds) recordExpiredInput(this.methods.get(id) ?? 'unknown');
    this.settings.logger.info('bridged round abandoned: no retry in time; cancelling at the target', {
      target: this.call.upstream.target,
      bridge: this.id,
      round: this.round,
    });
    this.call.abandon();
    await store.deletePending(this.id, [...this.ids, ...this.nextRecords]).catch(() => undefined);
  }
}

/** The retry's side (B): deliver the answers, then wait for what the target does next. */
export async function continueBridge(
  settings: BridgeSettings & { targets: Targets },
  bridge: { id: string; round: number },
  inputResponses: Record<string, unknown> | undefined,
  until: number,
  signal: AbortSignal,
): Promise<BridgePayload> {
  const { store, targets, logger } = settings;
  const stale = () =>
    new GatewayError(
      'RequestStateRefused',
      'Invalid params: this input round was already answered or has expired; send the request again without requestState and inputResponses',
      { reason: 'expired' },
    );
  for (const [gatewayId, answer] of Object.entries(inputResponses ?? {})) {
    const record = await store.getPending(bridge.id, gatewayId);
    if (record?.kind !== 'relayed') throw stale();
    if (!(await store.claimPending(bridge.id, gatewayId))) throw stale();
    const toTarget: JSONRPCResponse = {
      jsonrpc: '2.0',
      id: record.targetRequestId,
      result: answer as Record<string, unknown>,
    };
    try {
      await targets.deliver(
        record.target,
        {
          targetSessionId: record.targetSessionId,
          protocolVersion: record.targetProtocolVersion ?? LATEST_LEGACY_VERSION,
        },
        toTarget,
      );
    } catch (error) {
      logger.warn('delivering a bridged answer to the target failed', {
        target: record.target,
        error: describeError(error),
      });
      throw new GatewayError('DependencyFailed', `target ${record.target}: did not take the answer`, {
        target: record.target,
      });
    }
    recordAnsweredInput(record.method);
  }
  const key = nextKey(bridge.id, bridge.round);
  const answer = await waitForHeldAnswer(store, logger, bridge.id, key, until, signal, { goneIsFinal: true });
  if (answer === 'gone') throw stale();
  if (answer === 'timeout' || answer === 'client-gone') {
    throw new GatewayError(
      'RequestTimeout',
      'Timed out waiting for the target after the answers were delivered; retry the call',
    );
  }
  await store.deletePending(bridge.id, [key]).catch(() => undefined);
  if ('error' in answer) throw new GatewayError('Internal', 'Internal error');
  return JSON.parse(JSON.stringify(answer.result)) as BridgePayload;
}

/** The final message of a bridged call for the client, from the holder's payload. */
export function bridgeFailure(payload: BridgePayload, id: RequestId): JSONRPCResponse {
  const kind = payload.failure?.kind ?? 'DependencyFailed';
  return rpcError(id, new GatewayError(kind, payload.failure?.message ?? 'the bridged call failed'));
}
