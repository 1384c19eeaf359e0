import { nodeScheduler, type Scheduler } from './call-timers';

/**
 * What the protocol's waits read the time from and schedule on: Node's clock and timers, or a test's
 * fake clock. Every holder, lease, look and backoff takes one, so their focused tests advance time
 * instead of waiting for it.
 */
export interface Clock extends Scheduler {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { ...nodeScheduler, now: () => Date.now() };

/** Waits `ms` on `clock`, or less when `signal` aborts; never rejects (a poller looks at the signal afterwards). */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clock.clearTimeout(handle);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const handle = clock.setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Waits for `work`, at most `ms` on `clock` (what a slow part must not hold up: the call goes on, the
 * stream answers). Rejects only when `work` does first; the timer is cleared either way.
 */
export async function waitAtMost(clock: Clock, work: Promise<unknown>, ms: number): Promise<void> {
  let handle: unknown;
  const timeUp = new Promise<void>((resolve) => {
    handle = clock.setTimeout(resolve, Math.max(0, ms));
  });
  try {
    await Promise.race([work, timeUp]);
  } finally {
    clock.clearTimeout(handle);
  }
}
