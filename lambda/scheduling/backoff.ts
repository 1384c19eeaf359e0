import { type Clock, sleep } from './clock';

/**
 * One way to wait between attempts, for every poll and retry of the gateway: `firstMs`, growing by
 * `factor` (1: a fixed interval) up to `maxMs`, never past `until`, cut short by `signal`, on an
 * injected clock. The callers differ only in what an attempt is and when it is final.
 */
export interface BackoffShape {
  firstMs: number;
  maxMs?: number;
  /** 2: doubling; 1 (default): every `firstMs`. */
  factor?: number;
}

export interface WaitBounds {
  /** Epoch ms after which no attempt starts (default: none). */
  until?: number;
  signal?: AbortSignal;
  /** The gateway's clock: the waits are on it. */
  clock: Clock;
}

/** The delays of one backoff, in order. */
export class Backoff {
  private delay: number;

  constructor(private readonly shape: BackoffShape) {
    this.delay = shape.firstMs;
  }

  /** Back to the first delay (progress was made). */
  reset(): void {
    this.delay = this.shape.firstMs;
  }

  next(): number {
    const delay = this.delay;
    this.delay = Math.min(this.shape.maxMs ?? Number.POSITIVE_INFINITY, delay * (this.shape.factor ?? 1));
    return delay;
  }
}

export type PollEnd = { ended: 'timeout' } | { ended: 'aborted' };

/**
 * Runs `attempt` until it returns a value (not undefined), then returns `{ value }`; between attempts
 * waits the backoff's next delay. Stops with `{ ended: 'aborted' }` when `signal` aborts and with
 * `{ ended: 'timeout' }` once `until` has passed (the last wait is cut to it, and one last attempt is made
 * at `until`). An attempt's own failure is the attempt's to handle (thrown, it ends the poll).
 */
export async function poll<T>(
  attempt: (index: number) => Promise<T | undefined>,
  shape: BackoffShape,
  bounds: WaitBounds,
): Promise<{ value: T } | PollEnd> {
  const { clock } = bounds;
  const until = bounds.until ?? Number.POSITIVE_INFINITY;
  const backoff = new Backoff(shape);
  for (let index = 0; ; index++) {
    if (bounds.signal?.aborted) return { ended: 'aborted' };
    const value = await attempt(index);
    if (value !== undefined) return { value };
    const left = until - clock.now();
    if (left <= 0) return { ended: 'timeout' };
    await sleep(clock, Math.min(backoff.next(), left), bounds.signal);
  }
}
