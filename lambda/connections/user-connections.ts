import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { recordConnectionEvent } from '../observability/metrics';
import { currentRequest } from '../observability/request-context';
import { poll } from '../scheduling/backoff';
import { type Clock, systemClock } from '../scheduling/clock';
import { AuthorizationServerError, type GrantedTokens, type TargetAuthorizationServer } from './authorization-server';
import type { ConsentLink, ConsentLinks, FlowState } from './consent-links';
import { type Connection, type ConnectionVault, connectionKey } from './vault';

/**
 * Per-user connections to targets (targets[].userOAuth): the credentials a target is called with are
 * the calling principal's own token from the vault (refreshed shortly before it expires), and a
 * principal without one gets a consent link instead. The principal is the request's, as inbound auth
 * decided it (observability/request-context.ts holds it for the request and all it starts); work
 * outside any request has none, and is never given anybody's token.
 */

/** The principal has no usable connection at `target`: the caller turns it into URL elicitation. */
export class ConnectionRequiredError extends Error {
  constructor(readonly target: string) {
    super(`target ${target} needs the user's authorization`);
    this.name = 'ConnectionRequiredError';
  }
}

/** What a consent is shown as: one URL-mode elicitation. */
export interface ConsentRequest {
  elicitationId: string;
  url: string;
  message: string;
}

/**
 * The tool a per-user target shows in place of its own while the principal has not connected to it:
 * calling it asks for the connection (as any call of the target would), and once connected says so
 * without reaching the target. Its own tools are listed from then on. (A target's own tool of this
 * name is shadowed by it.)
 */
export const CONNECT_TOOL = 'connect_account';

export function connectTool(target: string): { name: string; description: string; inputSchema: { type: 'object' } } {
  return {
    name: CONNECT_TOOL,
    description: `Connect your account at ${target}. ${target} acts as you, so its tools are listed once you have signed in there; calling this asks you to sign in (a link to open in your browser).`,
    inputSchema: { type: 'object' },
  };
}

/**
 * A target's Client ID Metadata Document URL under `publicUrl`: only an https one (a client id must be).
 * One per target, naming only that target's callback: an authorization server that accepts it for one
 * target's consent cannot be made to send the code to another target's callback.
 */
export function clientMetadataUrlOf(publicUrl: string | undefined, target: string): string | undefined {
  if (!publicUrl?.startsWith('https:')) return undefined;
  return pathUnder(publicUrl, clientMetadataPath(target));
}

/** Refresh this long before expiry (at most a quarter of the token's lifetime). */
const REFRESH_MARGIN_MS = 60_000;

export const CONNECT_PATH = '/connect';
/** Each target's OAuth callback is `<CALLBACK_PATH>/<target>` (a distinct redirect URI per target). */
export const CALLBACK_PATH = '/connect/callback';
export const IDENTITY_PATH = '/connect/identity';
export const CONNECTIONS_PATH = '/connections';
/** Each target's OAuth Client ID Metadata Document is `<CLIENT_METADATA_PATH>/<target>.json` (its URL is the client id). */
export const CLIENT_METADATA_PATH = '/connect/client';

export const callbackPath = (target: string) => `${CALLBACK_PATH}/${target}`;
export const clientMetadataPath = (target: string) => `${CLIENT_METADATA_PATH}/${target}.json`;

export interface UserConnectionsOptions {
  vault: ConnectionVault;
  servers: ReadonlyMap<string, TargetAuthorizationServer>;
  links: ConsentLinks;
  /** The gateway's public base URL; default the origin of the request that needs it. */
  publicUrl?: string;
  logger: GatewayLogger;
  now?: () => number;
}

export class UserConnections {
  private readonly refreshing = new Map<string, Promise<Connection>>();
  private readonly now: () => number;

  constructor(private readonly options: UserConnectionsOptions) {
    this.now = options.now ?? Date.now;
  }

  get links(): ConsentLinks {
    return this.options.links;
  }

  /** Targets called as the user. */
  has(target: string): boolean {
    return this.options.servers.has(target);
  }

  server(target: string): TargetAuthorizationServer | undefined {
    return this.options.servers.get(target);
  }

  /** The credentials of one per-user target, as the target clients use them (targets/credentials.ts). */
  credentialsFor(target: string): { headers(): Promise<Record<string, string>>; rejected(): void; perUser: true } {
    return {
      perUser: true,
      headers: async () => {
        const principal = requestPrincipal();
        const connection = await this.usable(principal, target);
        return { authorization: `Bearer ${connection.accessToken}` };
      },
      // The target refused the token: refresh before it is used again.
      rejected: () => {
        const principal = currentRequest()?.facts.principal;
        if (principal) this.stale.add(connectionKey(principal, target));
      },
    };
  }

  private readonly stale = new Set<string>();

  /** A consent link for the request's principal (and 2025 session), as the elicitation the client gets. */
  consent(target: string): ConsentRequest {
    const context = currentRequest();
    const principal = requestPrincipal();
    const link = this.options.links.create(principal, target, context?.facts.sessionId);
    recordConnectionEvent('consentStarted');
    this.options.logger.info('connection required: consent link issued', {
      target,
      elicitationId: link.elicitationId,
    });
    const url = new URL(this.urlOf(CONNECT_PATH, context?.facts.origin));
    url.searchParams.set('link', this.options.links.seal(link));
    return {
      elicitationId: link.elicitationId,
      url: url.toString(),
      message: `Connect your account at ${target}: sign in there to let this gateway call it for you.`,
    };
  }

  /** Whether the request's principal has a stored connection at `target`. */
  async callerConnected(target: string): Promise<boolean> {
    const principal = currentRequest()?.facts.principal;
    return principal !== undefined && (await this.isConnected(principal, target));
  }

  /** Whether the principal has a stored connection at `target` (not whether the target still honours it). */
  async isConnected(principal: string, target: string): Promise<boolean> {
    return (await this.options.vault.get(principal, target)) !== undefined;
  }

  /**
   * Waits until the principal's connection at `target` is stored (the callback may land on any
   * instance: the table is read, every second at first, then every 5 s while the person takes long),
   * until `until` (epoch ms) or `signal`. True when stored.
   */
  async waitForConnection(
    principal: string,
    target: string,
    until: number,
    signal: AbortSignal,
    clock: Clock = systemClock,
  ): Promise<boolean> {
    const outcome = await poll(
      async () => ((await this.isConnected(principal, target)) ? true : undefined),
      { firstMs: 1000, factor: 1.25, maxMs: 5000 },
      { until, signal, clock },
    );
    return 'value' in outcome;
  }

  /** How long a consent link stays usable (ms): the longest a call waits for its connection. */
  get linkTtlMs(): number {
    return this.options.links.ttlMs;
  }

  /** A target's Client ID Metadata Document URL: only under a configured https public URL (./authorization-server.ts). */
  clientMetadataUrl(target: string): string | undefined {
    return clientMetadataUrlOf(this.options.publicUrl, target);
  }

  /** A target's document (draft-ietf-oauth-client-id-metadata-document): a public client, code + refresh, its one callback. */
  clientMetadata(target: string): Record<string, unknown> | undefined {
    const clientId = this.has(target) ? this.clientMetadataUrl(target) : undefined;
    if (!clientId) return undefined;
    return {
      client_id: clientId,
      client_name: `MCP gateway (${target})`,
      redirect_uris: [this.redirectUri(target)],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  /** A target's OAuth callback URL (register it at that target's authorization server). */
  redirectUri(target: string, origin?: string): string {
    return this.urlOf(callbackPath(target), origin);
  }

  /** One of the gateway's own paths under its public URL (default: the request's origin). */
  urlOf(path: string, origin?: string): string {
    const base = this.options.publicUrl ?? origin;
    if (!base) throw new Error('no public URL for consent links: set connections.publicUrl');
    return pathUnder(base, path);
  }

  /**
   * Where the browser goes to consent: the authorization server's URL for this link, with the state
   * sealed to the browser (`browser`: the binding's digest) and to the issuer it is sent to.
   */
  async authorizationUrl(link: ConsentLink, browser: string, origin?: string): Promise<string> {
    const server = this.requireServer(link.target);
    const redirectUri = this.redirectUri(link.target, origin);
    const info = await server.server();
    // The verifier rides in the sealed state: only this gateway can read it, and the state works once.
    const { url, codeVerifier } = await server.authorizationUrl(redirectUri, 'pending');
    const state: FlowState = {
      ...link,
      codeVerifier,
      redirectUri,
      issuer: info.issuer,
      issRequired: info.issRequired,
      browser,
    };
    const target = new URL(url);
    target.searchParams.set('state', this.options.links.sealFlow(state));
    return target.toString();
  }

  /** The callback's code, exchanged at the state's issuer and stored under the state's principal. */
  async complete(state: FlowState, code: string): Promise<void> {
    const server = this.requireServer(state.target);
    const tokens = await server.exchange(code, state.codeVerifier, state.redirectUri, state.issuer);
    await this.store(state.principal, state.target, tokens, this.now(), state.redirectUri);
    this.stale.delete(connectionKey(state.principal, state.target));
  }

  /** Removes a principal's connection (and revokes it at the authorization server where it can); true if there was one. */
  async disconnect(principal: string, target: string, origin?: string): Promise<boolean> {
    const connection = await this.options.vault.get(principal, target).catch(() => undefined);
    const removed = await this.options.vault.remove(principal, target);
    if (connection) {
      const server = this.options.servers.get(target);
      const token = connection.refreshToken ?? connection.accessToken;
      await server?.revoke(token, connection.redirectUri ?? this.redirectUri(target, origin)).catch(() => false);
    }
    if (removed) recordConnectionEvent('revoked');
    return removed;
  }

  /** The principal's targets with a stored connection. */
  async connected(principal: string): Promise<string[]> {
    const stored = new Set(await this.options.vault.targetsOf(principal));
    return [...this.options.servers.keys()].filter((target) => stored.has(target));
  }

  private async usable(principal: string, target: string): Promise<Connection> {
    const connection = await this.options.vault.get(principal, target);
    if (!connection) throw new ConnectionRequiredError(target);
    const key = connectionKey(principal, target);
    if (!this.stale.has(key) && !this.dueForRefresh(connection)) return connection;
    let refreshing = this.refreshing.get(key);
    if (!refreshing) {
      refreshing = this.refresh(principal, target, connection).finally(() => this.refreshing.delete(key));
      this.refreshing.set(key, refreshing);
    }
    return refreshing;
  }

  private dueForRefresh(connection: Connection): boolean {
    if (connection.expiresAt === undefined) return false;
    const lifetime = connection.expiresAt - (connection.issuedAt ?? connection.connectedAt);
    const margin = Math.min(REFRESH_MARGIN_MS, Math.max(0, lifetime / 4));
    return this.now() >= connection.expiresAt - margin;
  }

  private async refresh(principal: string, target: string, connection: Connection): Promise<Connection> {
    const key = connectionKey(principal, target);
    if (!connection.refreshToken) {
      // Nothing to refresh with: used while it lasts, then the user consents again.
      if (!this.stale.has(key) && connection.expiresAt !== undefined && this.now() < connection.expiresAt)
        return connection;
      await this.options.vault.remove(principal, target).catch(() => false);
      this.stale.delete(key);
      throw new ConnectionRequiredError(target);
    }
    const server = this.requireServer(target);
    try {
      // The client the grant was made to (its callback names it), whatever origin this request came by.
      const redirectUri = connection.redirectUri ?? this.redirectUri(target, currentRequest()?.facts.origin);
      const tokens = await server.refresh(connection.refreshToken, redirectUri);
      const refreshed = await this.store(principal, target, tokens, connection.connectedAt, redirectUri);
      this.stale.delete(key);
      recordConnectionEvent('refreshed');
      return refreshed;
    } catch (error) {
      recordConnectionEvent('refreshFailed');
      const refused = error instanceof AuthorizationServerError && error.refusedGrant;
      this.options.logger.warn('connection refresh failed', { target, refused, error: describeError(error) });
      if (refused) {
        // The authorization server no longer honours the grant (revoked, expired): consent again.
        await this.options.vault.remove(principal, target).catch(() => false);
        this.stale.delete(key);
        throw new ConnectionRequiredError(target);
      }
      // The server is down or failing: a token that has not expired yet is still worth a try.
      if (!this.stale.has(key) && (connection.expiresAt === undefined || this.now() < connection.expiresAt))
        return connection;
      throw error;
    }
  }

  private async store(
    principal: string,
    target: string,
    tokens: GrantedTokens,
    connectedAt: number,
    redirectUri: string,
  ) {
    const connection: Connection = {
      redirectUri,
      issuedAt: tokens.issuedAt ?? this.now(),
      accessToken: tokens.accessToken,
      ...(tokens.refreshToken ? { refreshToken: tokens.refreshToken } : {}),
      ...(tokens.expiresAt !== undefined ? { expiresAt: tokens.expiresAt } : {}),
      ...(tokens.scope ? { scope: tokens.scope } : {}),
      connectedAt,
    };
    await this.options.vault.put(principal, target, connection);
    return connection;
  }

  private requireServer(target: string): TargetAuthorizationServer {
    const server = this.options.servers.get(target);
    if (!server) throw new AuthorizationServerError(target, 'not a per-user OAuth target');
    return server;
  }
}

function requestPrincipal(): string {
  const principal = currentRequest()?.facts.principal;
  // Outside a request nobody is calling: no token is anybody's to use.
  if (!principal)
    throw new AuthorizationServerError('connections', 'no principal: a user token is used only in a request');
  return principal;
}

/** A path of the gateway's under its base URL, which may itself have a path (a custom domain's stage). */
function pathUnder(base: string, path: string): string {
  return new URL(path.slice(1), base.endsWith('/') ? base : `${base}/`).toString();
}
