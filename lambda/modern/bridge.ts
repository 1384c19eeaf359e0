import { randomBytes } from 'node:crypto';
import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { recordExpiredInput, recordRelayedInput } from '../observability/metrics';
import { deliverAnswer } from '../pending/answer-delivery';
import { refusalOf, staleRound } from '../pending/delivery-refusals';
import { Holder, type PendingWatch } from '../pending/holder';
import { waitForQuestionAnswer } from '../pending/questions';
import { GatewayError, ItemTooLargeError, rpcError } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { InputRequest, JSONRPCRequest, RequestId } from '../protocol/types';
import { LATEST_LEGACY_VERSION } from '../protocol/versions';
import { Backoff, poll } from '../scheduling/backoff';
import { type Clock, sleep } from '../scheduling/clock';
import { newPendingRecord } from '../state/records';
import type { PendingStore } from '../state/store';
import type { TargetLink } from '../targets/target-link';
import type { Targets } from '../targets/targets';
import { type BridgePayload, readOutcome, type WriteVerdict, writeOutcome } from './bridge-outcome';

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
 *   request id and protocol version. B claims it (conditional write, once), waits for A to acknowledge
 *   the claim (A is alive: ../pending/holder-ack.ts) and POSTs the answer to the target, which continues
 *   on A's stream.
 * - `P#<bridge id>.n<k>`: what follows round k-1 (kind `question`). A creates it when it sends round k-1
 *   and fills it once (the next round's requests, the result, or an error; in parts when large:
 *   ./bridge-outcome.ts); B polls it. It stays until it expires, so the same retry sent again gets it.
 * Abandoned rounds (no retry within `pendingRequestTimeoutSeconds`): A claims the unanswered records
 * itself, cancels the call at the target (notifications/cancelled) and removes every record.
 */

export type { BridgePayload };

export interface BridgeSettings {
  store: PendingStore;
  logger: GatewayLogger;
  pendingTimeoutSeconds: number;
  /** maxBridgedOutcomeBytes: the largest outcome handed to the retry (stored in parts). */
  maxOutcomeBytes: number;
  /**
   * maxPendingRequestsPerSession, per bridged call: the target's requests it may record in all; a round
   * that would pass it is refused at the target (TooManyPendingRequests) and nothing of it is stored.
   */
  maxRequests: number;
  /** The gateway's clock (the holder's). */
  clock: Clock;
}

/** How long the holder keeps trying to record an outcome DynamoDB refused (it waits anyway: the retry polls). */
const FILL_RETRY_FIRST_MS = 500;
const FILL_RETRY_MAX_MS = 5000;

const nextKey = (bridgeId: string, round: number) => `${bridgeId}.n${round}`;

/** The holding side (A): turns the target's requests into rounds and fills the records B reads. */
export class BridgedCall {
  readonly id = `mrtr-${randomBytes(16).toString('base64url')}`;
  private round = 0;
  private batch: JSONRPCRequest[] = [];
  private readonly ids: string[] = [];
  private readonly methods = new Map<string, string>();
  private readonly nextRecords: string[] = [];
  /** The requests of the last round sent (the one whose time is watched). */
  private lastRound: string[] = [];
  private queue: Promise<void> = Promise.resolve();
  /**
   * This invocation's hold on the call (pending/holder.ts): while it lives, the retry (any instance)
   * may deliver answers to its target's requests; the look at an unanswered round; what runs besides
   * the queue (a flush, a look), drained before finish() resolves.
   */
  private readonly holder: Holder;
  private over = false;
  /** An outcome that ends the call was recorded (too large a round): nothing follows it. */
  private closed = false;
  /** When each round's record expires (epoch seconds): its parts expire with it, and writing it stops then. */
  private readonly expiries = new Map<number, number>();

  constructor(
    private readonly settings: BridgeSettings,
    private readonly call: {
      targetLink: TargetLink;
      clientRequestId: RequestId;
      /** Sends round 1 to the client (the input_required result on the stream kept open). */
      emitFirstRound(inputRequests: Record<string, InputRequest>, round: number): void;
      /** Nobody retried in time: the call is cancelled at the target and the stream kept open ends. */
      abandon(): void;
      /** A round could not be recorded (DynamoDB): the call is cancelled and the client told. */
      fail(error: unknown): void;
    },
  ) {
    this.holder = new Holder({
      store: settings.store,
      logger: settings.logger,
      partition: this.id,
      context: { bridge: this.id },
      leased: () => [...this.ids],
      looked: () => this.ids,
      clock: settings.clock,
    });
  }

  get bridged(): boolean {
    return this.round > 0;
  }

  /** A request of the target; requests that arrive together form one round. */
  onServerRequest(request: JSONRPCRequest): void {
    if (this.over) return;
    this.batch.push(request);
    if (this.batch.length === 1) {
      setImmediate(() => this.holder.tasks.run('recording a bridged round', () => this.enqueue(() => this.flush())));
    }
  }

  /** The call ended (result or failure); B gets it from the record its retry waits on. */
  async finish(outcome: { response: JSONRPCResponse } | { error: unknown }): Promise<void> {
    await this.enqueue(async () => {
      this.over = true;
      this.holder.halt();
      if (this.round === 0 || this.closed) return;
      const payload: BridgePayload =
        'response' in outcome
          ? { kind: 'result', response: outcome.response }
          : { kind: 'error', failure: failureOf(outcome.error) };
      await this.fill(this.round + 1, payload);
      // The target's requests were answered (or are moot now): their records go; the outcomes stay until they expire.
      await this.settings.store.deletePending(this.id, this.ids).catch(() => undefined);
    });
    // A look or flush started before the end has run (each finds the call over): nothing outlives the call.
    await this.holder.drain();
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(task).catch((error) => {
      this.settings.logger.warn('bridged round failed', { bridge: this.id, error: describeError(error) });
      if (!this.over) {
        this.over = true;
        this.holder.halt();
        this.call.fail(error);
      }
    });
    return this.queue;
  }

  private async flush(): Promise<void> {
    const requests = this.batch.splice(0);
    if (requests.length === 0 || this.over) return;
    const { store, pendingTimeoutSeconds } = this.settings;
    const { targetLink } = this.call;
    if (this.ids.length + requests.length > this.settings.maxRequests) return this.refuse(requests);
    const session = targetLink.session;
    const inputRequests: Record<string, InputRequest> = {};
    const roundIds: string[] = [];
    for (const request of requests) {
      const record = newPendingRecord(this.holder.clock.now(), pendingTimeoutSeconds, {
        kind: 'relayed',
        method: request.method,
        target: targetLink.target,
        targetSessionId: session?.targetSessionId,
        targetRequestId: request.id,
        clientRequestId: this.call.clientRequestId,
      });
      record.targetProtocolVersion = session?.protocolVersion;
      await store.putPending({ id: this.id }, record);
      this.holder.asked(true);
      this.ids.push(record.gatewayId);
      this.methods.set(record.gatewayId, request.method);
      roundIds.push(record.gatewayId);
      inputRequests[record.gatewayId] = { method: request.method, params: request.params } as InputRequest;
      recordRelayedInput(request.method);
    }
    this.round++;
    // The record the retry of this round waits on exists before the client can retry.
    const next = newPendingRecord(this.holder.clock.now(), pendingTimeoutSeconds + 60, {
      kind: 'question',
      method: 'bridge/next',
      target: targetLink.target,
      clientRequestId: this.call.clientRequestId,
    });
    next.gatewayId = nextKey(this.id, this.round + 1);
    next.targetRequestId = next.gatewayId;
    // Filled by this holder only; the retry waiting on it is bounded by its own deadline.
    delete next.holderUntil;
    await store.putPending({ id: this.id }, next);
    this.nextRecords.push(next.gatewayId);
    this.expiries.set(this.round + 1, next.expiresAt);
    if (this.round === 1) this.call.emitFirstRound(inputRequests, this.round);
    else if ((await this.fill(this.round, { kind: 'input', inputRequests })) === 'too-large') {
      // The retry is told (OutcomeTooLarge); the call cannot go on without its answers: cancelled at the target.
      this.closed = true;
      this.over = true;
      this.holder.halt();
      this.call.fail(new GatewayError('OutcomeTooLarge', 'the next input round is too large to hand over'));
      return;
    }
    this.settings.logger.info('bridged a 2025 target request to an input_required round', {
      target: targetLink.target,
      bridge: this.id,
      round: this.round,
      gatewayRequestIds: roundIds,
    });
    // Looked at in the queue (after what it records), unless a later round's look replaces it.
    this.lastRound = roundIds;
    this.holder.watchPending('abandon-check', roundIds, pendingTimeoutSeconds * 1000, this.abandonWatch);
  }

  /** Too many requests for one bridged call: each is refused at the target (which can report it), nothing stored. */
  private async refuse(requests: JSONRPCRequest[]): Promise<void> {
    const { maxRequests, logger } = this.settings;
    const error = new GatewayError(
      'TooManyPendingRequests',
      `Too many requests for the client in one call (${this.ids.length} asked before, ${requests.length} more at once, at most ${maxRequests}: maxPendingRequestsPerSession)`,
      { limit: maxRequests },
    );
    logger.warn('refused a bridged round: too many requests in one call', {
      target: this.call.targetLink.target,
      bridge: this.id,
      requests: requests.length,
    });
    await Promise.all(
      requests.map((request) => this.call.targetLink.reply(rpcError(request.id, error)).catch(() => undefined)),
    );
  }

  /**
   * Records what follows round `round - 1` for the retry. DynamoDB failing is not the end: the outcome
   * is kept here and written again (backing off) until the round's record expires, so a stall while the
   * result is written delays the retry instead of losing what the target did.
   */
  private async fill(round: number, payload: BridgePayload): Promise<WriteVerdict> {
    const { store, logger, maxOutcomeBytes } = this.settings;
    const key = nextKey(this.id, round);
    const expiresAt = this.expiries.get(round) ?? 0;
    const template = {
      target: this.call.targetLink.target,
      clientRequestId: this.call.clientRequestId,
      createdAt: Math.floor(this.holder.clock.now() / 1000),
      expiresAt,
    };
    const backoff = new Backoff({ firstMs: FILL_RETRY_FIRST_MS, maxMs: FILL_RETRY_MAX_MS, factor: 2 });
    for (let attempt = 0; ; attempt++) {
      try {
        const verdict = await writeOutcome(store, this.id, key, payload, {
          maxBytes: maxOutcomeBytes,
          attempt,
          template,
        });
        if (verdict !== 'stored') logger.warn('bridged outcome not handed over', { bridge: this.id, round, verdict });
        return verdict;
      } catch (error) {
        // Only a failure of DynamoDB is worth writing again; one that no retry fixes ends here.
        const delay = backoff.next();
        if (error instanceof ItemTooLargeError || this.holder.clock.now() + delay >= expiresAt * 1000) throw error;
        logger.warn('recording a bridged outcome failed; writing it again', {
          bridge: this.id,
          round,
          error: describeError(error),
        });
        await sleep(this.holder.clock, delay);
      }
    }
  }

  /**
   * No retry answered the round in time (the holder's verdict, pending/holder.ts): what is left is
   * expired (a request still pending, or a delivery claim that lapsed), the call is cancelled at the
   * target and everything removed. A record answered meanwhile lets the target carry on; a delivery in
   * flight is looked at again when its claim lapses; one expired or removed by a retry whose delivery
   * the target refused ends the call too.
   */
  private readonly abandonWatch: PendingWatch = {
    waiting: () => !this.over,
    inTurn: (look) => this.enqueue(look),
    timeUp: async () => {
      this.over = true;
      this.holder.halt();
      for (const id of this.lastRound) recordExpiredInput(this.methods.get(id) ?? 'unknown');
      this.settings.logger.info('bridged round abandoned: no retry in time; cancelling at the target', {
        target: this.call.targetLink.target,
        bridge: this.id,
        round: this.round,
      });
      this.call.abandon();
      await this.settings.store.deletePending(this.id, [...this.ids, ...this.nextRecords]).catch(() => undefined);
    },
  };
}

/**
 * The retry's side (B): deliver the answers, then wait for what the target does next. Idempotent by
 * round: a round whose outcome is recorded already (this same retry sent again, or sent several
 * times at once) is given that outcome without delivering anything again; a retry finding another
 * one delivering an answer waits for it instead of failing.
 */
export async function continueBridge(
  settings: BridgeSettings & { targets: Targets },
  bridge: { id: string; round: number },
  inputResponses: Record<string, Record<string, unknown>> | undefined,
  until: number,
  signal: AbortSignal,
): Promise<BridgePayload> {
  const { store, logger } = settings;
  const key = nextKey(bridge.id, bridge.round);
  const recorded = await store.getPending(bridge.id, key);
  if (!recorded) throw stale();
  if (recorded.status === 'answered' && recorded.answer) return outcomeOf(store, bridge.id, key, recorded.answer);

  let delivered = true;
  for (const [gatewayId, answer] of Object.entries(inputResponses ?? {})) {
    const outcome = await deliverOnce(settings, bridge.id, gatewayId, answer, until, signal);
    if (outcome !== 'delivered') delivered = false;
  }
  const answer = await waitForQuestionAnswer(store, logger, bridge.id, key, until, signal, {
    goneIsFinal: true,
    clock: settings.clock,
  });
  if (answer === 'gone') {
    if (!delivered) throw stale();
    // The target has the answers, so re-running the call would act twice: say what happened instead.
    throw new GatewayError(
      'OutcomeLost',
      'The answers reached the target, but the outcome of the call was lost (the gateway instance holding it stopped or could not record it); the tool may have acted: check before calling it again',
    );
  }
  if (answer === 'timeout' || answer === 'client-gone') {
    throw new GatewayError(
      'RequestTimeout',
      'Timed out waiting for the target after the answers were delivered; send this same retry (same requestState and inputResponses) again to get the outcome — the answers are not delivered twice',
    );
  }
  if ('error' in answer) throw new GatewayError('Internal', 'Internal error');
  return outcomeOf(store, bridge.id, key, JSON.stringify(answer));
}

const stale = staleRound;

async function outcomeOf(store: PendingStore, bridgeId: string, key: string, answer: string): Promise<BridgePayload> {
  const stored = (JSON.parse(answer) as { result: Record<string, unknown> }).result;
  const payload = await readOutcome(store, bridgeId, key, stored);
  if (!payload) throw stale();
  return payload;
}

/** Between looks at a record another retry is delivering an answer to. */
const DELIVERY_WAIT_MS = 100;

/**
 * One answer of the round: claim, deliver, settle — or release (pending/answer-delivery.ts, as for a
 * 2025 client's answer POST): an answer that provably did not reach the target is released, so the
 * client's retry of the same round delivers it; one the target refused expires its record, so the
 * holder's look at the round (checkAbandoned) ends the call.
 * 'delivered': the target has it (now or by an earlier or concurrent retry); 'unknown': its record is
 * gone (the call ended or the holder cleaned up), so what the target got cannot be told from here.
 */
async function deliverOnce(
  settings: BridgeSettings & { targets: Targets },
  bridgeId: string,
  gatewayId: string,
  answer: Record<string, unknown>,
  until: number,
  signal: AbortSignal,
): Promise<'delivered' | 'unknown'> {
  const { store } = settings;
  // A retry finding another one delivering the same answer looks again until that one is done.
  const ended = await poll(
    async (): Promise<'delivered' | 'unknown' | undefined> => {
      const record = await store.getPending(bridgeId, gatewayId);
      if (record?.kind !== 'relayed') return 'unknown';
      const outcome = await deliverAnswer(settings, {
        partition: bridgeId,
        record,
        answer: { jsonrpc: '2.0', id: gatewayId, result: answer },
        protocolVersion: LATEST_LEGACY_VERSION,
        endCall: async (token) => {
          await store.releaseClaim(bridgeId, gatewayId, token).catch(() => undefined);
          await store.expirePending(bridgeId, gatewayId);
        },
        context: { bridge: bridgeId },
      });
      const refusal = refusalOf(outcome, 'retry', record.target);
      if (refusal === undefined || refusal === 'delivered') return 'delivered';
      if (refusal === 'wait') return undefined;
      throw refusal;
    },
    { firstMs: DELIVERY_WAIT_MS },
    { until, signal, clock: settings.clock },
  );
  if ('value' in ended) return ended.value;
  throw staleRound();
}

/** The final error of a bridged call for the client, from the holder's payload. */
export function bridgeFailure(payload: BridgePayload): GatewayError {
  const kind = payload.failure?.kind ?? 'DependencyFailed';
  return new GatewayError(kind, payload.failure?.message ?? 'the bridged call failed', payload.failure?.data);
}

/** Why a bridged call ended, as its retry is told: a request the client cannot be asked keeps its -32021. */
function failureOf(error: unknown): NonNullable<BridgePayload['failure']> {
  if (error instanceof GatewayError && error.kind === 'MissingCapability') {
    return { kind: 'MissingCapability', message: error.message, data: error.data };
  }
  return {
    kind: error instanceof Error && error.name === 'AbortError' ? 'RequestTimeout' : 'DependencyFailed',
    message: error instanceof Error ? error.message : String(error),
  };
}
