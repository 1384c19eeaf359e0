import { describeError } from '../observability/logger';
import type { CallState } from './call-state';
import { WaitingCall, type WaitingCallSnapshot, type WaitingStep } from './waiting-call';

/** How long before the invocation's deadline a resumable call is released rather than ended with -32001. */
export const RELEASE_BEFORE_DEADLINE_MS = 1500;
const DEADLINE_RELEASE_RETRY_MS = 200;

/** How long a reconnect that took a still-waiting call over holds it before letting go again. */
const RECONNECT_HOLD_MS = 200;

/**
 * Release while waiting (legacy/waiting-call.ts): a call that waits (for the client, or a target that
 * polls) is written down with where it stands, and — for a client trusted to resume, after the grace
 * period or when it left its stream; for any client, just before the invocation's deadline
 * (legacy/release-policy.ts) — this invocation lets go of it: the waits end, the target's stream is
 * detached, the record says released, and the client's reconnect goes on with it.
 */
export class CallRelease {
  /** The call's durable record once it waits, when its stream may be released (legacy/waiting-call.ts). */
  waiting?: WaitingCall;
  /** Where the call stands while it waits (what a release writes). */
  step?: WaitingStep;
  /** Stops reading the target's stream without cancelling (a release). */
  detach = new AbortController();
  /** Ends the waits for answers to its questions (a release). */
  releaseWaits = new AbortController();

  /** Whether a call still reading this target's stream may be let go of early (config `targets[].releaseCalls`). */
  private readonly targetStreamReleasable: boolean;

  constructor(private readonly call: CallState) {
    const { deps, target } = call.input;
    this.targetStreamReleasable = deps.config.targets.find((t) => t.name === target)?.releaseCalls !== false;
  }

  /** The release under way was the one just before the deadline (or at a shutdown). */
  private releasingAtDeadline = false;

  /**
   * The release could not be written: this invocation goes on holding the call, and tries again later
   * (a release just before the deadline soon, as its timer would have: else the deadline ends the call).
   */
  holdOn(): void {
    this.call.releasing = false;
    this.detach = new AbortController();
    this.releaseWaits = new AbortController();
    if (this.releasingAtDeadline) this.scheduleBeforeDeadline(DEADLINE_RELEASE_RETRY_MS);
    this.releasingAtDeadline = false;
    this.scheduleRelease();
  }

  /** The step a release writes: the question wait's, or the target stream's (from where it was read up to). */
  currentStep(): WaitingStep | undefined {
    if (this.step?.kind !== 'target-stream') return this.step;
    return this.call.cursor.lastEventId ? { ...this.step, lastEventId: this.call.cursor.lastEventId } : undefined;
  }

  snapshot(step: WaitingStep): WaitingCallSnapshot {
    const { target, request, params, confirm } = this.call.input;
    return {
      call: {
        target,
        method: request.method,
        clientRequestId: request.id,
        params,
        confirm,
        upstreamProgressToken: this.call.progress.targetToken,
      },
      step,
      relayed: [...this.call.relayed].map(([gatewayId, { method, askedAt }]) => ({ gatewayId, method, askedAt })),
      records: this.call.pendingIds(),
      leased: [...this.call.leased],
      release: this.call.release,
    };
  }

  /** The call now waits (for the client, or a target that polls): its record says where it stands. */
  async holdWaiting(step: WaitingStep): Promise<void> {
    this.step = step;
    const stream = this.call.out?.stream();
    const { decision } = this.call;
    if (!stream?.resumable || !(decision.early || decision.atDeadline)) return;
    if (!this.waiting) {
      const { deps, loaded } = this.call.input;
      const clock = this.call.holder.clock;
      this.waiting = new WaitingCall(
        deps.store,
        loaded.session.id,
        stream.streamId ?? '',
        () => Math.min(loaded.session.expiresAt, Math.floor(clock.now() / 1000) + deps.config.streamLogTtlSeconds),
        clock,
      );
    }
    const step2 = this.currentStep();
    if (!step2) return;
    try {
      await this.waiting.hold(this.snapshot(step2), stream.nextSeq);
    } catch (error) {
      // Without its record the call cannot be released (nor taken over): it is held, as before.
      this.call.log.warn('the waiting call was not recorded; it is held', { error: describeError(error) });
      return;
    }
    this.scheduleRelease();
  }

  /** After the grace period the call is released if it still waits (a client trusted to resume only). */
  private scheduleRelease(): void {
    if (!this.call.decision.early) return;
    // A reconnect that finds the call still waiting lets go again soon: its client polls (every `retry`),
    // and each look should cost a short invocation, not another grace period.
    const { afterMs } = this.call.policy;
    const holdMs = this.call.input.resumed ? Math.min(afterMs, RECONNECT_HOLD_MS) : afterMs;
    this.call.holder.timers.set('release', holdMs, () => this.tryRelease('waited past streamReleaseAfterSeconds'));
  }

  /** At `ms` from now, releaseBeforeDeadline() runs (as a task of the call). */
  scheduleBeforeDeadline(ms: number): void {
    this.call.holder.timers.set('before-deadline', ms, () =>
      this.call.holder.tasks.run('releasing the call before the deadline', () => this.releaseBeforeDeadline()),
    );
  }

  /**
   * The function is about to time out: a call that waits is released; so is a 2025 target's call
   * still running, when its stream can be resumed (it sent event ids). Otherwise the deadline ends it.
   */
  private async releaseBeforeDeadline(): Promise<void> {
    const { call } = this;
    if (!call.decision.atDeadline) return;
    await this.holdTargetStream();
    this.tryRelease('the invocation is about to time out', true);
    // Not releasable at this very moment (between two steps): look again until the deadline ends the call.
    if (
      !call.releasing &&
      !call.finished &&
      !call.endReason &&
      call.holder.clock.now() < call.input.exchange.deadline
    ) {
      this.scheduleBeforeDeadline(DEADLINE_RELEASE_RETRY_MS);
    }
  }

  /**
   * The environment is shutting down (SIGTERM): a call that can go on elsewhere is released as just before
   * the deadline, whatever the client is trusted to do (its stream would be cut anyway). True when the
   * release is under way; otherwise the caller ends the call.
   */
  async releaseForShutdown(): Promise<boolean> {
    const { call } = this;
    if (!call.decision.atDeadline) return false;
    await this.holdTargetStream();
    this.tryRelease('the environment is shutting down', true);
    return call.releasing;
  }

  /**
   * The target ended the call's stream before its response, to poll (SEP-1699): a client trusted to
   * resume is released with it, as it would be connected to the target directly; its reconnect (any
   * instance) reconnects to the target. Any other client's call stays here while this invocation
   * waits the target's `retry` and reconnects to it. Resolves once that is decided: the target is
   * reconnected to only then (else its response could be read here by a call being let go of, and
   * reach neither this stream nor the client's reconnect).
   */
  targetPolls(): Promise<void> | undefined {
    if (!this.call.decision.early) return undefined;
    return this.call.holder.tasks.run('releasing the call as its target polls', async () => {
      await this.call.queue; // what the target sent before it ended its stream reaches the client first
      await this.holdTargetStream();
      this.tryRelease('the target ended its stream (it polls)');
    });
  }

  /**
   * A 2025 target's call still running with a resumable stream (it sent event ids): its record says so
   * (a step of an earlier wait, a confirmation answered, no longer holds).
   */
  private async holdTargetStream(): Promise<void> {
    const { call } = this;
    const targetLink = call.targetLink;
    if (call.phase !== 'target' || targetLink?.era !== 'legacy' || !call.cursor.lastEventId) return;
    await this.holdWaiting({
      kind: 'target-stream',
      requestId: call.currentTargetCallId ?? call.targetCallId,
      lastEventId: call.cursor.lastEventId,
      targetSessionId: targetLink.session?.targetSessionId,
    });
  }

  /**
   * The `retry` a released stream ends with: the operator's, or the target's when it is longer and
   * the call waits for the target's stream (the reconnect goes to the target at once, so the client
   * waits what the target asked).
   */
  retryMs(): number {
    const own = this.call.policy.retryMs;
    return this.step?.kind === 'target-stream' ? Math.max(own, this.call.cursor.retryMs ?? 0) : own;
  }

  /**
   * Lets go of the call now when it can be resumed elsewhere: the waits end, the target's stream is
   * detached. Before the deadline (`atDeadline` false) only for a client trusted to resume.
   */
  tryRelease(why: string, atDeadline = false): void {
    const { call } = this;
    if (!(atDeadline ? call.decision.atDeadline : call.decision.early)) return;
    if (call.finished || call.endReason || call.releasing || !this.waiting?.holding) return;
    // An answer on its way to the target: what it does next is read by this invocation.
    if (call.delivering.size > 0) return;
    if (call.phase === 'target') {
      if (call.targetLink?.era !== 'legacy' || !call.cursor.lastEventId || this.step?.kind !== 'target-stream') return;
      if (!atDeadline && !this.targetStreamReleasable) return;
    } else if (call.phase !== 'question-wait') return;
    call.releasing = true;
    this.releasingAtDeadline = atDeadline;
    call.log.info('releasing the call', { reason: why });
    this.releaseWaits.abort();
    this.detach.abort();
  }

  /** The record says released, the pending records lose their holder lease; false when the record could not be written. */
  async writeRelease(step: WaitingStep): Promise<boolean> {
    const { deps, loaded } = this.call.input;
    const stream = this.call.out?.stream();
    if (!this.waiting || !stream) return false;
    try {
      if (!(await this.waiting.release(this.snapshot(step), stream.nextSeq))) return false;
    } catch (error) {
      this.call.log.warn('releasing the call failed', { error: describeError(error) });
      return false;
    }
    await deps.store.detachHolder(loaded.session.id, [...this.call.leased]).catch((error) =>
      // Their leases run out by themselves (HOLDER_LEASE_MS): until the reconnect renews them, answers wait.
      this.call.log.warn('detaching the holder from pending records failed', { error: describeError(error) }),
    );
    this.call.log.info('call released; the client reconnects for the rest', { step: step.kind });
    return true;
  }

  /**
   * The waiting call's record is renewed with the holder lease (pending/holder-lease.ts), while it
   * holds the call and is not letting go of it.
   */
  renewWaitingCall(): void {
    const step = this.currentStep();
    const waiting = this.waiting;
    if (!waiting?.holding || !step || this.call.releasing) return;
    this.call.holder.tasks.run('renewing the waiting call', () =>
      waiting.renew(this.snapshot(step), this.call.out?.stream()?.nextSeq ?? 0),
    );
  }

  /** The call is over: its record goes. */
  async finish(): Promise<void> {
    await this.waiting
      ?.finish()
      .catch((error) => this.call.log.warn('removing the waiting call failed', { error: describeError(error) }));
  }
}
