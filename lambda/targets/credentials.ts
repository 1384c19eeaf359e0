import { ConfigError, type CredentialValue, type OAuthClientCredentials, type TargetConfig } from '../config/schema';
import { type SecretFetcher, secretAsText, secretsManagerFetcher } from '../config/secrets-manager';
import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import type { Clock } from '../scheduling/clock';

/**
 * Outbound credentials: what the gateway itself presents to each target. The client's own
 * `Authorization` header is never among them (the target clients build their headers from this
 * module and the protocol, nothing else).
 *
 * - Static headers: plain strings, `{"fromEnv": "NAME"}` (read when the gateway is built; a missing
 *   variable is a configuration error naming the field) or `{"secretArn": "…", "key"?: "…"}` (read
 *   from Secrets Manager once per process, i.e. once per Lambda cold start, on first use; a failed
 *   read is retried by the next request rather than remembered).
 * - OAuth 2.0 client credentials (RFC 6749 §4.4): one token per target, shared by every request of
 *   the process, refreshed shortly before it expires (or after the target answered 401).
 *
 * @example
 * const credentials = new OutboundCredentials({ logger });
 * const forGithub = credentials.forTarget(githubTarget);
 * await fetch(url, { headers: { ...(await forGithub.headers()), 'content-type': 'application/json' } });
 */

/** Reads the string value (AWSCURRENT) of a Secrets Manager secret. */
export type SecretValueReader = (secretArn: string) => Promise<string>;

export interface OutboundCredentialsOptions {
  /** Where `fromEnv` values come from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Where `secretArn` values come from (default: Secrets Manager, loaded only when a secret is used). */
  secrets?: SecretValueReader;
  logger?: GatewayLogger;
  /** The gateway's clock: a cached client-credentials token is renewed by it. */
  clock: Clock;
  /** Timeout of one token request. */
  tokenTimeoutMs?: number;
}

/** The credentials of one target, as the target clients use them. */
export interface TargetCredentials {
  /** Headers to add to every request to the target (never logged). */
  headers(): Promise<Record<string, string>>;
  /** The target answered 401: forget a cached access token so the next request fetches a new one. */
  rejected(): void;
  /**
   * The calling user's own token (targets[].userOAuth, connections/user-connections.ts): a 401 is
   * answered by sending once more with fresh headers, which refresh it or ask the user to consent.
   */
  readonly perUser?: boolean;
}

/** Credentials could not be obtained (secret unreadable, token endpoint refused): the target is unusable for now. */
export class CredentialError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CredentialError';
  }
}

/** A target without outbound credentials. */
export const NO_CREDENTIALS: TargetCredentials = { headers: async () => ({}), rejected: () => undefined };

type Resolvable =
  | { kind: 'value'; value: string }
  | { kind: 'secret'; secretArn: string; key?: string; prefix: string };

export class OutboundCredentials {
  private readonly env: NodeJS.ProcessEnv;
  private readonly readSecret: SecretValueReader;
  private readonly secretCache = new Map<string, Promise<string>>();
  private readonly logger?: GatewayLogger;
  private readonly now: () => number;
  private readonly tokenTimeoutMs: number;

  constructor(options: OutboundCredentialsOptions) {
    this.env = options.env ?? process.env;
    this.readSecret = options.secrets ?? secretsManagerValueReader();
    this.logger = options.logger;
    this.now = () => options.clock.now();
    this.tokenTimeoutMs = options.tokenTimeoutMs ?? 10_000;
  }

  /** A configured value (string, environment or Secrets Manager reference), as text. */
  async valueOf(value: CredentialValue, field: string): Promise<string> {
    return this.resolve(this.prepare(value, field), field);
  }

  /** Builds one target's credentials; environment references are checked here (ConfigError naming the field). */
  forTarget(target: TargetConfig, index?: number): TargetCredentials {
    // `targets[1].headers.x-api-key` as --check-config writes paths; by name where the index is not known.
    const field = (suffix: string) =>
      `${index === undefined ? `targets.${target.name}` : `targets[${index}]`}.${suffix}`;
    const headers = Object.entries(target.headers ?? {}).map(
      ([name, value]) => [name, this.prepare(value, field(`headers.${name}`))] as const,
    );
    const token = target.oauth ? this.tokenSource(target, target.oauth, field('oauth')) : undefined;
    if (headers.length === 0 && !token) return NO_CREDENTIALS;

    const constant = headers.every(([, value]) => value.kind === 'value');
    let resolved: Promise<Record<string, string>> | undefined = constant
      ? Promise.resolve(Object.fromEntries(headers.map(([name, value]) => [name, (value as { value: string }).value])))
      : undefined;
    const staticHeaders = (): Promise<Record<string, string>> => {
      resolved ??= Promise.all(
        headers.map(async ([name, value]) => [name, await this.resolve(value, target.name)] as const),
      )
        .then((entries) => Object.fromEntries(entries))
        .catch((error: unknown) => {
          resolved = undefined; // not remembered: the next request tries again
          throw error;
        });
      return resolved;
    };
    return {
      headers: async () => {
        const [fixed, bearer] = await Promise.all([staticHeaders(), token?.get()]);
        return bearer === undefined ? fixed : { ...fixed, authorization: `Bearer ${bearer}` };
      },
      rejected: () => token?.invalidate(),
    };
  }

  /** Environment values are read now; secrets later, on first use. */
  private prepare(value: CredentialValue, field: string): Resolvable {
    if (typeof value === 'string') return { kind: 'value', value };
    if ('fromEnv' in value) {
      const raw = this.env[value.fromEnv];
      if (raw === undefined || raw === '')
        throw new ConfigError(`${field}: environment variable ${value.fromEnv} is not set`);
      return { kind: 'value', value: `${value.prefix ?? ''}${raw}` };
    }
    return { kind: 'secret', secretArn: value.secretArn, key: value.key, prefix: value.prefix ?? '' };
  }

  private async resolve(value: Resolvable, target: string): Promise<string> {
    if (value.kind === 'value') return value.value;
    let pending = this.secretCache.get(value.secretArn);
    if (!pending) {
      pending = this.readSecret(value.secretArn).catch((error: unknown) => {
        this.secretCache.delete(value.secretArn);
        this.logger?.warn('reading an outbound credential secret failed', {
          target,
          secretArn: value.secretArn,
          error: describeError(error),
        });
        throw new CredentialError(`secret ${value.secretArn} could not be read`, { cause: error });
      });
      this.secretCache.set(value.secretArn, pending);
    }
    const secret = await pending;
    if (value.key === undefined) return `${value.prefix}${secret}`;
    let field: unknown;
    try {
      field = (JSON.parse(secret) as Record<string, unknown>)[value.key];
    } catch {
      field = undefined;
    }
    if (typeof field !== 'string')
      throw new CredentialError(`secret ${value.secretArn} has no string field "${value.key}"`);
    return `${value.prefix}${field}`;
  }

  private tokenSource(target: TargetConfig, oauth: OAuthClientCredentials, field: string): ClientCredentialsToken {
    const clientId = this.prepare(oauth.clientId, `${field}.clientId`);
    const clientSecret = this.prepare(oauth.clientSecret, `${field}.clientSecret`);
    return new ClientCredentialsToken(
      target.name,
      oauth,
      async () => ({
        id: await this.resolve(clientId, target.name),
        secret: await this.resolve(clientSecret, target.name),
      }),
      { now: this.now, timeoutMs: this.tokenTimeoutMs, logger: this.logger },
    );
  }
}

/** Tokens without `expires_in` are kept this long. */
const DEFAULT_TOKEN_LIFETIME_S = 300;
/** Refresh this long before expiry (at most a quarter of the lifetime, for short-lived tokens). */
const REFRESH_MARGIN_S = 60;

/**
 * One client-credentials access token, shared by every request of the process. Concurrent callers
 * that find no valid token wait for the same token request (never a burst at the token endpoint).
 */
export class ClientCredentialsToken {
  private cached?: { token: string; refreshAt: number };
  private inflight?: Promise<string>;
  /** Token requests made (for tests and metrics). */
  requests = 0;

  constructor(
    private readonly target: string,
    private readonly oauth: OAuthClientCredentials,
    private readonly client: () => Promise<{ id: string; secret: string }>,
    private readonly options: { now: () => number; timeoutMs: number; logger?: GatewayLogger },
  ) {}

  async get(): Promise<string> {
    if (this.cached && this.options.now() < this.cached.refreshAt) return this.cached.token;
    this.inflight ??= this.request().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  invalidate(): void {
    this.cached = undefined;
  }

  private async request(): Promise<string> {
    const { id, secret } = await this.client();
    const startedAt = this.options.now();
    const body = new URLSearchParams({ grant_type: 'client_credentials' });
    if (this.oauth.scopes?.length) body.set('scope', this.oauth.scopes.join(' '));
    if (this.oauth.resource) body.set('resource', this.oauth.resource);
    if (this.oauth.audience) body.set('audience', this.oauth.audience);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (this.oauth.authMethod === 'client_secret_post') {
      body.set('client_id', id);
      body.set('client_secret', secret);
    } else {
      // RFC 6749 §2.3.1: both parts form-urlencoded before Basic encoding.
      headers.authorization = `Basic ${Buffer.from(`${formEncode(id)}:${formEncode(secret)}`).toString('base64')}`;
    }
    this.requests++;
    let res: Response;
    try {
      res = await fetch(this.oauth.tokenUrl, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs),
        redirect: 'error',
      });
    } catch (error) {
      throw new CredentialError('the token endpoint is unreachable', { cause: error });
    }
    const answer = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    if (!res.ok || !answer || typeof answer.access_token !== 'string' || answer.access_token === '') {
      // Only the OAuth error code is kept: descriptions may echo request data.
      const code =
        typeof answer?.error === 'string' && /^[\x20-\x7e]{1,64}$/.test(answer.error) ? ` (${answer.error})` : '';
      this.options.logger?.warn('client-credentials token request refused', {
        target: this.target,
        status: res.status,
        oauthError: code.slice(2, -1) || undefined,
      });
      throw new CredentialError(`the token endpoint answered HTTP ${res.status}${code}`);
    }
    if (typeof answer.token_type === 'string' && answer.token_type.toLowerCase() !== 'bearer') {
      throw new CredentialError(`the token endpoint issued a ${answer.token_type} token; only Bearer is supported`);
    }
    const expiresIn = Number(answer.expires_in ?? DEFAULT_TOKEN_LIFETIME_S);
    const lifetime = Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : DEFAULT_TOKEN_LIFETIME_S;
    const margin = Math.min(REFRESH_MARGIN_S, lifetime / 4);
    this.cached = { token: answer.access_token, refreshAt: startedAt + (lifetime - margin) * 1000 };
    this.options.logger?.debug('client-credentials token obtained', {
      target: this.target,
      expiresInSeconds: lifetime,
    });
    return answer.access_token;
  }
}

function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

/** The secret's current value as text, read from Secrets Manager only when a secret is actually used. */
export function secretsManagerValueReader(fetch: SecretFetcher = secretsManagerFetcher()): SecretValueReader {
  return async (secretArn) => {
    const value = await fetch(secretArn, 'AWSCURRENT');
    if (!value) throw new Error('the secret has no value');
    return secretAsText(value);
  };
}
