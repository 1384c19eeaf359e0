import type { AuthConfig } from '../config/schema';
import { refuse } from '../http/errors';
import type { GatewayLogger } from '../observability/logger';
import type { Clock } from '../scheduling/clock';
import { platformIdentity, principalOf } from './identity';
import { JwtAuthenticator, type JwtOptions } from './jwt';
import type { InboundAuth } from './types';

/**
 * Inbound authentication: who is calling. The core asks once per request, before any protocol
 * logic, and binds everything the caller creates (2025 sessions, pending requests, sealed 2026
 * requestState) to the principal it gets back.
 *
 * - `none`: the function URL's IAM caller when there is one, else `anonymous`.
 * - `jwt`: a Bearer access token, verified against the issuer's keys (see ./jwt.ts); principal
 *   `<iss>#<sub>`. Serves the RFC 9728 protected resource metadata.
 * - `iam`: the function URL's AWS_IAM auth (SigV4, verified by Lambda before we run); principal =
 *   the caller's IAM ARN. A request without it (a URL misconfigured as NONE, the local server) → 401.
 *
 * @example
 * const auth = createInboundAuth(config.auth, { logger, clock });
 * const outcome = await auth.authenticate(request, exchange);
 * if (!outcome.ok) return outcome.response;
 */

export { ANONYMOUS } from './identity';

export type { AuthOutcome, InboundAuth } from './types';

export interface InboundAuthOptions {
  logger?: GatewayLogger;
  /** The gateway's clock (JWT expiry, discovery retry, key set age). */
  clock: Clock;
  /** JWT settings (JWKS refetch cooldown, timeouts, clock tolerance). */
  jwt?: JwtOptions;
}

export function createInboundAuth(config: AuthConfig, options: InboundAuthOptions): InboundAuth {
  switch (config.type) {
    case 'none':
      return {
        type: 'none',
        authenticate: async (_request, exchange) => {
          const identity = platformIdentity(exchange.platformPrincipal);
          return { ok: true, principal: principalOf(identity), identity };
        },
        wellKnown: async () => undefined,
      };
    case 'iam':
      return {
        type: 'iam',
        authenticate: async (_request, exchange) =>
          exchange.platformPrincipal
            ? {
                ok: true,
                principal: exchange.platformPrincipal,
                identity: platformIdentity(exchange.platformPrincipal),
              }
            : {
                ok: false,
                response: refuse(
                  'Unauthorized',
                  'Unauthorized: sign the request with SigV4 (the function URL uses AWS_IAM auth)',
                  { headers: { 'www-authenticate': 'AWS4-HMAC-SHA256' } },
                ),
              },
        wellKnown: async () => undefined,
      };
    case 'jwt':
      return new JwtAuthenticator(config, options.clock, { logger: options.logger, ...options.jwt });
  }
}
