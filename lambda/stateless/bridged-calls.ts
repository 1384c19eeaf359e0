import { GatewayError } from '../protocol/errors';

/**
 * The bridged calls this instance holds, per principal. Each keeps a target stream (and a client
 * stream) open until the call ends or its round is abandoned, so one caller's abandoned rounds are
 * bounded (`maxBridgedCallsPerPrincipal`). A Lambda execution environment runs one invocation at a
 * time, so there the count is per environment and the function's concurrency bounds the rest.
 */
export class BridgedCalls {
  private readonly open = new Map<string, number>();

  constructor(private readonly maxPerPrincipal: number) {}

  /** A slot for one more bridged call of `principal` (its release function), or TooManyBridgedCalls. */
  acquire(principal: string): () => void {
    const count = this.open.get(principal) ?? 0;
    if (count >= this.maxPerPrincipal) {
      throw new GatewayError(
        'TooManyBridgedCalls',
        `Too many calls waiting for input: ${count} of this caller's calls to 2025 targets are waiting for answers on this gateway instance (at most ${this.maxPerPrincipal}: maxBridgedCallsPerPrincipal); answer or abandon some first`,
        { limit: this.maxPerPrincipal },
      );
    }
    this.open.set(principal, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(principal) ?? 1) - 1;
      if (left > 0) this.open.set(principal, left);
      else this.open.delete(principal);
    };
  }

  /** Bridged calls held now, all principals (tests, the startup report). */
  get size(): number {
    let total = 0;
    for (const count of this.open.values()) total += count;
    return total;
  }
}
