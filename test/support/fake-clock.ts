import { type Clock, systemClock } from '../../lambda/scheduling/clock';

/**
 * A clock the test moves (scheduling/clock.ts `Clock`): timers fire in order of when they are due, and
 * between two the promises they started settle (what they await of the memory store included), so a
 * holder's minutes of leases, looks and pending timeouts run in milliseconds. Starts at the real time
 * unless told otherwise (a memory store built without this clock reads Node's).
 */
export class FakeClock implements Clock {
  private time: number;
  private nextHandle = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();
  /** Every delay asked of the clock, in order (what a test of a backoff reads). */
  readonly delays: number[] = [];

  constructor(start = Date.now()) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const handle = ++this.nextHandle;
    this.delays.push(ms);
    this.timers.set(handle, { at: this.time + Math.max(0, ms), fn });
    return handle;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** How many timers are scheduled. */
  get scheduled(): number {
    return this.timers.size;
  }

  /** Moves the clock by `ms`, firing every timer due on the way (those they set too), each at its time. */
  /**
   * Moves the clock `stepMs` at a time until `work` settles, at most `maxMs` in all: what a test awaits
   * that comes after the gateway's own short waits (a stream's polls, a settle window), which it would
   * otherwise wait for forever on a clock nobody moves. Fails when `maxMs` passes first.
   */
  async advanceUntil<T>(work: Promise<T>, { stepMs = 10, maxMs = 60_000 } = {}): Promise<T> {
    let settled = false;
    const done = work.finally(() => {
      settled = true;
    });
    for (let moved = 0; !settled; moved += stepMs) {
      if (moved >= maxMs) throw new Error(`still waiting after ${maxMs} ms on the fake clock`);
      await this.advance(stepMs);
    }
    return done;
  }

  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    for (;;) {
      await settle();
      const next = this.due(until);
      if (!next) break;
      this.timers.delete(next.handle);
      this.time = Math.max(this.time, next.at);
      next.fn();
    }
    this.time = until;
    await settle();
  }

  private due(until: number): { handle: number; at: number; fn: () => void } | undefined {
    let found: { handle: number; at: number; fn: () => void } | undefined;
    for (const [handle, timer] of this.timers) {
      if (timer.at <= until && (!found || timer.at < found.at)) found = { handle, ...timer };
    }
    return found;
  }
}

/** Lets the promises already started settle (a few turns of the event loop: the memory store is async). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * Node's clock and timers, with its time `offsetMs()` ahead: a whole gateway process run on it crosses
 * a window (a confirmation's, a task id's) when the test moves the offset, instead of waiting.
 */
export function aheadClock(offsetMs: () => number): Clock {
  return { ...systemClock, now: () => Date.now() + offsetMs() };
}

/** A clock whose time the test sets (`now()` reads it), on Node's timers: for parts that only read the time. */
export function clockAt(now: () => number): Clock {
  return { ...systemClock, now };
}
