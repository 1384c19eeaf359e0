import type { AuthConfig } from '../config/schema';
import type { ExchangeContext } from '../core/exchange';
import { errorResponse } from '../core/http';
import type { GatewayLogger } from '../core/logger';
import { JwtAuthenticator, type JwtOptions } from './jwt';

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
 * const auth = createInboundAuth(config.auth, { logger });
 * const outcome = await auth.authenticate(request, exchange);
 * if (!outcome.ok) return outcome.response;
 */

export const ANONYMOUS = 'anonymous';

export type AuthOutcome = { ok: true; principal: string } | { ok: false; response: Response };

export interface InboundAuth {
  readonly type: AuthConfig['type'];
  /** Decides who the caller is, or answers the request (401/403/503) itself. */
  authenticate(request: Request, exchange: ExchangeContext): Promise<AuthOutcome>;
  /** The answer for an unauthenticated metadata path (`/.well-known/…`), or undefined when `url` is not one. */
  wellKnown(request: Request, url: URL): Promise<Response | undefined>;
}

export interface InboundAuthOptions {
  logger?: GatewayLogger;
  /** JWT settings (JWKS refetch cooldown, timeouts, clock tolerance). */
  jwt?: JwtOptions;
}

export function createInboundAuth(config: AuthConfig, options: InboundAuthOptions = {}): InboundAuth {
  switch (config.type) {
    case 'none':
      return {
        type: 'none',
        authenticate: async (_request, exchange) => ({ ok: true, principal: exchange.platformPrincipal ?? ANONYMOUS }),
        wellKnown: async () => undefined,
      };
    case 'iam':
      return {
        type: 'iam',
        authenticate: async (_request, exchange) =>
          exchange.platformPrincipal
            ? { ok: true, principal: exchange.platformPrincipal }
            : {
                ok: false,
                response: errorResponse(
                  401,
                  null,
                  AUTH_ERROR_CODE,
                  'Unauthorized: sign the request with SigV4 (the function URL uses AWS_IAM auth)',
                  undefined,
                  {
                    'www-authenticate': 'AWS4-HMAC-SHA256',
                  },
                ),
              },
        wellKnown: async () => undefined,
      };
    case 'jwt':
      return new JwtAuthenticator(config, { logger: options.logger, ...options.jwt });
  }
}

/** JSON-RPC code of authentication refusals (the HTTP status carries the meaning, as for 405). */
export const AUTH_ERROR_CODE = -32000;
