/**
 * What schedules a timer: Node's timers (unref'd, so a timer alone never keeps a local process up), or
 * a test's own clock. Injected so focused tests can fire timers in order without waiting.
 */
export interface Scheduler {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const nodeScheduler: Scheduler = {
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * The timers of one owner (a relayed call, a bridged call, a session's standalone streams, a claim
 * acknowledger), each by name: setting a name again replaces its timer, so no owner tracks handles by
 * hand, and closing clears them all at once. After close() nothing is scheduled any more: on Lambda
 * nothing of a call may fire after its response ended (the environment is frozen, or serves another
 * request), and a late set() from a task still finishing is dropped instead of outliving the owner.
 */
export class CallTimers {
  private readonly timers = new Map<string, unknown>();
  private closed = false;

  constructor(private readonly scheduler: Scheduler) {}

  /** Runs `fn` after `ms` (at once when negative), replacing any timer of that name. */
  set(name: string, ms: number, fn: () => void): void {
    this.clear(name);
    if (this.closed) return;
    const handle = this.scheduler.setTimeout(
      () => {
        if (this.timers.get(name) !== handle) return; // replaced or cleared meanwhile
        this.timers.delete(name);
        fn();
      },
      Math.max(0, ms),
    );
    this.timers.set(name, handle);
  }

  clear(name: string): void {
    const handle = this.timers.get(name);
    if (handle === undefined) return;
    this.timers.delete(name);
    this.scheduler.clearTimeout(handle);
  }

  /** Clears every timer whose name starts with `prefix` (one family, e.g. every pending timeout). */
  clearPrefixed(prefix: string): void {
    for (const name of [...this.timers.keys()]) if (name.startsWith(prefix)) this.clear(name);
  }

  clearAll(): void {
    for (const name of [...this.timers.keys()]) this.clear(name);
  }

  /** Clears every timer; later set() calls schedule nothing. */
  close(): void {
    this.closed = true;
    this.clearAll();
  }

  has(name: string): boolean {
    return this.timers.has(name);
  }

  /** How many timers are scheduled. */
  get size(): number {
    return this.timers.size;
  }
}
