import { type ExchangeContext, requestAbortController } from '../http/exchange';
import type { Clock } from '../scheduling/clock';

/**
 * The one abort signal of a 2026-07-28 request: aborted when the invocation's deadline comes (one
 * timer, cleared when the request is done) or when the client goes away — unless the request no
 * longer follows the client (a bridged call holds its target's call after round 1 went out).
 * Instead of `AbortSignal.timeout` plus `AbortSignal.any` per request and per call, which cost a
 * timer that lives until the deadline and weakly held signal chains the GC must trace.
 */
export class RequestScope {
  readonly signal: AbortSignal;
  /** The client went away (or cancelled by closing the request) while the request followed it. */
  clientGone = false;
  private readonly controller = requestAbortController();
  private readonly timer: unknown;
  private followsClient = true;

  constructor(
    private readonly exchange: ExchangeContext,
    /** The gateway's clock: the deadline is on it, the timer set on it. */
    private readonly clock: Clock,
  ) {
    this.signal = this.controller.signal;
    this.timer = clock.setTimeout(
      () => this.controller.abort(new DOMException('the invocation ran out of time', 'TimeoutError')),
      Math.max(0, exchange.deadline - clock.now()),
    );
    exchange.signal.addEventListener('abort', this.onClientGone, { once: true });
    // Gone already (while the body was read, the caller authenticated): no later event would say so.
    if (exchange.signal.aborted) this.onClientGone();
  }

  /** The client's going away no longer ends the request. */
  detachFromClient(): void {
    this.followsClient = false;
  }

  /** Called when the client is gone (the platform's signal, or the response stream cancelled). */
  readonly onClientGone = (): void => {
    if (!this.followsClient || this.signal.aborted) return;
    this.clientGone = true;
    this.controller.abort('gateway: client closed the request');
  };

  /** The request is over: the timer and the listener go. */
  done(): void {
    this.clock.clearTimeout(this.timer);
    this.exchange.signal.removeEventListener('abort', this.onClientGone);
  }
}
