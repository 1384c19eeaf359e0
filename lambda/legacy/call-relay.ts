import type { ExchangeContext } from '../http/exchange';
import type { AcceptPreference } from '../http/responses';
import type { SseStream } from '../http/sse';
import { describeError } from '../observability/logger';
import { recordAnsweredInput, recordExpiredInput, recordRelayedInput } from '../observability/metrics';
import {
  cannotConfirmResult,
  confirmationForm,
  confirmationOutcome,
  notConfirmedResult,
} from '../policy/confirm-tools';
import { capabilitiesForLegacyTarget, clientAccepts, elicitationModes } from '../protocol/capabilities';
import {
  DependencyFailedError,
  errorHeaders,
  GatewayError,
  httpStatusOf,
  rpcError,
  rpcErrorOf,
} from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { JSONRPCMessage, JSONRPCNotification, JSONRPCRequest, ProgressToken, RequestId } from '../protocol/types';
import { DeferredResponse } from '../relay/deferred-response';
import { waitForHeldAnswer } from '../relay/held';
import { ClaimAcknowledger } from '../relay/holder-ack';
import { HolderLease } from '../relay/holder-lease';
import { upstreamRequestId } from '../relay/ids';
import { pendingTimeUp } from '../relay/pending-verdict';
import { ProgressMapper } from '../relay/progress';
import { deliverRecordedUntilTaken } from '../relay/recorded-answer';
import { allowsResumableStreams, openStreamLog, type StreamLog, streamLogSettings } from '../relay/stream-log';
import {
  mayRelease,
  type ReleaseSettings,
  releaseSettings,
  WaitingCall,
  type WaitingCallSnapshot,
  type WaitingRequest,
  type WaitingStep,
} from '../relay/waiting-call';
import { newPendingRecord } from '../state/records';
import type { CallEndReason, LoadedSession, PendingRecord } from '../state/store';
import { StreamDetachedError } from '../targets/endpoint';
import {
  type InputRequestEntry,
  inputRequiredOf,
  MAX_INPUT_ROUNDS,
  retryParams,
  toLegacyServerRequest,
} from '../targets/input-rounds';
import type { StreamCursor } from '../targets/sse-reader';
import type { Caller, Upstream } from '../targets/upstream';
import type { LegacyDeps } from './deps';

export interface RelayInput {
  deps: LegacyDeps;
  loaded: LoadedSession;
  caller: Caller;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  /** The client's request as received. */
  request: JSONRPCRequest;
  target: string;
  /** The params to send upstream (names already mapped to the target's own). */
  params: Record<string, unknown>;
  responseHeaders: Record<string, string>;
  /** confirmTools: ask the user before forwarding (the name the client called, the target's tool). */
  confirm?: { exposedName: string; tool: string };
  /**
   * Going on with a call another invocation released (or whose holder died), taken over by the
   * client's reconnect (legacy/resume.ts): the reconnect's stream, and where the call stands.
   */
  resumed?: { waiting: WaitingCall; snapshot: WaitingCallSnapshot; stream: SseStream };
}

/** forward() let go of the call: its stream is to be released (the record written by run()). */
const RELEASED = Symbol('released');

/** How long before the invocation's deadline a resumable call is released rather than ended with -32001. */
const RELEASE_BEFORE_DEADLINE_MS = 1500;
const DEADLINE_RELEASE_RETRY_MS = 200;

/** How long a reconnect that took a still-waiting call over holds it before letting go again. */
const RECONNECT_HOLD_MS = 200;

/** A relayed call still running after this long answers as a stream, so keep-alives can flow. */
const STREAM_AFTER_MS = 1000;

type EndReason = 'client-gone' | 'client-cancelled' | 'deadline' | 'pending-timeout' | 'answer-lost' | 'shutdown';

type RunOutcome = { message: JSONRPCMessage; error?: unknown; silent?: boolean } | { released: true };

/**
 * Relays one client request of a 2025 session (tools/call, prompts/get, resources/read,
 * completion/complete) to its target and streams back everything the target sends for it:
 * - a gateway-held confirmation first, when policy asks for one (confirmTools);
 * - the target's server-to-client requests with gateway ids, each recorded as pending in DynamoDB
 *   first, so the client's answer can reach the target from any instance;
 * - a 2026-07-28 target's input_required rounds, asked as held requests and retried upstream;
 * - progress with the client's own token, log messages, and finally the response with the client's id.
 * The response is JSON when the target just answers, SSE as soon as something must reach the client
 * first (or the call runs long). In a 2025-11-25 session the stream is resumable (http/sse.ts): its
 * events are kept in the session's partition before they are sent, and a client whose connection
 * drops is not cancelling (2025-11-25 transports: a disconnect is not a cancellation), so the call
 * goes on and the client's reconnect (`GET` + `Last-Event-ID`, any instance) gets the rest.
 * The invocation's deadline, a pending request past `pendingRequestTimeoutSeconds`, or a client gone
 * from a stream that cannot be resumed: the target is told (notifications/cancelled), records are
 * removed, and the client (if still there) gets -32001.
 */
export function relayCall(input: RelayInput): Promise<Response> {
  return startRelay(input).response;
}

/**
 * Goes on with a call taken over by a reconnect (legacy/resume.ts), on the reconnect's stream;
 * resolves when this invocation is done with it (the call ended, or was released again).
 */
export function continueCall(input: RelayInput & Required<Pick<RelayInput, 'resumed'>>): Promise<void> {
  return startRelay(input).done;
}

function startRelay(input: RelayInput): { response: Promise<Response>; done: Promise<void> } {
  const relay = new Relay(input);
  const { deps, loaded } = input;
  const out = new DeferredResponse({
    existing: input.resumed?.stream,
    accept: input.accept,
    headers: input.responseHeaders,
    keepAliveMs: deps.keepAliveMs,
    stalledClientMs: deps.config.stalledClientTimeoutSeconds * 1000,
    streamAfterMs: Math.min(STREAM_AFTER_MS, deps.keepAliveMs),
    onClientGone: () => relay.clientGone(),
    eventLog: allowsResumableStreams(loaded.session.protocolVersion)
      ? () =>
          relay.useStreamLog(
            openStreamLog(deps.store, loaded.session, streamLogSettings(deps.config), deps.logger, {
              deadline: input.exchange.deadline,
              removeAtEnd: relay.removedWithTheEnd(),
            }),
          )
      : undefined,
  });
  const done = relay.run(out).then(async (outcome) => {
    if ('released' in outcome) {
      // Not the stream's end: the client reconnects after `retry` and the call goes on there.
      out.hangUp(releaseSettings(deps.config).retryMs);
    } else {
      const { message, error, silent } = outcome;
      // A call the client cancelled gets no response on its stream (the spec: the receiver SHOULD NOT send one).
      if (silent && out.streaming) out.end();
      else out.finish(message, error ? httpStatusOf(error) : 200, error ? errorHeaders(error) : {});
    }
    // A resumable stream keeps its end before writing it: done (what a shutdown waits for) once it is written.
    await out.flushed();
    relay.markDone();
  });
  return { response: out.response, done };
}

type HeldAnswers =
  | Array<Exclude<Awaited<ReturnType<typeof waitForHeldAnswer>>, string>>
  | 'timeout'
  | 'ended'
  | typeof RELEASED;

class Relay {
  private readonly upstreamId: string;
  private readonly upstreamAbort = new AbortController();
  private readonly relayed = new Map<string, { method: string; askedAt: number; timer: NodeJS.Timeout }>();
  /** Held records (confirmations, input rounds), removed with the others. */
  private readonly held: string[] = [];
  /** Relayed records whose recorded answer this holder delivered (no longer waiting; removed with the others). */
  private readonly delivered: string[] = [];
  /** Relayed records whose recorded answer this holder is delivering now. */
  private readonly delivering = new Set<string>();
  /** Stops the deliveries of recorded answers once the call is over (however it ended). */
  private readonly callOver = new AbortController();
  private readonly progress: ProgressMapper;
  private upstream?: Upstream;
  /** Events reach the client in the order the target sent them, each after its pending record is stored. */
  private queue: Promise<void> = Promise.resolve();
  private out?: DeferredResponse;
  private finished = false;
  private endReason?: EndReason;
  /** The client's connection to a resumable stream closed (the call went on). */
  private clientLeft = false;
  private cancelWatch?: NodeJS.Timeout;
  /**
   * While this call has records waiting for the client, their holder lease is renewed, so an
   * instance that answers knows the call is still held; a holder that died stops being answered.
   */
  private readonly lease: HolderLease;
  /** Acknowledges delivery claims on this call's relayed requests while it holds them (relay/holder-ack.ts). */
  private readonly acknowledger: ClaimAcknowledger;
  /** The call's durable record once it waits, when its stream may be released (relay/waiting-call.ts). */
  private waiting?: WaitingCall;
  /** Where the call stands while it waits (what a release writes). */
  private step?: WaitingStep;
  /** What the call is doing: waiting for held answers, or reading the target (`upstreamCallId`). */
  private phase: 'held-wait' | 'upstream' | 'other' = 'other';
  private upstreamCallId?: RequestId;
  /** The target stream's last event id and `retry` (a 2025 target's stream can be resumed from it). */
  private readonly cursor: StreamCursor = {};
  /** Stops reading the target's stream without cancelling (a release). */
  private detach = new AbortController();
  /** Ends the waits for held answers (a release). */
  private releaseWaits = new AbortController();
  private releasing = false;
  private releaseTimer?: NodeJS.Timeout;
  private readonly release: ReleaseSettings;
  /** The call's records that carry this holder's lease (the others need none: see withHolder). */
  private readonly leased = new Set<string>();
  /** The call's pending records the stream's end removes (its log is this relay's: see cleanup). */
  private goWithTheEnd?: string[];
  /** The stream's log was opened by this relay, with `removedWithTheEnd` (not a reconnect's). */
  private logRemovesPending = false;
  /** Resolved once the call is over: records removed and the client's response finished. */
  readonly markDone: () => void;
  private readonly done: Promise<void>;

  constructor(private readonly input: RelayInput) {
    let resolve!: () => void;
    this.done = new Promise<void>((r) => {
      resolve = r;
    });
    this.markDone = resolve;
    this.upstreamId = upstreamRequestId(input.request.id);
    this.acknowledger = new ClaimAcknowledger(
      input.deps.store,
      input.deps.logger,
      input.loaded.session.id,
      () => [...this.relayed.keys()].filter((id) => this.leased.has(id)),
      undefined,
      (record) => void this.deliverRecorded(record),
    );
    this.lease = new HolderLease(input.deps.store, input.deps.logger, input.loaded.session.id, () => [...this.leased], {
      beforeRenew: () => this.renewWaitingCall(),
      context: { sessionId: input.loaded.session.id, target: input.target, method: input.request.method },
    });
    this.progress = new ProgressMapper(
      (input.params._meta as { progressToken?: ProgressToken } | undefined)?.progressToken,
      input.resumed?.snapshot.call.upstreamProgressToken,
    );
    this.release = releaseSettings(input.deps.config);
    const resumed = input.resumed;
    if (resumed) {
      this.waiting = resumed.waiting;
      const { step } = resumed.snapshot;
      if (step.kind === 'target-stream') this.cursor.lastEventId = step.lastEventId;
      const relayedIds = new Set(resumed.snapshot.relayed.map((r) => r.gatewayId));
      this.held.push(...resumed.snapshot.records.filter((id) => !relayedIds.has(id)));
      for (const request of resumed.snapshot.relayed)
        this.trackRelayed(request.gatewayId, request.method, request.askedAt);
      for (const id of resumed.snapshot.leased) this.leased.add(id);
    }
  }

  private get log() {
    const { deps, loaded, target, request } = this.input;
    const keys = { sessionId: loaded.session.id, target, method: request.method };
    return {
      info: (message: string, extra: object = {}) => deps.logger.info(message, { ...keys, ...extra }),
      warn: (message: string, extra: object = {}) => deps.logger.warn(message, { ...keys, ...extra }),
    };
  }

  /** The client's stream, opened on first use; undefined when the client cannot take one or the call is over. */
  private stream(): SseStream | undefined {
    return this.finished ? undefined : this.out?.stream();
  }

  async run(out: DeferredResponse): Promise<RunOutcome> {
    this.out = out;
    const { exchange, loaded } = this.input;
    const onClientGone = () => this.clientGone();
    exchange.signal.addEventListener('abort', onClientGone, { once: true });
    const deadline = setTimeout(() => this.stop('deadline'), Math.max(0, exchange.deadline - Date.now()));
    deadline.unref();
    // A call that can be resumed is released just before the deadline instead (the function timeout is no limit).
    const beforeDeadline = setTimeout(
      () => void this.releaseBeforeDeadline(),
      Math.max(0, exchange.deadline - RELEASE_BEFORE_DEADLINE_MS - Date.now()),
    );
    beforeDeadline.unref();
    if (this.input.resumed) {
      this.lease.start();
      if (this.leased.size > 0) {
        this.acknowledger.start();
        // Records asked before the call could be taken over lost their holder lease at its release: held again.
        await this.lease.renewNow();
      }
    }
    const unregister = this.input.deps.activeCalls.register(loaded.session.id, this.upstreamId, {
      cancelByClient: (reason) => this.stop('client-cancelled', reason ?? 'gateway: client cancelled'),
      shutdown: () => {
        this.stop('shutdown', 'gateway: shutting down');
        return this.done;
      },
    });
    let outcome: RunOutcome;
    try {
      outcome = await this.forwardUntilReleased(this.input.resumed?.snapshot.step);
    } catch (error) {
      // A stream that ended without a response may be the target honouring a cancellation sent from another instance.
      if (!this.endReason && error instanceof DependencyFailedError) {
        const marker = await this.cancelledElsewhere();
        if (marker) this.stopFor(marker);
      }
      outcome = { message: this.failure(error), error: this.endReason ? undefined : error };
      if (this.endReason === 'client-cancelled') outcome.silent = true;
    }
    // What the target sent before its response (queued behind earlier records) reaches the client
    // first: the stream stays usable until the queue has drained, then the call is over.
    await this.queue;
    this.finished = true;
    unregister();
    this.acknowledger.stop();
    this.callOver.abort();
    clearTimeout(this.cancelWatch);
    this.lease.stop();
    clearTimeout(this.releaseTimer);
    clearTimeout(deadline);
    clearTimeout(beforeDeadline);
    exchange.signal.removeEventListener('abort', onClientGone);
    await this.queue; // a server request that slipped in meanwhile is refused (finished) before cleanup
    if ('released' in outcome) {
      for (const { timer } of this.relayed.values()) clearTimeout(timer);
      return outcome;
    }
    await this.cleanup();
    return outcome;
  }

  /**
   * forward() from where the call stands; when it let go of the call, the release is written (the
   * record, then the pending records lose their holder lease). When that fails the call is not
   * released: this invocation goes on with it from the same step, and tries again later.
   */
  private async forwardUntilReleased(from: WaitingStep | undefined): Promise<RunOutcome> {
    for (;;) {
      const result = await this.forward(from);
      if (result !== RELEASED) return { message: result };
      await this.queue; // what the target sent before the release reaches the client (and the log) first
      const step = this.currentStep();
      if (step && (await this.writeRelease(step))) return { released: true };
      this.log.warn('the call could not be released; this invocation goes on holding it');
      this.releasing = false;
      this.detach = new AbortController();
      this.releaseWaits = new AbortController();
      from = step;
      this.scheduleRelease();
    }
  }

  /** The step a release writes: the held wait's, or the target stream's (from where it was read up to). */
  private currentStep(): WaitingStep | undefined {
    if (this.step?.kind !== 'target-stream') return this.step;
    return this.cursor.lastEventId ? { ...this.step, lastEventId: this.cursor.lastEventId } : undefined;
  }

  private snapshot(step: WaitingStep): WaitingCallSnapshot {
    const { target, request, params, confirm } = this.input;
    return {
      call: {
        target,
        method: request.method,
        clientRequestId: request.id,
        params,
        confirm,
        upstreamProgressToken: this.progress.upstreamToken,
      },
      step,
      relayed: [...this.relayed].map(([gatewayId, { method, askedAt }]) => ({ gatewayId, method, askedAt })),
      records: this.pendingIds(),
      leased: [...this.leased],
    };
  }

  /**
   * A record of a call that can be taken over (a resumable client stream in a session whose calls may
   * be released, and nothing upstream that only this invocation could read: `resumableUpstream`) needs
   * no live holder: if this instance dies, the client's reconnect takes the call over, so an answer is
   * stored or delivered regardless. Any other record carries the holder's lease (state/records.ts).
   */
  private withHolder(record: PendingRecord, resumableUpstream: boolean): PendingRecord {
    const takeoverable =
      resumableUpstream && this.out?.resumable === true && mayRelease(this.release, this.input.loaded.session);
    if (!takeoverable) {
      this.leased.add(record.gatewayId);
      return record;
    }
    const { holderUntil: _none, ...unleased } = record;
    return unleased;
  }

  private pendingIds(): string[] {
    return [...this.relayed.keys(), ...this.held, ...this.delivered];
  }

  /** The call now waits (for the client, or a target that polls): its record says where it stands. */
  private async holdWaiting(step: WaitingStep): Promise<void> {
    this.step = step;
    const stream = this.out?.stream();
    if (!stream?.resumable || !mayRelease(this.release, this.input.loaded.session)) return;
    if (!this.waiting) {
      const { deps, loaded } = this.input;
      this.waiting = new WaitingCall(deps.store, loaded.session.id, stream.streamId ?? '', () =>
        Math.min(loaded.session.expiresAt, Math.floor(Date.now() / 1000) + deps.config.streamLogTtlSeconds),
      );
    }
    const step2 = this.currentStep();
    if (!step2) return;
    try {
      await this.waiting.hold(this.snapshot(step2), stream.nextSeq);
    } catch (error) {
      // Without its record the call cannot be released (nor taken over): it is held, as before.
      this.log.warn('the waiting call was not recorded; it is held', { error: describeError(error) });
      return;
    }
    this.scheduleRelease();
  }

  /** After the grace period the call is released if it still waits. */
  private scheduleRelease(): void {
    clearTimeout(this.releaseTimer);
    // A reconnect that finds the call still waiting lets go again soon: its client polls (every `retry`),
    // and each look should cost a short invocation, not another grace period.
    const afterMs = this.input.resumed ? Math.min(this.release.afterMs, RECONNECT_HOLD_MS) : this.release.afterMs;
    this.releaseTimer = setTimeout(() => this.tryRelease('waited past streamReleaseAfterSeconds'), afterMs);
    this.releaseTimer.unref();
  }

  /**
   * The function is about to time out: a call that waits is released; so is a 2025 target's call
   * still running, when its stream can be resumed (it sent event ids). Otherwise the deadline ends it.
   */
  private async releaseBeforeDeadline(): Promise<void> {
    const upstream = this.upstream;
    if (this.phase === 'upstream' && this.step === undefined && upstream?.era === 'legacy' && this.cursor.lastEventId) {
      await this.holdWaiting({
        kind: 'target-stream',
        requestId: this.upstreamCallId ?? this.upstreamId,
        lastEventId: this.cursor.lastEventId,
        targetSessionId: upstream.session?.targetSessionId,
      });
    }
    this.tryRelease('the invocation is about to time out');
    // Not releasable at this very moment (between two steps): look again until the deadline ends the call.
    if (!this.releasing && !this.finished && !this.endReason && Date.now() < this.input.exchange.deadline) {
      setTimeout(() => void this.releaseBeforeDeadline(), DEADLINE_RELEASE_RETRY_MS).unref();
    }
  }

  /** Lets go of the call now when it can be resumed elsewhere: the waits end, the target's stream is detached. */
  private tryRelease(why: string): void {
    if (this.finished || this.endReason || this.releasing || !this.waiting?.holding) return;
    // An answer on its way to the target: what it does next is read by this invocation.
    if (this.delivering.size > 0) return;
    if (this.phase === 'upstream') {
      if (this.upstream?.era !== 'legacy' || !this.cursor.lastEventId || this.step?.kind !== 'target-stream') return;
    } else if (this.phase !== 'held-wait') return;
    this.releasing = true;
    this.log.info('releasing the call', { reason: why });
    this.releaseWaits.abort();
    this.detach.abort();
  }

  /** The record says released, the pending records lose their holder lease; false when the record could not be written. */
  private async writeRelease(step: WaitingStep): Promise<boolean> {
    const { deps, loaded } = this.input;
    const stream = this.out?.stream();
    if (!this.waiting || !stream) return false;
    try {
      if (!(await this.waiting.release(this.snapshot(step), stream.nextSeq))) return false;
    } catch (error) {
      this.log.warn('releasing the call failed', { error: describeError(error) });
      return false;
    }
    await deps.store.detachHolder(loaded.session.id, [...this.leased]).catch((error) =>
      // Their leases run out by themselves (HOLDER_LEASE_MS): until the reconnect renews them, answers wait.
      this.log.warn('detaching the holder from pending records failed', { error: describeError(error) }),
    );
    this.log.info('call released; the client reconnects for the rest', { step: step.kind });
    return true;
  }

  private async forward(from: WaitingStep | undefined): Promise<JSONRPCMessage | typeof RELEASED> {
    const { deps, request, target, caller } = this.input;
    if (this.input.confirm && (!from || from.kind === 'confirm')) {
      const refusal = await this.confirm(this.input.confirm, from?.kind === 'confirm' ? from.request : undefined);
      if (refusal) return refusal;
      from = undefined;
    }
    const signal = this.upstreamAbort.signal;
    const upstream = this.upstream ?? (await deps.targets.open(target, caller, signal));
    this.upstream = upstream;
    const options = {
      signal,
      cursor: this.cursor,
      detach: this.detach.signal,
      progressToken: this.progress.upstreamToken,
      onServerRequest: (serverRequest: JSONRPCRequest) => this.enqueue(() => this.onServerRequest(serverRequest)),
      onNotification: (notification: JSONRPCNotification) =>
        this.enqueue(async () => this.onNotification(notification)),
      // The target's stream is not read while the client's is full (the relay's queue is drained first).
      backpressure: () => this.out?.room(),
    };
    if (!this.cancelWatch) this.watchForCancellation();
    const callUpstream = async (id: RequestId, params: Record<string, unknown>, resumeFrom?: string) => {
      this.phase = 'upstream';
      this.upstreamCallId = id;
      try {
        const targetSessionId =
          from?.kind === 'target-stream' ? from.targetSessionId : upstream.session?.targetSessionId;
        return await upstream.call(
          { id, method: request.method, params },
          {
            ...options,
            resumeFrom: resumeFrom === undefined ? undefined : { lastEventId: resumeFrom, targetSessionId },
          },
        );
      } catch (error) {
        if (error instanceof StreamDetachedError && this.releasing) return RELEASED;
        throw error;
      } finally {
        this.phase = 'other';
      }
    };
    let response: JSONRPCResponse | typeof RELEASED;
    let firstRound = 1;
    if (from?.kind === 'input') {
      // Taken over in an input round: its answers (awaited here if not yet there), then the target's retry.
      const collected = await this.awaitInput(from);
      if (collected === RELEASED || !('responses' in collected)) return collected;
      if (Object.keys(collected.responses).length) recordAnsweredInput('mrtr-retry');
      const params = retryParams(this.input.params, collected.responses, from.requestState);
      response = await callUpstream(`${this.upstreamId}.r${from.round}`, params);
      firstRound = from.round + 1;
    } else if (from?.kind === 'target-stream') {
      this.step = from;
      response = await callUpstream(from.requestId, this.input.params, from.lastEventId);
    } else {
      response = await callUpstream(this.upstreamId, this.input.params);
    }
    // A 2026-07-28 target asks for input with input_required results: the rounds run here.
    for (let round = firstRound; ; round++) {
      if (response === RELEASED) return RELEASED;
      const inputRequired = inputRequiredOf(response);
      if (!inputRequired) break;
      if (round > MAX_INPUT_ROUNDS) {
        return rpcErrorOf(
          request.id,
          'TooManyInputRounds',
          `Target ${target} still asked for input after ${MAX_INPUT_ROUNDS} rounds; the gateway stopped the call`,
          { target },
        );
      }
      const collected = await this.collectInput(
        Object.entries(inputRequired.inputRequests),
        round,
        inputRequired.requestState,
      );
      if (collected === RELEASED || !('responses' in collected)) return collected;
      if (Object.keys(collected.responses).length) recordAnsweredInput('mrtr-retry');
      const params = retryParams(this.input.params, collected.responses, inputRequired.requestState);
      response = await callUpstream(`${this.upstreamId}.r${round}`, params);
    }
    return { ...response, id: request.id };
  }

  /**
   * confirmTools: the gateway asks the user itself (form elicitation naming the tool and showing
   * its arguments) before anything reaches the target. Undefined when confirmed; otherwise the
   * final message (not confirmed, cannot be asked, timed out). The target is never called then.
   */
  private async confirm(
    confirm: { exposedName: string; tool: string },
    asked?: WaitingRequest,
  ): Promise<JSONRPCMessage | undefined | typeof RELEASED> {
    const { loaded, request, target, accept } = this.input;
    const reply = (result: ReturnType<typeof notConfirmedResult>): JSONRPCMessage => ({
      jsonrpc: '2.0',
      id: request.id,
      result,
    });
    if (!elicitationModes(loaded.session.clientCapabilities).form) {
      return reply(cannotConfirmResult(confirm.exposedName, 'the session did not declare form elicitation'));
    }
    if (!accept.sse) {
      return reply(cannotConfirmResult(confirm.exposedName, 'the request does not accept text/event-stream'));
    }
    const params = this.input.params;
    const form = confirmationForm(confirm.exposedName, target, confirm.tool, params.arguments);
    const answers = asked
      ? await this.awaitHeld([asked], { kind: 'confirm', request: asked })
      : await this.askHeld(
          [{ method: 'elicitation/create', params: { ...form } }],
          'confirmation requested',
          (sent) => ({
            kind: 'confirm',
            request: sent[0]!,
          }),
        );
    if (answers === RELEASED) return RELEASED;
    if (answers === 'timeout') {
      return rpcErrorOf(
        request.id,
        'RequestTimeout',
        'Timed out waiting for the user to confirm the tool call; the tool was not called',
      );
    }
    if (!Array.isArray(answers)) throw new Error(`confirmation ended: ${this.endReason}`);
    const [answer] = answers;
    const outcome = answer && 'result' in answer ? confirmationOutcome(answer.result) : 'cancelled';
    this.log.info('confirmation answered', { tool: confirm.tool, outcome });
    if (outcome === 'confirmed') return undefined;
    return reply(notConfirmedResult(confirm.exposedName, outcome === 'declined' ? 'declined' : 'cancelled'));
  }

  /**
   * One input_required round of a 2026-07-28 target: every input request goes to the client as a
   * held request; all answers → the responses under the target's keys. A kind the session did not
   * declare, or a client that cannot take a stream → CrossEraInputUnsupported, nothing is sent; a
   * JSON-RPC error from the client ends the call with a clear error.
   */
  private async collectInput(
    entries: Array<[string, InputRequestEntry]>,
    round: number,
    requestState: string | undefined,
  ): Promise<{ responses: Record<string, unknown> } | JSONRPCResponse | typeof RELEASED> {
    const { loaded, request, target } = this.input;
    if (entries.length === 0) return { responses: {} }; // requestState only: retry at once
    await this.queue; // the target's notifications so far go first
    // What the session's version allows of what the client declared (as declared to the target).
    const usable = capabilitiesForLegacyTarget(loaded.session.clientCapabilities, loaded.session.protocolVersion);
    const refused = entries.filter(
      ([, r]) => typeof r?.method !== 'string' || !clientAccepts(usable, r.method, r.params),
    );
    if (refused.length > 0 || !this.input.accept.sse) {
      const methods = (refused.length ? refused : entries).map(([, r]) => String(r?.method));
      this.log.info('refused input requests the client cannot take', { inputMethods: methods });
      return rpcErrorOf(
        request.id,
        'CrossEraInputUnsupported',
        `Target ${target} (protocol 2026-07-28) needs input from the user (${methods.join(', ')}) that this session cannot take: ` +
          'it is relayed only when declared at initialize (elicitation, its url mode, sampling, roots) and the request accepts text/event-stream',
        { target, inputRequests: methods },
      );
    }
    const answers = await this.askHeld(
      entries.map(([, entry]) => entry),
      'relayed input requests of a 2026-07-28 target',
      (sent) => ({
        kind: 'input',
        round,
        requestState,
        keys: sent.map((asked, index) => ({ key: entries[index]![0], ...asked })),
      }),
    );
    return this.inputResponses(
      entries.map(([key, entry]) => ({ key, method: entry.method })),
      answers,
    );
  }

  /** A round taken over: its answers (awaited), as the target's responses. */
  private async awaitInput(
    step: Extract<WaitingStep, { kind: 'input' }>,
  ): Promise<{ responses: Record<string, unknown> } | JSONRPCResponse | typeof RELEASED> {
    const answers = await this.awaitHeld(step.keys, step);
    return this.inputResponses(step.keys, answers);
  }

  private inputResponses(
    keys: Array<{ key: string; method: string }>,
    answers: Awaited<ReturnType<Relay['awaitHeld']>>,
  ): { responses: Record<string, unknown> } | JSONRPCResponse | typeof RELEASED {
    const { request, target } = this.input;
    if (answers === RELEASED) return RELEASED;
    if (answers === 'timeout' || !Array.isArray(answers)) throw new Error(`input round ended: ${this.endReason}`);
    const errorIndex = answers.findIndex((a) => 'error' in a);
    const failed = answers[errorIndex];
    if (failed && 'error' in failed) {
      const method = keys[errorIndex]?.method;
      const { error } = failed;
      this.log.info('the client answered an input request with an error', { inputMethod: method, code: error.code });
      return rpcErrorOf(
        request.id,
        'InputRequestFailed',
        `The client answered ${method} of target ${target} with an error (${error.code}: ${error.message}); the call was stopped`,
        { target, inputMethod: method, clientError: { code: error.code, message: error.message } },
      );
    }
    const responses: Record<string, unknown> = {};
    keys.forEach(({ key }, index) => {
      responses[key] = (answers[index] as { result: unknown }).result;
    });
    return { responses };
  }

  /**
   * Asks the client held requests on the call's stream and waits for all answers (any instance
   * stores them; this invocation polls). Stops at the first error answer. 'timeout' only for a
   * confirmation (an input round's timeout ends the call as a pending timeout).
   */
  private async askHeld(
    requests: InputRequestEntry[],
    logMessage: string,
    stepOf: (sent: WaitingRequest[]) => WaitingStep,
  ): Promise<HeldAnswers> {
    const { deps, loaded, request, target } = this.input;
    const sent: WaitingRequest[] = [];
    await this.checkPendingCap(requests.length);
    // Opened first: whether the records need a live holder depends on whether the stream is resumable.
    if (!this.stream()) return 'ended';
    for (const entry of requests) {
      const record = this.withHolder(
        newPendingRecord(deps.config.pendingRequestTimeoutSeconds, {
          kind: 'held',
          method: entry.method,
          target,
          clientRequestId: request.id,
        }),
        true,
      );
      await deps.store.putPending(loaded.session, record);
      this.held.push(record.gatewayId);
      this.lease.start();
      sent.push({ gatewayId: record.gatewayId, method: entry.method, askedAt: Date.now() });
    }
    const stream = this.stream();
    if (!stream) return 'ended';
    requests.forEach((entry, index) => {
      stream.send(toLegacyServerRequest(sent[index]!.gatewayId, entry, loaded.session.protocolVersion));
      recordRelayedInput(entry.method);
    });
    this.log.info(logMessage, { gatewayRequestIds: sent.map((s) => s.gatewayId) });
    return this.awaitHeld(sent, stepOf(sent));
  }

  /**
   * Waits for the answers to held requests (asked by this invocation, or by one before it: their
   * pending timeout runs from when they were asked). The call may be released meanwhile (RELEASED).
   */
  private async awaitHeld(sent: WaitingRequest[], step: WaitingStep): Promise<HeldAnswers> {
    const { deps, loaded } = this.input;
    await this.holdWaiting(step);
    const pendingEnd = Math.min(...sent.map((s) => s.askedAt)) + deps.config.pendingRequestTimeoutSeconds * 1000;
    // The deadline ends the wait only when the call cannot be released before it.
    const until = Math.min(this.waiting?.holding ? Number.POSITIVE_INFINITY : this.input.exchange.deadline, pendingEnd);
    const failed = new AbortController(); // one error answer ends the round: stop waiting for the rest
    const stop = AbortSignal.any([this.upstreamAbort.signal, failed.signal, this.releaseWaits.signal]);
    this.phase = 'held-wait';
    const answers = await Promise.all(
      sent.map(async ({ gatewayId }) => {
        const answer = await waitForHeldAnswer(deps.store, deps.logger, loaded.session.id, gatewayId, until, stop);
        if (typeof answer === 'object' && 'error' in answer) failed.abort();
        return answer;
      }),
    ).finally(() => {
      this.phase = 'other';
    });
    if (this.releasing && !failed.signal.aborted && answers.some((a) => typeof a !== 'object')) return RELEASED;
    const errorAnswer = answers.find((a) => typeof a === 'object' && 'error' in a);
    if (errorAnswer && typeof errorAnswer === 'object') {
      return answers.map((a) => (typeof a === 'object' ? a : errorAnswer));
    }
    if (answers.some((a) => a === 'timeout') && !this.endReason) {
      if (Date.now() < pendingEnd) this.stop('deadline');
      else if (!this.input.confirm || this.upstream) {
        for (const { method } of sent) recordExpiredInput(method);
        this.stop('pending-timeout');
      } else return 'timeout';
    }
    if (this.endReason) return 'ended';
    return answers as Array<Exclude<(typeof answers)[number], string>>;
  }

  private failure(error: unknown): JSONRPCMessage {
    const id = this.input.request.id;
    switch (this.endReason) {
      case 'deadline':
        return rpcErrorOf(
          id,
          'RequestTimeout',
          'Request timed out at the gateway before the target answered; retry the call',
        );
      case 'pending-timeout':
        return rpcErrorOf(
          id,
          'RequestTimeout',
          'Timed out waiting for the client to answer a request of the target; retry the call',
        );
      case 'client-gone':
        return rpcErrorOf(id, 'ClientGone', 'Client went away');
      case 'answer-lost':
        return rpcErrorOf(
          id,
          'AnswerLost',
          'The answer to a request of the target could not be delivered (the target refused it); the call was ended — retry the call',
        );
      case 'shutdown':
        return rpcErrorOf(
          id,
          'ShuttingDown',
          'The gateway instance holding this call is shutting down; the call was cancelled at the target — retry it',
        );
      case 'client-cancelled':
        return rpcErrorOf(id, 'ClientCancelled', 'Request cancelled by the client');
      default:
        if (!(error instanceof GatewayError) || error.spec.status >= 500 || error.spec.retryable) {
          this.log.warn('relayed call failed', { error: describeError(error) });
        }
        return rpcError(id, error);
    }
  }

  private enqueue(task: () => Promise<void>): void {
    this.queue = this.queue
      .then(task)
      .catch((error) => this.log.warn('relaying a target message failed', { error: describeError(error) }));
  }

  private async onServerRequest(serverRequest: JSONRPCRequest): Promise<void> {
    const { deps, loaded, target } = this.input;
    const upstream = this.upstream;
    if (!upstream) return;
    const params = serverRequest.params as Record<string, unknown> | undefined;
    // What the session's version allows of what the client declared (as declared to the target).
    const usable = capabilitiesForLegacyTarget(loaded.session.clientCapabilities, loaded.session.protocolVersion);
    const stream = !this.finished && clientAccepts(usable, serverRequest.method, params) ? this.stream() : undefined;
    if (!stream) {
      // Only declared capabilities are relayed; the target gets Method not found and should fall back.
      this.log.info('refused a server request the client cannot take', { serverMethod: serverRequest.method });
      await upstream.reply(rpcErrorOf(serverRequest.id, 'MethodNotFound', `Method not found: ${serverRequest.method}`));
      return;
    }
    const record = this.withHolder(
      newPendingRecord(deps.config.pendingRequestTimeoutSeconds, {
        kind: 'relayed',
        method: serverRequest.method,
        target,
        targetSessionId: upstream.session?.targetSessionId,
        targetRequestId: serverRequest.id,
        targetProtocolVersion: upstream.session?.protocolVersion,
        clientRequestId: this.input.request.id,
      }),
      upstream.era === 'legacy' && this.cursor.lastEventId !== undefined,
    );
    // On this call's own resumable stream the record is written with the event that asks it (one
    // BatchWriteItem, before the event is sent: relay/stream-log.ts); otherwise on its own.
    const log = stream.resumable ? this.streamLog : undefined;
    let recorded: Promise<boolean> = Promise.resolve(true);
    try {
      await this.checkPendingCap(1);
      if (log) recorded = new Promise<boolean>((resolve) => log.keepWithNext(record, resolve));
      else await deps.store.putPending(loaded.session, record);
    } catch (error) {
      if (error instanceof GatewayError && error.kind === 'TooManyPendingRequests') {
        this.log.warn('refused a server request: too many pending requests in the session');
        await upstream.reply(rpcError(serverRequest.id, error));
        return;
      }
      // Unrecorded, the client's answer could not be matched: refuse it at the target, which can fall back.
      this.log.warn('pending request not recorded; refused at the target', { error: describeError(error) });
      await upstream.reply(
        rpcErrorOf(serverRequest.id, 'Internal', 'Gateway could not relay the request; retry later'),
      );
      return;
    }
    this.trackRelayed(record.gatewayId, serverRequest.method, Date.now());
    // Not sent at all when its record could not be written (the client's answer could not be matched).
    stream.send({ ...serverRequest, id: record.gatewayId }, { unless: recorded.then((ok) => !ok) });
    // The lease and the holder's looks once the record exists (a look that finds none stops looking).
    void recorded.then(async (ok) => {
      if (ok) {
        this.lease.start();
        if (this.leased.has(record.gatewayId)) this.acknowledger.start();
        return;
      }
      // Unrecorded (its event was not sent), the client's answer could not be matched: refused at the target.
      this.log.warn('pending request not recorded; refused at the target');
      clearTimeout(this.relayed.get(record.gatewayId)?.timer);
      this.relayed.delete(record.gatewayId);
      this.leased.delete(record.gatewayId);
      await upstream
        .reply(rpcErrorOf(serverRequest.id, 'Internal', 'Gateway could not relay the request; retry later'))
        .catch((error) => this.log.warn('refusing an unrecorded request failed', { error: describeError(error) }));
    });
    recordRelayedInput(serverRequest.method);
    this.log.info('relayed a server request', {
      serverMethod: serverRequest.method,
      gatewayRequestId: record.gatewayId,
    });
    // The target now waits for the client: when its stream can be resumed, the call may be released.
    if (this.upstreamCallId !== undefined && this.upstream?.era === 'legacy') {
      await this.holdWaiting({
        kind: 'target-stream',
        requestId: this.upstreamCallId,
        lastEventId: this.cursor.lastEventId ?? '',
        targetSessionId: upstream.session?.targetSessionId,
      });
    }
  }

  /** A relayed request waiting for the client, with its pending timeout (from when it was sent). */
  private trackRelayed(gatewayId: string, method: string, askedAt: number): void {
    const timeoutMs = this.input.deps.config.pendingRequestTimeoutSeconds * 1000;
    const timer = setTimeout(
      () => void this.onPendingTimeout(gatewayId),
      Math.max(0, askedAt + timeoutMs - Date.now()),
    );
    timer.unref();
    this.relayed.set(gatewayId, { method, askedAt, timer });
  }

  private onNotification(notification: JSONRPCNotification): void {
    const message = this.progress.map(notification);
    if (message) this.stream()?.send(message);
  }

  /**
   * An answer recorded for this holder (relay/recorded-answer.ts): delivered to the target from here,
   * sent again while the target does not take it (until the call ends); refused, it ends the call.
   */
  private async deliverRecorded(record: PendingRecord): Promise<void> {
    const { gatewayId } = record;
    const entry = this.relayed.get(gatewayId);
    // A call being released is delivered by whoever takes it over (its record keeps the answer).
    if (!entry || this.finished || this.endReason || this.releasing || this.delivering.has(gatewayId)) return;
    this.delivering.add(gatewayId);
    const keys = { gatewayRequestId: gatewayId };
    const outcome = await deliverRecordedUntilTaken(
      this.input.deps.targets,
      record,
      this.input.loaded.session.protocolVersion,
      {
        signal: AbortSignal.any([this.upstreamAbort.signal, this.callOver.signal]),
        onFailedAttempt: (error) =>
          this.log.warn('delivering an answer to the target failed; sending it again', {
            ...keys,
            error: describeError(error),
          }),
      },
    ).finally(() => this.delivering.delete(gatewayId));
    if (outcome.kind === 'delivered') {
      clearTimeout(entry.timer);
      this.relayed.delete(gatewayId);
      this.delivered.push(gatewayId);
      recordAnsweredInput(entry.method);
      this.log.info('answer delivered', { ...keys, serverMethod: entry.method });
    } else if (outcome.kind === 'refused') {
      this.log.warn('the target refused an answer; the call is ended', {
        ...keys,
        error: describeError(outcome.error),
      });
      this.stop('answer-lost', 'gateway: an answer could not be delivered');
    }
  }

  /**
   * A pending request nobody answered in time ends the call with -32001 unless the target took an
   * answer (relay/pending-verdict.ts decides; shared with the bridge). The deadline bounds the looks.
   * An answer recorded for this holder that the target has not taken by then ends it too.
   */
  private async onPendingTimeout(gatewayId: string): Promise<void> {
    const entry = this.relayed.get(gatewayId);
    if (!entry || this.finished || this.endReason) return;
    if (this.delivering.has(gatewayId)) {
      this.log.info('pending request timed out: the target did not take its answer', { gatewayRequestId: gatewayId });
      recordExpiredInput(entry.method);
      this.stop('pending-timeout');
      return;
    }
    const verdict = await pendingTimeUp(this.input.deps.store, this.input.loaded.session.id, gatewayId);
    switch (verdict.kind) {
      case 'answered':
        return; // the target took the answer and carries on
      case 'undecided':
        if (verdict.error !== undefined) {
          this.log.warn('pending timeout undecided: DynamoDB failed; looking again', {
            error: describeError(verdict.error),
          });
        }
        entry.timer = setTimeout(() => void this.onPendingTimeout(gatewayId), verdict.afterMs);
        entry.timer.unref();
        return;
      case 'expired':
        this.log.info('pending request timed out', { gatewayRequestId: gatewayId });
        break;
      case 'gone':
        this.log.info('pending request timed out (its record is gone)', { gatewayRequestId: gatewayId });
        break;
    }
    recordExpiredInput(entry.method);
    this.stop('pending-timeout');
  }

  /**
   * The cap on pending requests per session: the count the call's own session read took (a soft
   * bound, stale by the call's duration) plus what this call asked since; a call that has no such
   * count (taken over by a reconnect) pays a Query.
   */
  private async checkPendingCap(adding: number): Promise<void> {
    const { deps, loaded } = this.input;
    const cap = deps.config.maxPendingRequestsPerSession;
    const count =
      loaded.pendingCount !== undefined && !this.input.resumed
        ? loaded.pendingCount + this.relayed.size + this.held.length + this.delivered.length
        : await deps.store.countPending(loaded.session.id, cap);
    if (count + adding > cap) {
      throw new GatewayError(
        'TooManyPendingRequests',
        `Too many pending requests in this session (${count} waiting for the client, at most ${cap}: maxPendingRequestsPerSession); answer or cancel some first`,
        { limit: cap },
      );
    }
  }

  /**
   * The waiting call's record is renewed with the holder lease (relay/holder-lease.ts), while it
   * holds the call and is not letting go of it.
   */
  private renewWaitingCall(): void {
    const step = this.currentStep();
    if (!this.waiting?.holding || !step || this.releasing) return;
    void this.waiting
      .renew(this.snapshot(step), this.out?.stream()?.nextSeq ?? 0)
      .catch((error) => this.log.warn('renewing the waiting call failed', { error: describeError(error) }));
  }

  /**
   * A client's cancellation that reached another instance leaves a marker; the target was told
   * there (if its session was known by then), but a target need not end the call's stream, so this
   * invocation looks for the marker while the call runs long (after 1 s, then every 2–5 s: a quick
   * call costs no read), and tells the target again when it stops (a repeat is ignored).
   */
  private watchForCancellation(delayMs = 1000): void {
    this.cancelWatch = setTimeout(() => {
      void this.cancelledElsewhere().then((marker) => {
        if (marker) this.stopFor(marker);
        else if (!this.finished && !this.endReason) this.watchForCancellation(Math.min(5000, delayMs + 1000));
      });
    }, delayMs);
    this.cancelWatch.unref();
  }

  private cancelledElsewhere(): Promise<CallEndReason | undefined> {
    const { deps, loaded } = this.input;
    return deps.store.isCancelled(loaded.session.id, this.upstreamId).catch(() => undefined);
  }

  /** A marker another instance wrote: the client cancelled, or the target refused an answer of this call. */
  private stopFor(marker: CallEndReason): void {
    if (marker === 'answer-undeliverable') this.stop('answer-lost', 'gateway: an answer could not be delivered');
    else this.stop('client-cancelled', 'gateway: the client cancelled the call');
  }

  /**
   * The client's connection closed. On a resumable stream that is not a cancellation: the call goes
   * on (bounded by the deadline and the pending timeout) and its events are kept for the reconnect.
   */
  clientGone(): void {
    if (this.finished || this.endReason) return;
    if (this.out?.resumable) {
      if (!this.clientLeft) this.log.info("the client's stream closed; the call goes on for its reconnect");
      this.clientLeft = true;
      // Nobody reads this stream any more: a call that can be released need not wait for the grace period.
      this.tryRelease('the client left its stream');
      return;
    }
    this.stop('client-gone');
  }

  /** Ends the call early: the target is told (by the upstream, on abort), the pending records go. */
  stop(reason: EndReason, abortReason: unknown = `gateway: ${reason}`): void {
    if (this.finished || this.endReason) return;
    // A release under way outlives the deadline by its last writes: cancelling now would end a call it hands on.
    if (reason === 'deadline' && this.releasing) return;
    this.endReason = reason;
    if (reason === 'client-cancelled') this.log.info('the client cancelled the call');
    else this.log.info('relayed call stopped', { reason });
    this.upstreamAbort.abort(abortReason);
  }

  /** The log of the stream this relay opened (records of relayed requests are written with their events). */
  private streamLog?: StreamLog;

  useStreamLog(log: StreamLog): StreamLog {
    this.streamLog = log;
    return log;
  }

  /** For the stream log this relay opens: the pending records its end removes (read when it ends). */
  removedWithTheEnd(): () => string[] {
    this.logRemovesPending = true;
    return () => this.goWithTheEnd ?? [];
  }

  private async cleanup(): Promise<void> {
    for (const { timer } of this.relayed.values()) clearTimeout(timer);
    await this.waiting
      ?.finish()
      .catch((error) => this.log.warn('removing the waiting call failed', { error: describeError(error) }));
    const ids = this.pendingIds();
    if (ids.length === 0) return;
    if (this.logRemovesPending && this.out?.resumable) {
      // The stream's end, kept right after this before the response is sent, removes them with the
      // same write (relay/stream-log.ts; on its own when that write fails).
      this.goWithTheEnd = ids;
      return;
    }
    // One request removes every pending record of this call, answered or not: a late answer then
    // finds nothing and gets -32600 instead of reaching a target that no longer waits.
    await this.input.deps.store
      .deletePending(this.input.loaded.session.id, ids)
      .catch((error) => this.log.warn('removing pending records failed', { error: describeError(error) }));
  }
}
