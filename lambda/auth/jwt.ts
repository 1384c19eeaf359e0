import type { JWTPayload, JWTVerifyGetKey } from 'jose';
import type { AuthConfig } from '../config/schema';
import { isLoopbackHost } from '../config/schema';
import { methodNotAllowed, refuse } from '../http/errors';
import type { ExchangeRequest } from '../http/exchange';
import { MCP_PATH, METADATA_PATH } from '../http/paths';
import { jsonResponse } from '../http/responses';
import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import type { Clock } from '../scheduling/clock';
import { type CallerIdentity, principalOf } from './identity';
import type { AuthOutcome, InboundAuth } from './types';

/**
 * `auth.type: "jwt"`: the gateway as an OAuth 2.1 resource server (MCP basic/authorization).
 *
 * - The issuer and its `jwks_uri` come from the configured OpenID discovery document, fetched once
 *   and kept for the life of the process (a failed fetch is retried after a short pause).
 * - Keys come from the JWKS through jose's remote key set: cached (re-read after `jwksMaxAgeMs`),
 *   and a token whose `kid` is unknown triggers one refetch, at most once per `jwksCooldownMs`, so a
 *   rotated-in key is found without letting random `kid`s hammer the issuer. Both are timed on the
 *   gateway's clock (jose's own timing reads Node's, so it is told never to refetch by itself).
 * - A token is accepted when its signature verifies with an asymmetric algorithm, `iss` is the
 *   issuer, `exp` is in the future (`clockToleranceSeconds`), it has a `sub`, and the configured lists
 *   match: `aud` (any listed audience), `client_id`/`azp` (a listed client), `scope`/`scp` (at least
 *   one listed scope). Principal: `<iss>#<sub>`.
 * - Refusals (RFC 6750 §3, MCP authorization "Error Handling"): no token → 401 with
 *   `WWW-Authenticate: Bearer resource_metadata="…"`; a bad, expired, foreign-issuer or
 *   foreign-audience token → 401 `error="invalid_token"`; a valid token of a client not allowed →
 *   403; no allowed scope → 403 `error="insufficient_scope", scope="…"`. Issuer or JWKS unreachable →
 *   503 with Retry-After (the token may be fine).
 * - Tokens are never logged; refusals log a reason code only.
 */

export interface JwtOptions {
  /** Minimum time between two JWKS fetches caused by unknown `kid`s (default 30 s). */
  jwksCooldownMs?: number;
  /** How long fetched keys are used before the JWKS is read again (default 10 min). */
  jwksMaxAgeMs?: number;
  /** Timeout of the discovery and JWKS requests (default 5 s). */
  timeoutMs?: number;
  /** Allowed clock skew for `exp`/`nbf`/`iat` (default 30 s). */
  clockToleranceSeconds?: number;
  /** Pause after a failed discovery fetch before trying again (default 5 s). */
  discoveryRetryMs?: number;
  /**
   * While the JWKS cannot be fetched (issuer down, timeout), the last key set fetched is still used
   * for this long after it was last known good (default 1 h): an issuer outage longer than the cache
   * does not lock out valid tokens. A kid it does not know is still 503 (it may be a new key).
   */
  jwksStaleMs?: number;
  logger?: GatewayLogger;
  /**
   * The outbound policy's fetch (../outbound/) for the discovery document and the key set it names
   * (the issuer chooses `jwks_uri`); default the global fetch.
   */
  fetch?: typeof fetch;
}

type JwtConfig = Extract<AuthConfig, { type: 'jwt' }>;

/** Signature algorithms accepted: asymmetric only (an HMAC or `none` token can never verify). */
const ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

/** jose error codes that mean "this token is not acceptable" (401) rather than "we could not check" (503). */
const TOKEN_FAULTS: Record<string, string> = {
  ERR_JWT_EXPIRED: 'the token has expired',
  ERR_JWT_CLAIM_VALIDATION_FAILED: 'a claim of the token is not acceptable',
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'the token signature is invalid',
  ERR_JWS_INVALID: 'the token is malformed',
  ERR_JWT_INVALID: 'the token is malformed',
  ERR_JWKS_NO_MATCHING_KEY: 'the token was not signed by a key of the issuer',
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: 'the token names no unique key of the issuer',
  ERR_JOSE_ALG_NOT_ALLOWED: 'the token signature algorithm is not accepted',
  ERR_JOSE_NOT_SUPPORTED: 'the token uses an unsupported algorithm',
};

interface Issuer {
  issuer: string;
  keys: JWTVerifyGetKey;
}

export class JwtAuthenticator implements InboundAuth {
  readonly type = 'jwt' as const;
  private issuer?: Promise<Issuer>;
  private issuerFailedAt = 0;
  private readonly timeoutMs: number;

  constructor(
    private readonly config: JwtConfig,
    /** The gateway's clock: a token's `exp`/`nbf`, the discovery retry and the key set's age are read by it. */
    private readonly clock: Clock,
    private readonly options: JwtOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 5_000;
    if (!config.allowedAudiences?.length) {
      options.logger?.warn(
        'auth.allowedAudiences is empty: the audience of tokens is not checked, so tokens issued for other resources are accepted',
      );
    }
  }

  async authenticate(request: ExchangeRequest): Promise<AuthOutcome> {
    const url = new URL(request.url);
    const token = bearerToken(request.headers.get('authorization'));
    if (token === undefined) return { ok: false, response: this.challenge(url, 401, 'missing') };

    let issuer: Issuer;
    try {
      issuer = await this.loadIssuer();
    } catch (error) {
      return { ok: false, response: this.unavailable(error) };
    }
    const { jwtVerify } = await import('jose');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, issuer.keys, {
        issuer: issuer.issuer,
        audience: this.config.allowedAudiences?.length ? this.config.allowedAudiences : undefined,
        algorithms: ALGORITHMS,
        clockTolerance: this.options.clockToleranceSeconds ?? 30,
        currentDate: new Date(this.clock.now()),
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (error) {
      const code = (error as { code?: string }).code ?? '';
      const description = TOKEN_FAULTS[code];
      if (!description) return { ok: false, response: this.unavailable(error) };
      const claim = (error as { claim?: string }).claim;
      // error_description is a quoted-string: no quotes or backslashes in it.
      const detail =
        code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && claim && /^\w+$/.test(claim)
          ? `the ${claim} claim of the token is not acceptable`
          : description;
      this.options.logger?.info('token refused', { reason: code, claim });
      return { ok: false, response: this.challenge(url, 401, 'invalid_token', detail) };
    }

    if (this.config.allowedClients?.length) {
      const client =
        typeof payload.client_id === 'string'
          ? payload.client_id
          : typeof payload.azp === 'string'
            ? payload.azp
            : undefined;
      if (!client || !this.config.allowedClients.includes(client)) {
        this.options.logger?.info('token refused', { reason: 'client not allowed' });
        return { ok: false, response: this.challenge(url, 403, 'client') };
      }
    }
    if (this.config.allowedScopes?.length) {
      const granted = scopesOf(payload);
      if (!this.config.allowedScopes.some((scope) => granted.has(scope))) {
        this.options.logger?.info('token refused', { reason: 'insufficient scope' });
        return { ok: false, response: this.challenge(url, 403, 'insufficient_scope') };
      }
    }
    const identity: CallerIdentity = {
      kind: 'user',
      sub: payload.sub as string, // required above
      issuer: issuer.issuer,
      claims: payload,
    };
    return { ok: true, principal: principalOf(identity), identity };
  }

  /** RFC 9728 protected resource metadata, at the root and at the `/mcp`-suffixed path; no token needed. */
  async wellKnown(request: ExchangeRequest, url: URL): Promise<Response | undefined> {
    if (url.pathname !== METADATA_PATH && url.pathname !== `${METADATA_PATH}${MCP_PATH}`) return undefined;
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return methodNotAllowed('GET');
    }
    let issuer: Issuer;
    try {
      issuer = await this.loadIssuer();
    } catch (error) {
      return this.unavailable(error);
    }
    const metadata: Record<string, unknown> = {
      resource: `${url.origin}${MCP_PATH}`,
      authorization_servers: [issuer.issuer],
      bearer_methods_supported: ['header'],
    };
    if (this.config.allowedScopes?.length) metadata.scopes_supported = this.config.allowedScopes;
    return jsonResponse(200, metadata, { 'cache-control': 'max-age=300' });
  }

  private challenge(
    url: URL,
    status: 401 | 403,
    kind: 'missing' | 'invalid_token' | 'client' | 'insufficient_scope',
    description?: string,
  ): Response {
    const params = [`resource_metadata="${url.origin}${METADATA_PATH}"`];
    const scopes = this.config.allowedScopes?.join(' ');
    let message: string;
    switch (kind) {
      case 'missing':
        message = 'Unauthorized: send an access token (Authorization: Bearer …)';
        if (scopes) params.push(`scope="${scopes}"`);
        break;
      case 'invalid_token':
        message = `Unauthorized: ${description}`;
        params.unshift('error="invalid_token"');
        params.push(`error_description="${description}"`);
        break;
      case 'client':
        message = 'Forbidden: the client the token was issued to is not allowed';
        params.push('error_description="the client the token was issued to is not allowed"');
        break;
      case 'insufficient_scope':
        message = `Forbidden: the token carries none of the scopes ${scopes}`;
        params.unshift('error="insufficient_scope"');
        params.push(`scope="${scopes}"`, 'error_description="the token carries none of the required scopes"');
        break;
    }
    return refuse(status === 401 ? 'Unauthorized' : 'AuthForbidden', message, {
      headers: { 'www-authenticate': `Bearer ${params.join(', ')}` },
    });
  }

  private unavailable(error: unknown): Response {
    this.options.logger?.warn('token could not be checked: issuer or its keys unavailable', {
      error: describeError(error),
    });
    return refuse(
      'AuthUnavailable',
      'Service unavailable: the authorization server could not be reached to check the token; retry shortly',
    );
  }

  /** The discovery document, once per process; a failure is retried only after `discoveryRetryMs`. */
  private loadIssuer(): Promise<Issuer> {
    if (!this.issuer && this.clock.now() - this.issuerFailedAt < (this.options.discoveryRetryMs ?? 5_000)) {
      return Promise.reject(new Error('the discovery document was unavailable moments ago'));
    }
    this.issuer ??= this.discover().catch((error: unknown) => {
      this.issuer = undefined;
      this.issuerFailedAt = this.clock.now();
      throw error;
    });
    return this.issuer;
  }

  private async discover(): Promise<Issuer> {
    const res = await (this.options.fetch ?? fetch)(this.config.discoveryUrl, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(this.timeoutMs),
      redirect: 'error',
    });
    if (!res.ok) throw new Error(`discovery document: HTTP ${res.status}`);
    const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (typeof doc.issuer !== 'string' || !doc.issuer) throw new Error('discovery document: no issuer');
    if (typeof doc.jwks_uri !== 'string') throw new Error('discovery document: no jwks_uri');
    const jwksUri = new URL(doc.jwks_uri);
    if (jwksUri.protocol !== 'https:' && !(jwksUri.protocol === 'http:' && isLoopbackHost(jwksUri.hostname))) {
      throw new Error('discovery document: jwks_uri must be https (http only on a loopback host)');
    }
    const { createRemoteJWKSet, customFetch } = await import('jose');
    const remote = createRemoteJWKSet(jwksUri, {
      // Never stale nor cooled down on jose's (Node's) clock: serveStale refetches, on the gateway's.
      cooldownDuration: Number.POSITIVE_INFINITY,
      cacheMaxAge: Number.POSITIVE_INFINITY,
      ...(this.options.fetch ? { [customFetch]: this.options.fetch } : {}),
      timeoutDuration: this.timeoutMs,
    });
    this.options.logger?.info('token issuer discovered', { issuer: doc.issuer });
    return { issuer: doc.issuer, keys: await this.serveStale(remote) };
  }

  /**
   * The remote key set, fetched again once older than `jwksMaxAgeMs` and for an unknown kid at most
   * once per `jwksCooldownMs`, falling back to the last good set for `jwksStaleMs` when it cannot be fetched.
   */
  private async serveStale(remote: Awaited<ReturnType<typeof import('jose')['createRemoteJWKSet']>>) {
    const { createLocalJWKSet } = await import('jose');
    const staleMs = this.options.jwksStaleMs ?? 3_600_000;
    const maxAgeMs = this.options.jwksMaxAgeMs ?? 600_000;
    const cooldownMs = this.options.jwksCooldownMs ?? 30_000;
    /** When the set was last fetched (a failed fetch does not count: the next request tries again). */
    let fetchedAt: number | undefined;
    const age = () => (fetchedAt === undefined ? Number.POSITIVE_INFINITY : this.clock.now() - fetchedAt);
    // Concurrent callers share jose's one fetch in flight.
    const reload = async () => {
      await remote.reload();
      fetchedAt = this.clock.now();
    };
    let lastGood: { keys: JWTVerifyGetKey; at: number } | undefined;
    const keys: JWTVerifyGetKey = async (header, token) => {
      try {
        if (age() >= maxAgeMs) await reload();
        let key: Awaited<ReturnType<JWTVerifyGetKey>>;
        try {
          key = await remote(header, token);
        } catch (error) {
          // An unknown kid may be a key rotated in since the fetch.
          if ((error as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY' || age() < cooldownMs) throw error;
          await reload();
          key = await remote(header, token);
        }
        const jwks = remote.jwks();
        if (jwks) lastGood = { keys: createLocalJWKSet(jwks), at: this.clock.now() };
        return key;
      } catch (error) {
        // A token fault (no key with that kid in a set just fetched, …) is the token's: 401 as before.
        const fetchFailed = !TOKEN_FAULTS[(error as { code?: string }).code ?? ''];
        if (!fetchFailed || !lastGood || this.clock.now() - lastGood.at > staleMs) throw error;
        try {
          const key = await lastGood.keys(header, token);
          this.options.logger?.warn('JWKS unavailable: verified with the last key set fetched', {
            error: describeError(error),
          });
          return key;
        } catch {
          throw error; // not in the old set either: maybe a new key — 503, not 401
        }
      }
    };
    return keys;
  }
}

/** The token of an `Authorization: Bearer …` header; undefined when there is none (or another scheme). */
export function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer[ \t]+([A-Za-z0-9\-._~+/]+=*)[ \t]*$/i.exec(header);
  if (match) return match[1];
  // A Bearer header with a malformed value is still a presented token: it fails verification (invalid_token).
  return /^Bearer(?:[ \t]|$)/i.test(header) ? header.replace(/^Bearer[ \t]*/i, '').trim() || '-' : undefined;
}

/** Scopes of an access token: `scope` (RFC 8693/9068, space-separated) or `scp` (string or array). */
function scopesOf(payload: JWTPayload): Set<string> {
  const scopes = new Set<string>();
  for (const claim of [payload.scope, payload.scp]) {
    const values = typeof claim === 'string' ? claim.split(' ') : Array.isArray(claim) ? claim : [];
    for (const value of values) if (typeof value === 'string' && value) scopes.add(value);
  }
  return scopes;
}
