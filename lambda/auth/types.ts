import type { AuthConfig } from '../config/schema';
import type { ExchangeContext, ExchangeRequest } from '../http/exchange';

/** Who is calling: a principal, or the answer (401/403/503) that refuses the request. */
export type AuthOutcome = { ok: true; principal: string } | { ok: false; response: Response };

export interface InboundAuth {
  readonly type: AuthConfig['type'];
  /** Decides who the caller is, or answers the request (401/403/503) itself. */
  authenticate(request: ExchangeRequest, exchange: ExchangeContext): Promise<AuthOutcome>;
  /** The answer for an unauthenticated metadata path (`/.well-known/…`), or undefined when `url` is not one. */
  wellKnown(request: ExchangeRequest, url: URL): Promise<Response | undefined>;
}
