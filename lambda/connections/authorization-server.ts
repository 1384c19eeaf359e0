import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  exchangeAuthorization,
  refreshAuthorization,
  registerClient,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  AuthorizationServerMetadata,
  OAuthClientInformationMixed,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CredentialValue, TargetConfig, UserOAuth } from '../config/schema';
import type { SealedBox } from '../crypto/sealed-box';
import type { GatewayLogger } from '../observability/logger';
import { OutboundRefusedError } from '../outbound/policy';
import type { Clock } from '../scheduling/clock';
import type { ConnectionTable } from '../state/connection-table';

/**
 * One target's authorization server, as the MCP authorization specification has a client find and use
 * it (https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization): the target's
 * protected-resource metadata (RFC 9728: its 401's `resource_metadata`, else the well-known URL) names
 * the authorization server, whose metadata (RFC 8414, else OpenID discovery) gives the endpoints; the
 * client is the pre-registered one or one the gateway registers (RFC 7591); the grant is the
 * authorization code with PKCE S256 and the resource indicator (RFC 8707) naming the target. The SDK's
 * own client functions do each step (@modelcontextprotocol/sdk/client/auth.js), so the gateway
 * discovers exactly as an SDK client would.
 *
 * What the target and its authorization server say is not trusted (the gateway talks to many of them,
 * any of which may be hostile): every request goes through the outbound policy (`fetch`,
 * ../outbound/); the metadata's `issuer` must be the URL it was found under (RFC 8414 §3.3), else
 * discovery fails; an operator's list of authorization servers, where set, bounds the issuers; a
 * configured client secret goes only to the issuer it was configured for; the browser is sent only to an
 * https authorization endpoint; the code of a consent is sent only to the issuer the browser was sent to
 * (`exchange`'s `issuer`: the callback checks RFC 9207's `iss` against it, ./consent-routes.ts).
 */

/** What discovery found, kept per process (a failure is not kept: the next consent tries again). */
export interface ServerInfo {
  /** The issuer: the URL its metadata was found under, which its metadata names itself. */
  issuer: string;
  /** It sends `iss` with every authorization response (RFC 9207): one without it is refused. */
  issRequired: boolean;
  metadata: AuthorizationServerMetadata;
  /** The resource indicator: the protected-resource metadata's `resource`, else the target's URL. */
  resource: string;
  scopes?: string[];
}

/** The tokens a grant or a refresh returned, with absolute expiry (epoch ms). */
export interface GrantedTokens {
  /** Epoch ms the tokens were asked for (their lifetime runs from here). */
  issuedAt?: number;
  accessToken: string;
  refreshToken?: string;
  expiresAt?: number;
  scope?: string;
}

/** The authorization server failed or refused: the message is safe to show (no token, no description). */
export class AuthorizationServerError extends Error {
  /** The server refused the grant itself (RFC 6749 §5.2 `invalid_grant`): consent again, retrying will not help. */
  readonly refusedGrant: boolean;

  constructor(
    readonly target: string,
    message: string,
    options?: { cause?: unknown; oauthError?: string },
  ) {
    super(`${target}: ${message}`, options);
    this.name = 'AuthorizationServerError';
    this.refusedGrant = options?.oauthError === 'invalid_grant';
  }
}

export interface AuthorizationServerOptions {
  table: ConnectionTable;
  /** Seals the registration the gateway keeps in the table (it holds a client secret). */
  box: SealedBox;
  resolve: (value: CredentialValue, field: string) => Promise<string>;
  logger: GatewayLogger;
  /** The gateway's clock: when tokens were issued, how long a request took. */
  clock: Clock;
  /** Every request to the target's metadata and its authorization server (the outbound policy's fetch). */
  fetch: typeof fetch;
  /** Where the browser may be sent (the outbound policy's rule for browser redirects). */
  allowsBrowserRedirect: (url: URL) => boolean;
  /** The operator's list of issuers a per-user target may use; empty or absent: any that passes the policy. */
  allowedIssuers?: readonly string[];
  /**
   * The URL of this target's Client ID Metadata Document (an https URL under the configured public URL),
   * offered as the client id where the authorization server supports such documents; absent: not offered.
   */
  clientMetadataUrl?: string;
}

export class TargetAuthorizationServer {
  private info?: Promise<ServerInfo>;
  private readonly clients = new Map<string, Promise<OAuthClientInformationMixed>>();
  private readonly fetchFn: typeof fetch;

  constructor(
    private readonly target: TargetConfig,
    private readonly settings: UserOAuth,
    private readonly options: AuthorizationServerOptions,
  ) {
    // Bounded in time and size, no redirects, no address the policy refuses.
    this.fetchFn = options.fetch;
  }

  get name(): string {
    return this.target.name;
  }

  /** Discovery, once per process while it succeeds. */
  server(): Promise<ServerInfo> {
    this.info ??= this.discover().catch((error: unknown) => {
      this.info = undefined;
      if (error instanceof AuthorizationServerError) throw error;
      throw new AuthorizationServerError(
        this.name,
        error instanceof OutboundRefusedError
          ? `authorization server discovery failed (${error.message})`
          : 'authorization server discovery failed',
        { cause: error },
      );
    });
    return this.info;
  }

  /** The URL the browser goes to, and the PKCE verifier the callback needs. */
  async authorizationUrl(redirectUri: string, state: string): Promise<{ url: string; codeVerifier: string }> {
    const server = await this.server();
    const clientInformation = await this.client(server, redirectUri);
    const scope = (this.settings.scopes ?? server.scopes)?.join(' ') || undefined;
    const { authorizationUrl, codeVerifier } = await startAuthorization(server.issuer, {
      metadata: server.metadata,
      clientInformation,
      redirectUrl: redirectUri,
      scope,
      state,
      resource: server.resource,
    });
    return { url: authorizationUrl.toString(), codeVerifier };
  }

  /**
   * The callback's code, exchanged at the token endpoint of `issuer` only (the one the browser was sent
   * to): should this instance's discovery now name another server, the code and its verifier stay here.
   */
  async exchange(code: string, codeVerifier: string, redirectUri: string, issuer: string): Promise<GrantedTokens> {
    const current = await this.server();
    if (!sameIssuer(current.issuer, issuer)) {
      throw new AuthorizationServerError(this.name, 'its authorization server changed while the user signed in');
    }
    const { tokens, startedAt } = await this.tokenRequest(
      'the code exchange',
      redirectUri,
      (server, clientInformation) =>
        exchangeAuthorization(server.issuer, {
          metadata: server.metadata,
          clientInformation,
          authorizationCode: code,
          codeVerifier,
          redirectUri,
          resource: server.resource,
          fetchFn: this.fetchFn,
        }),
    );
    return granted(tokens, startedAt);
  }

  async refresh(refreshToken: string, redirectUri: string): Promise<GrantedTokens> {
    const { tokens, startedAt } = await this.tokenRequest('the refresh', redirectUri, (server, clientInformation) =>
      refreshAuthorization(server.issuer, {
        metadata: server.metadata,
        clientInformation,
        refreshToken,
        resource: server.resource,
        fetchFn: this.fetchFn,
      }),
    );
    // A server that does not rotate refresh tokens keeps the one it issued (OAuth 2.1 §4.3.1).
    return { ...granted(tokens, startedAt), refreshToken: tokens.refresh_token ?? refreshToken };
  }

  /** RFC 7009 revocation where the server offers it (best effort: the stored connection is gone anyway). */
  async revoke(token: string, redirectUri: string): Promise<boolean> {
    const server = await this.server();
    const endpoint = (server.metadata as { revocation_endpoint?: string }).revocation_endpoint;
    if (!endpoint) return false;
    const client = await this.client(server, redirectUri);
    const body = new URLSearchParams({ token });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (client.client_secret) {
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64')}`;
    } else body.set('client_id', client.client_id);
    const res = await this.fetchFn(endpoint, { method: 'POST', headers, body }).catch(() => undefined);
    await res?.body?.cancel().catch(() => undefined);
    return res?.ok ?? false;
  }

  /** One token endpoint request with this target's client; a failure names only its OAuth error code. */
  private async tokenRequest(
    what: string,
    redirectUri: string,
    request: (server: ServerInfo, client: OAuthClientInformationMixed) => Promise<OAuthTokens>,
  ): Promise<{ tokens: OAuthTokens; startedAt: number }> {
    const server = await this.server();
    const client = await this.client(server, redirectUri);
    const startedAt = this.now();
    try {
      return { tokens: await request(server, client), startedAt };
    } catch (error) {
      const oauthError = oauthErrorOf(error);
      throw new AuthorizationServerError(this.name, `${what} failed (${oauthError})`, { cause: error, oauthError });
    }
  }

  private now(): number {
    return this.options.clock.now();
  }

  private async discover(): Promise<ServerInfo> {
    const targetUrl = this.target.url;
    let resource = targetUrl;
    let scopes: string[] | undefined;
    const resourceMetadataUrl = this.settings.resourceMetadataUrl
      ? new URL(this.settings.resourceMetadataUrl)
      : await this.challengeMetadataUrl();
    const resourceMetadata = await this.resourceMetadata(resourceMetadataUrl);
    if (resourceMetadata) {
      resource = resourceMetadata.resource;
      // RFC 9728 §3.3: the metadata must be for this resource (a target must not send its users elsewhere).
      if (!sameResource(resource, targetUrl)) {
        throw new AuthorizationServerError(
          this.name,
          `the protected-resource metadata is for ${resource}, not for the target's URL`,
        );
      }
      scopes = resourceMetadata.scopes_supported;
    }
    // A configured issuer pins the authorization server, whatever the target's metadata names; without
    // protected-resource metadata, the target's origin is its authorization server (as the SDK does).
    const issuer =
      this.settings.authorizationServer ??
      resourceMetadata?.authorization_servers?.[0] ??
      String(new URL('/', targetUrl));
    this.checkAllowed(issuer);
    const metadata = await discoverAuthorizationServerMetadata(issuer, { fetchFn: this.fetchFn });
    if (!metadata) throw new AuthorizationServerError(this.name, 'the authorization server publishes no metadata');
    // RFC 8414 §3.3: metadata whose issuer is not where it was found speaks for another server.
    if (!sameIssuer(metadata.issuer, issuer)) {
      throw new AuthorizationServerError(
        this.name,
        `the authorization server metadata found under ${issuer} names another issuer (${metadata.issuer})`,
      );
    }
    const authorize = safeUrl(metadata.authorization_endpoint);
    if (!authorize || !this.options.allowsBrowserRedirect(authorize)) {
      throw new AuthorizationServerError(this.name, 'its authorization endpoint is not an https URL');
    }
    this.options.logger.info('target authorization server discovered', { target: this.name, issuer: metadata.issuer });
    return {
      issuer: metadata.issuer,
      issRequired:
        (metadata as { authorization_response_iss_parameter_supported?: unknown })
          .authorization_response_iss_parameter_supported === true,
      metadata,
      resource,
      ...(scopes?.length ? { scopes } : {}),
    };
  }

  /** The target's protected-resource metadata; undefined where it publishes none (a refusal by the policy is an error). */
  private async resourceMetadata(url: URL | undefined) {
    try {
      return await discoverOAuthProtectedResourceMetadata(this.target.url, { resourceMetadataUrl: url }, this.fetchFn);
    } catch (error) {
      if (error instanceof OutboundRefusedError) throw error;
      return undefined;
    }
  }

  /**
   * The issuer may be used: on the operator's list where there is one (the target's configured issuer
   * is on it), and the issuer a configured client secret was issued by (config requires it be named).
   */
  private checkAllowed(issuer: string): void {
    const configured = this.settings.authorizationServer;
    if (this.settings.clientSecret && (!configured || !sameIssuer(issuer, configured))) {
      throw new AuthorizationServerError(
        this.name,
        'its client secret is only for the configured authorization server',
      );
    }
    const allowed = this.options.allowedIssuers ?? [];
    if (allowed.length === 0 || (configured && sameIssuer(issuer, configured))) return;
    if (!allowed.some((one) => sameIssuer(one, issuer))) {
      throw new AuthorizationServerError(
        this.name,
        `its authorization server ${issuer} is not in outbound.authorizationServers`,
      );
    }
  }

  /** The target's 401 names its metadata (`WWW-Authenticate: Bearer resource_metadata=…`); else the well-known URL. */
  private async challengeMetadataUrl(): Promise<URL | undefined> {
    const res = await this.fetchFn(this.target.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
    }).catch((error: unknown) => {
      if (error instanceof OutboundRefusedError) throw error;
      return undefined;
    });
    if (!res) return undefined;
    await res.body?.cancel().catch(() => undefined);
    const header = res.headers.get('www-authenticate') ?? '';
    const match = /resource_metadata="([^"]+)"/i.exec(header);
    if (!match?.[1]) return undefined;
    try {
      return new URL(match[1], this.target.url);
    } catch {
      return undefined;
    }
  }

  /** The pre-registered client, or the gateway's own registration (kept in the table, one per server). */
  private client(server: ServerInfo, redirectUri: string): Promise<OAuthClientInformationMixed> {
    const key = `${server.issuer} ${redirectUri}`;
    let client = this.clients.get(key);
    if (!client) {
      client = this.clientFor(server, redirectUri, key).catch((error: unknown) => {
        this.clients.delete(key);
        throw error instanceof AuthorizationServerError
          ? error
          : new AuthorizationServerError(this.name, 'client registration failed', { cause: error });
      });
      this.clients.set(key, client);
    }
    return client;
  }

  private async clientFor(server: ServerInfo, redirectUri: string, key: string): Promise<OAuthClientInformationMixed> {
    const field = `targets.${this.name}.userOAuth`;
    if (this.settings.clientId !== undefined) {
      const client_id = await this.options.resolve(this.settings.clientId, `${field}.clientId`);
      const client_secret = this.settings.clientSecret
        ? await this.options.resolve(this.settings.clientSecret, `${field}.clientSecret`)
        : undefined;
      return client_secret ? { client_id, client_secret } : { client_id };
    }
    // A Client ID Metadata Document (the MCP authorization spec's preferred way for a client the server
    // does not know): the client id is the document's URL, nothing to register or keep. A public client.
    const metadataUrl = this.options.clientMetadataUrl;
    if (metadataUrl && server.metadata.client_id_metadata_document_supported === true)
      return { client_id: metadataUrl };
    const kept = await this.options.table.readRegistration(this.name, key);
    const opened = kept === undefined ? undefined : (this.options.box.open(kept) as OAuthClientInformationMixed);
    if (opened?.client_id) return opened;
    if (!server.metadata.registration_endpoint) {
      throw new AuthorizationServerError(
        this.name,
        'the authorization server offers no dynamic registration: configure userOAuth.clientId (and clientSecret)',
      );
    }
    const registered = await registerClient(server.issuer, {
      metadata: server.metadata,
      clientMetadata: {
        client_name: 'MCP gateway',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      fetchFn: this.fetchFn,
    });
    const client: OAuthClientInformationMixed = registered.client_secret
      ? { client_id: registered.client_id, client_secret: registered.client_secret }
      : { client_id: registered.client_id };
    const winner = await this.options.table.keepRegistration(this.name, key, this.options.box.seal(client));
    this.options.logger.info('registered at the target authorization server', { target: this.name });
    return (this.options.box.open(winner) as OAuthClientInformationMixed | undefined) ?? client;
  }
}

function granted(tokens: OAuthTokens, startedAt: number): GrantedTokens {
  const expiresIn = Number(tokens.expires_in);
  return {
    issuedAt: startedAt,
    accessToken: tokens.access_token,
    ...(tokens.refresh_token ? { refreshToken: tokens.refresh_token } : {}),
    ...(Number.isFinite(expiresIn) && expiresIn > 0 ? { expiresAt: startedAt + expiresIn * 1000 } : {}),
    ...(tokens.scope ? { scope: tokens.scope } : {}),
  };
}

/** Only an OAuth error code, never a description (it may echo request data). */
function oauthErrorOf(error: unknown): string {
  const code = (error as { errorCode?: unknown } | undefined)?.errorCode;
  if (typeof code === 'string' && /^[\x20-\x7e]{1,64}$/.test(code)) return code;
  return error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'unreachable or refused';
}

/**
 * Two issuer identifiers are the same (RFC 8414 §3.3 asks for identical strings; a lone trailing slash
 * after an origin-only issuer is the one difference tolerated, as URL serialization adds it).
 */
export function sameIssuer(a: string, b: string): boolean {
  const bare = (value: string) => (/^https?:\/\/[^/]+\/$/i.test(value) ? value.slice(0, -1) : value);
  return bare(a) === bare(b);
}

function safeUrl(value: unknown): URL | undefined {
  try {
    return typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    return undefined;
  }
}

/** The metadata's resource covers the target's URL (the same origin and a path prefix of it). */
function sameResource(resource: string, targetUrl: string): boolean {
  try {
    const a = new URL(resource);
    const b = new URL(targetUrl);
    const path = a.pathname.replace(/\/$/, '');
    return a.origin === b.origin && (b.pathname === path || b.pathname.startsWith(`${path}/`) || path === '');
  } catch {
    return false;
  }
}
