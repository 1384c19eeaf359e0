import { GatewayError } from '../protocol/errors';

/**
 * The open listens of each principal in this instance (`maxListensPerPrincipal`). In memory, because
 * the 2026-07-28 path stores nothing: a listen holds this instance's stream (a function URL's
 * environment serves one request at a time, so there the bound is the invocation itself; a Web
 * Function's environment serves many, and this bounds one caller's share of it).
 */
export class ListenPlaces {
  private readonly open = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Takes a place for `principal`; the function gives it back (once). Throws TooManyListens (429). */
  take(principal: string): () => void {
    const count = this.open.get(principal) ?? 0;
    if (count >= this.max) {
      throw new GatewayError(
        'TooManyListens',
        `Too many listens: this caller already has ${this.max} subscriptions/listen streams open on this gateway instance (maxListensPerPrincipal); close one first`,
        { limit: this.max },
      );
    }
    this.open.set(principal, count + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.open.get(principal) ?? 1) - 1;
      if (left > 0) this.open.set(principal, left);
      else this.open.delete(principal);
    };
  }
}
