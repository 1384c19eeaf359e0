import type { AuthConfig } from '../config/schema';
import type { ExchangeContext, ExchangeRequest } from '../http/exchange';
import type { CallerIdentity } from './identity';

/**
 * Who is calling: the identity (what policy reads) and its principal string (what state is bound to,
 * `principalOf(identity)`), or the answer (401/403/503) that refuses the request.
 */
export type AuthOutcome = { ok: true; principal: string; identity: CallerIdentity } | { ok: false; response: Response };

export interface InboundAuth {
  readonly type: AuthConfig['type'];
  /** Decides who the caller is, or answers the request (401/403/503) itself. */
  authenticate(request: ExchangeRequest, exchange: ExchangeContext): Promise<AuthOutcome>;
  /** The answer for an unauthenticated metadata path (`/.well-known/…`), or undefined when `url` is not one. */
  wellKnown(request: ExchangeRequest, url: URL): Promise<Response | undefined>;
}
