/**
 * The timeout of one request to a target: an abort signal that fires `ms` after the clock was last
 * started. `touch` starts it again (the target sent something); `hold` stops it until the next
 * `touch` (the gateway, not the target, is what is waited for: a person answering, a full client stream).
 * A touch per chunk only notes the time; the one timer re-arms itself for what is left when it fires.
 */
export class TargetClock {
  private readonly controller = new AbortController();
  private timer?: NodeJS.Timeout;
  private startedAt = 0;
  private stopped = false;

  constructor(readonly ms: number) {
    this.touch();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Whether the time ran out (the signal aborted for it). */
  get expired(): boolean {
    return this.controller.signal.aborted;
  }

  touch(): void {
    if (this.stopped || this.expired) return;
    this.startedAt = performance.now();
    if (!this.timer) this.arm(this.ms);
  }

  hold(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  stop(): void {
    this.stopped = true;
    this.hold();
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const left = this.startedAt + this.ms - performance.now();
      if (left > 1) this.arm(left);
      else this.controller.abort(Object.assign(new Error(`no answer within ${this.ms} ms`), { name: 'TimeoutError' }));
    }, ms);
    this.timer.unref();
  }
}
