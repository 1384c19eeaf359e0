import { DeferredResponse } from '../http/deferred-response';
import { describeError } from '../observability/logger';
import { recordAnsweredInput } from '../observability/metrics';
import { DependencyFailedError, errorHeaders, httpStatusOf, rpcErrorOf } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { JSONRPCMessage, JSONRPCNotification, JSONRPCRequest, RequestId } from '../protocol/types';
import { hasStreamPolling } from '../protocol/versions';
import type { CallEndReason } from '../state/store';
import { StreamDetachedError } from '../targets/endpoint';
import { inputRequiredOf, MAX_INPUT_ROUNDS, retryParams } from '../targets/input-rounds';
import { callFailure } from './call-failure';
import { CallQuestions } from './call-questions';
import { CallRelease, RELEASE_BEFORE_DEADLINE_MS } from './call-release';
import { CallState, RELEASED, type RelayInput } from './call-state';
import { CancellationWatch } from './cancellation-watch';
import { type ReleasePolicy, releasePolicy } from './release-policy';
import { ServerRequests } from './server-requests';
import { openStreamLog, streamLogSettings } from './stream-log';
import type { WaitingStep } from './waiting-call';

export type { RelayInput } from './call-state';

/** A relayed call still running after this long answers as a stream, so keep-alives can flow. */
const STREAM_AFTER_MS = 1000;

type RunOutcome = { message: JSONRPCMessage; error?: unknown; silent?: boolean } | { released: true };

/**
 * Relays one client request of a 2025 session (tools/call, prompts/get, resources/read,
 * completion/complete) to its target and streams back everything the target sends for it:
 * - a gateway confirmation first, when policy asks for one (confirmTools);
 * - the target's server-to-client requests with gateway ids, each recorded as pending in DynamoDB
 *   first, so the client's answer can reach the target from any instance;
 * - a 2026-07-28 target's input_required rounds, asked as questions and retried at the target;
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
  const { deps, loaded } = input;
  // Decided once for the call (CallState.decision); a takeover (legacy/resume.ts) decides for the
  // client that just resumed.
  const relay = new Relay(input, releasePolicy(deps.config));
  const out = new DeferredResponse({
    existing: input.resumed?.stream,
    accept: input.accept,
    headers: input.responseHeaders,
    keepAliveMs: deps.keepAliveMs,
    stalledClientMs: deps.config.stalledClientTimeoutSeconds * 1000,
    streamAfterMs: Math.min(STREAM_AFTER_MS, deps.keepAliveMs),
    onClientGone: () => relay.clientGone(),
    eventLog: hasStreamPolling(loaded.session.protocolVersion)
      ? () =>
          relay.call.useStreamLog(
            openStreamLog(deps.store, loaded.session, streamLogSettings(deps.config, deps.clock), deps.logger, {
              deadline: input.exchange.deadline,
              removeAtEnd: relay.call.removedWithTheEnd(),
              requestId: input.request.id,
            }),
          )
      : undefined,
    // Only a client trusted to resume gets a priming event (legacy/release-policy.ts).
    prime: () => relay.call.decision.prime,
  });
  const done = relay.run(out).then(async (outcome) => {
    if ('released' in outcome) {
      // Not the stream's end: the client reconnects after `retry` and the call goes on there.
      out.hangUp(relay.retryMs());
    } else {
      const { message, error, silent } = outcome;
      // A call the client cancelled gets no response on its stream (the spec: the receiver SHOULD NOT send one).
      if (silent && out.streaming) out.end();
      else out.finish(message, error ? httpStatusOf(error) : 200, error ? errorHeaders(error) : {});
    }
    // A resumable stream keeps its end before writing it: done (what a shutdown waits for) once it is written.
    await out.flushed();
    relay.markDone();
    // The call's last step here: its records removed, its response written (nothing of it runs on).
    relay.call.log.debug('relayed call wound down', { end: endOf(outcome, relay.call.endReason) });
  });
  return { response: out.response, done };
}

/** How this invocation's part of the call ended: released, answered, failed, or why the gateway ended it. */
function endOf(outcome: RunOutcome, endReason: CallEndReason | undefined): string {
  if ('released' in outcome) return 'released';
  return endReason ?? (outcome.error ? 'failed' : 'answered');
}

/**
 * One relayed call, run by its parts: the shared state (legacy/call-state.ts), release while waiting
 * (legacy/call-release.ts), the gateway's own questions (legacy/call-questions.ts), the target's
 * requests and notifications (legacy/server-requests.ts), the cancellation watch
 * (legacy/cancellation-watch.ts) and the failure's message (legacy/call-failure.ts). This class calls
 * the target, runs the input rounds, and ends the call: every timer closed, every background task
 * drained, then the records removed.
 */
class Relay {
  readonly call: CallState;
  private readonly release: CallRelease;
  private readonly serverRequests: ServerRequests;
  private readonly questions: CallQuestions;
  private readonly cancellation: CancellationWatch;
  /** The client's connection to a resumable stream closed (the call went on). */
  private clientLeft = false;
  /** The client was told at a shutdown, before the call unwound (answerAtShutdown). */
  private answeredAtShutdown = false;
  /** Resolved once the call is over: records removed and the client's response finished. */
  readonly markDone: () => void;
  /** The `retry` a released stream ends with. */
  readonly retryMs = () => this.release.retryMs();
  private readonly done: Promise<void>;

  constructor(
    private readonly input: RelayInput,
    policy: ReleasePolicy,
  ) {
    let resolve!: () => void;
    this.done = new Promise<void>((r) => {
      resolve = r;
    });
    this.markDone = resolve;
    this.call = new CallState(
      input,
      policy,
      () => this.release.renewWaitingCall(),
      (record) =>
        this.call.holder.tasks.run('delivering a recorded answer', () => this.serverRequests.deliverRecorded(record)),
    );
    this.release = new CallRelease(this.call);
    this.serverRequests = new ServerRequests(this.call, this.release);
    this.questions = new CallQuestions(this.call, this.release, this.serverRequests);
    this.cancellation = new CancellationWatch(this.call);
    const resumed = input.resumed;
    if (resumed) {
      this.release.waiting = resumed.waiting;
      const { step } = resumed.snapshot;
      if (step.kind === 'target-stream') this.call.cursor.lastEventId = step.lastEventId;
      const relayedIds = new Set(resumed.snapshot.relayed.map((r) => r.gatewayId));
      this.call.questions.push(...resumed.snapshot.records.filter((id) => !relayedIds.has(id)));
      for (const request of resumed.snapshot.relayed) {
        this.serverRequests.trackRelayed(request.gatewayId, request.method, request.askedAt);
        this.call.stored.add(request.gatewayId);
      }
      for (const id of resumed.snapshot.leased) this.call.leased.add(id);
    }
  }

  async run(out: DeferredResponse): Promise<RunOutcome> {
    const { call } = this;
    call.out = out;
    const { exchange, loaded } = this.input;
    const onClientGone = () => this.clientGone();
    exchange.signal.addEventListener('abort', onClientGone, { once: true });
    const now = call.holder.clock.now();
    call.holder.timers.set('deadline', exchange.deadline - now, () => call.stop('deadline'));
    // A call that can be resumed is released just before the deadline instead (the function timeout is no limit).
    this.release.scheduleBeforeDeadline(exchange.deadline - RELEASE_BEFORE_DEADLINE_MS - now);
    if (this.input.resumed) {
      call.holder.asked(call.leased.size > 0);
      // Records asked before the call could be taken over lost their holder lease at its release: held again.
      if (call.leased.size > 0) await call.holder.lease.renewNow();
      // An answer recorded for the previous holder just before it let go (pending/recorded-answer.ts) is
      // found by no other look: this invocation delivers it.
      call.holder.tasks.run('delivering answers recorded before the release', () =>
        this.serverRequests.deliverRecordedBeforeTakeover(),
      );
    }
    // Started before its session's read returned, and the session is gone: stopped as a cancelled call is
    // (the target is told; no response follows the 404), also on a resumable stream.
    this.input.sessionRead?.catch(() => call.stop('client-cancelled', 'gateway: the session is gone'));
    const unregister = this.input.deps.activeCalls.register(loaded.session.id, call.targetCallId, {
      cancelByClient: (reason) => call.stop('client-cancelled', reason ?? 'gateway: client cancelled'),
      shutdown: async () => {
        // Released, the call goes on on another environment when its client reconnects; else it ends here.
        const released = await this.release.releaseForShutdown().catch(() => false);
        if (!released) {
          call.stop('shutdown', 'gateway: shutting down');
          this.answerAtShutdown();
        }
        return this.done;
      },
    });
    let outcome: RunOutcome;
    try {
      outcome = await this.forwardUntilReleased(this.input.resumed?.snapshot.step);
    } catch (error) {
      // A stream that ended without a response may be the target honouring a cancellation sent from another instance.
      if (!call.endReason && error instanceof DependencyFailedError) {
        const marker = await this.cancellation.cancelledElsewhere();
        if (marker) this.cancellation.stopFor(marker);
      }
      outcome = {
        message: callFailure(this.input.request.id, call.endReason, error, call.log),
        error: call.endReason ? undefined : error,
      };
      if (call.endReason === 'client-cancelled') outcome.silent = true;
    }
    // What the target sent before its response (queued behind earlier records) reaches the client
    // first: the stream stays usable until the queue has drained, then the call is over.
    await call.queue;
    call.finished = true;
    unregister();
    call.callOver.abort();
    // The lease, the looks, the deadline, the release, the cancellation watch and every pending
    // timeout: none fires any more.
    call.holder.halt();
    exchange.signal.removeEventListener('abort', onClientGone);
    await call.queue; // a server request that slipped in meanwhile is refused (finished) before cleanup
    // A look or a renewal still under way ends before the records go: nothing of the call outlives it.
    await call.holder.drain();
    if ('released' in outcome) return outcome;
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
      await this.call.queue; // what the target sent before the release reaches the client (and the log) first
      const step = this.release.currentStep();
      if (step && (await this.release.writeRelease(step))) return { released: true };
      this.call.log.warn('the call could not be released; this invocation goes on holding it');
      from = step;
      this.release.holdOn();
    }
  }

  private async forward(from: WaitingStep | undefined): Promise<JSONRPCMessage | typeof RELEASED> {
    const { call } = this;
    const { deps, request, target, caller } = this.input;
    if (this.input.confirm && (!from || from.kind === 'confirm')) {
      // The gateway's own question goes to the client: not before the session's read (read-ahead).
      await this.input.sessionRead?.catch(() => undefined);
      const refusal = await this.questions.confirm(
        this.input.confirm,
        from?.kind === 'confirm' ? from.request : undefined,
      );
      if (refusal) return refusal;
      from = undefined;
    }
    if (!from || from.kind === 'connect') {
      const refusal = await this.questions.connect(from?.kind === 'connect' ? from : undefined);
      if (refusal) return refusal;
      from = undefined;
    }
    const signal = call.targetAbort.signal;
    const targetLink = call.targetLink ?? (await deps.targets.open(target, caller, signal));
    call.targetLink = targetLink;
    const options = {
      signal,
      cursor: call.cursor,
      detach: this.release.detach.signal,
      progressToken: call.progress.targetToken,
      onServerRequest: (serverRequest: JSONRPCRequest) =>
        call.enqueue(() => this.serverRequests.onServerRequest(serverRequest)),
      onNotification: (notification: JSONRPCNotification) =>
        call.enqueue(async () => this.serverRequests.onNotification(notification)),
      // The target's stream is not read while the client's is full (the relay's queue is drained first).
      backpressure: () => call.out?.room(),
      onTargetPolls: () => this.release.targetPolls(),
    };
    this.cancellation.start();
    const callTarget = async (id: RequestId, params: Record<string, unknown>, resumeFrom?: string) => {
      call.phase = 'target';
      call.currentTargetCallId = id;
      try {
        const targetSessionId =
          from?.kind === 'target-stream' ? from.targetSessionId : targetLink.session?.targetSessionId;
        return await targetLink.call(
          { id, method: request.method, params },
          {
            ...options,
            resumeFrom: resumeFrom === undefined ? undefined : { lastEventId: resumeFrom, targetSessionId },
          },
        );
      } catch (error) {
        if (error instanceof StreamDetachedError && call.releasing) return RELEASED;
        throw error;
      } finally {
        call.phase = 'other';
      }
    };
    let response: JSONRPCResponse | typeof RELEASED;
    let firstRound = 1;
    if (from?.kind === 'input') {
      // Taken over in an input round: its answers (awaited here if not yet there), then the target's retry.
      const collected = await this.questions.awaitInput(from);
      if (collected === RELEASED || !('responses' in collected)) return collected;
      if (Object.keys(collected.responses).length) recordAnsweredInput('mrtr-retry');
      const params = retryParams(this.input.params, collected.responses, from.requestState);
      response = await callTarget(`${call.targetCallId}.r${from.round}`, params);
      firstRound = from.round + 1;
    } else if (from?.kind === 'target-stream') {
      this.release.step = from;
      response = await callTarget(from.requestId, this.input.params, from.lastEventId);
    } else {
      response = await callTarget(call.targetCallId, this.input.params);
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
      const collected = await this.questions.collectInput(
        Object.entries(inputRequired.inputRequests),
        round,
        inputRequired.requestState,
      );
      if (collected === RELEASED || !('responses' in collected)) return collected;
      if (Object.keys(collected.responses).length) recordAnsweredInput('mrtr-retry');
      const params = retryParams(this.input.params, collected.responses, inputRequired.requestState);
      response = await callTarget(`${call.targetCallId}.r${round}`, params);
    }
    return { ...response, id: request.id };
  }

  /**
   * The client's connection closed. On a resumable stream that is not a cancellation: the call goes
   * on (bounded by the deadline and the pending timeout) and its events are kept for the reconnect.
   */
  clientGone(): void {
    const { call } = this;
    if (call.finished || call.endReason) return;
    if (call.out?.resumable) {
      if (!this.clientLeft) call.log.info("the client's stream closed; the call goes on for its reconnect");
      this.clientLeft = true;
      // Nobody reads this stream any more: a call that can be released need not wait for the grace period.
      this.release.tryRelease('the client left its stream');
      return;
    }
    call.stop('client-gone');
  }

  /**
   * A shutdown leaves about a second (SIGTERM to the kill): the client is told now, once what the
   * target sent before has reached it, while the call unwinds at the target (its stream's abort, slow
   * on a starved CPU) and its records are removed (cleanup, with what is left of the second).
   */
  private answerAtShutdown(): void {
    const { call } = this;
    const out = call.out;
    if (!out || call.finished) return;
    this.answeredAtShutdown = true;
    void call.queue.then(() => out.finish(callFailure(this.input.request.id, 'shutdown', undefined, call.log)));
  }

  private async cleanup(): Promise<void> {
    await this.release.finish();
    const ids = this.call.pendingIds();
    if (ids.length === 0) return;
    // The stream's end already written (a shutdown's early answer) took no records with it.
    if (this.call.logRemovesPending && this.call.out?.resumable && !this.answeredAtShutdown) {
      // The stream's end, kept right after this before the response is sent, removes them with the
      // same write (legacy/stream-log.ts; on its own when that write fails).
      this.call.goWithTheEnd = ids;
      return;
    }
    // One request removes every pending record of this call, answered or not: a late answer then
    // finds nothing and gets -32600 instead of reaching a target that no longer waits.
    await this.input.deps.store
      .deletePending(this.input.loaded.session.id, ids)
      .catch((error) => this.call.log.warn('removing pending records failed', { error: describeError(error) }));
  }
}
