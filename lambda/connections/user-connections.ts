import { randomUUID } from 'node:crypto';
import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { recordConnectionEvent } from '../observability/metrics';
import { currentRequest } from '../observability/request-context';
import { type BackoffShape, poll } from '../scheduling/backoff';
import type { Clock } from '../scheduling/clock';
import { AuthorizationServerError, type GrantedTokens, type TargetAuthorizationServer } from './authorization-server';
import type { ConsentLink, ConsentLinks, FlowState } from './consent-links';
import { CONNECT_PATH, CONNECT_TOOL, callbackPath, clientMetadataPath } from './names';
import { type Connection, type ConnectionVault, connectionKey, type VaultEntry } from './vault';

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

/**
 * How long one instance's refresh lease lasts: one token request (the authorization server's requests
 * are bounded at 10 s, authorization-server.ts; discovery is done before the lease is taken) and margin
 * for sealing and writing the result. Another instance takes the lease over only once it lapsed.
 */
export const REFRESH_LEASE_MS = 15_000;
/** How a call waits for another instance's refresh: reads of the item, soon at first (a refresh takes well under a second). */
const LEASE_WAIT: BackoffShape = { firstMs: 100, factor: 1.5, maxMs: 1000 };
/** Leases waited out (instances that died while refreshing) before a call gives up waiting. */
const LEASE_ROUNDS = 3;

// The gateway's own names live in ./names.ts (light to import: the demo client tells its questions by them).
export {
  CALLBACK_PATH,
  CLIENT_METADATA_PATH,
  CONNECT_PATH,
  CONNECT_TOOL,
  CONNECTIONS_PATH,
  callbackPath,
  clientMetadataPath,
  IDENTITY_PATH,
} from './names';

export interface UserConnectionsOptions {
  vault: ConnectionVault;
  servers: ReadonlyMap<string, TargetAuthorizationServer>;
  links: ConsentLinks;
  /** The gateway's public base URL; default the origin of the request that needs it. */
  publicUrl?: string;
  logger: GatewayLogger;
  /** The gateway's clock: token expiry, refresh leases, and the waits for another instance's refresh. */
  clock: Clock;
}

export class UserConnections {
  private readonly refreshing = new Map<string, Promise<Connection>>();
  private readonly clock: Clock;

  constructor(private readonly options: UserConnectionsOptions) {
    this.clock = options.clock;
  }

  private now(): number {
    return this.clock.now();
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
  async waitForConnection(principal: string, target: string, until: number, signal: AbortSignal): Promise<boolean> {
    const outcome = await poll(
      async () => ((await this.isConnected(principal, target)) ? true : undefined),
      { firstMs: 1000, factor: 1.25, maxMs: 5000 },
      { until, signal, clock: this.clock },
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
    const entry = await this.options.vault.read(principal, target);
    if (!entry) throw new ConnectionRequiredError(target);
    const key = connectionKey(principal, target);
    if (!this.stale.has(key) && !this.dueForRefresh(entry.connection)) return entry.connection;
    let refreshing = this.refreshing.get(key);
    if (!refreshing) {
      refreshing = this.refresh(principal, target, entry).finally(() => this.refreshing.delete(key));
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

  /**
   * One refresh of the connection across every instance: a refresh token may work once (a server that
   * rotates them refuses, or takes as theft, its second use), so the instance that takes the item's
   * lease refreshes, and the others wait for what it stores.
   */
  private async refresh(principal: string, target: string, read: VaultEntry): Promise<Connection> {
    let entry = read;
    for (let round = 0; round < LEASE_ROUNDS; round++) {
      const { refreshToken } = entry.connection;
      // Nothing to refresh with: used while it lasts, then the user consents again.
      if (!refreshToken) return this.usableUntilExpiry(principal, target, entry);
      if (!entry.lease || entry.lease.until <= this.now()) {
        const server = this.requireServer(target);
        try {
          // Discovery before the lease, so that the lease covers the token request only.
          await server.server();
        } catch (error) {
          return this.unrefreshed(principal, target, entry.connection, error);
        }
        const holder = randomUUID();
        const lease = { holder, until: this.now() + REFRESH_LEASE_MS };
        if (await this.options.vault.takeLease(principal, target, entry.version, lease, this.now())) {
          return this.refreshHolding(principal, target, entry, refreshToken, holder);
        }
      }
      // Another instance holds the lease, or has just stored the connection anew: what it stores is used.
      const next = await this.refreshedElsewhere(principal, target, entry);
      if (!sameWrite(next, entry)) return this.replaced(principal, target, next);
      entry = next;
    }
    return this.unrefreshed(
      principal,
      target,
      entry.connection,
      new AuthorizationServerError(target, 'the refresh under way on another instance did not finish'),
    );
  }

  /**
   * Waits (reading the item) while another instance's lease on the write `entry` lasts: the item as
   * stored once it is another write, or as it is when the lease lapsed (or at the wait's end).
   */
  private async refreshedElsewhere(principal: string, target: string, entry: VaultEntry): Promise<VaultEntry> {
    let last = entry;
    const outcome = await poll(
      async () => {
        const current = await this.options.vault.read(principal, target);
        // Removed meanwhile (refused at the authorization server, or disconnected): consent again.
        if (!current) throw new ConnectionRequiredError(target);
        last = current;
        const held = current.lease !== undefined && current.lease.until > this.now();
        return !sameWrite(current, entry) || !held ? current : undefined;
      },
      LEASE_WAIT,
      { until: (entry.lease?.until ?? this.now()) + REFRESH_LEASE_MS, clock: this.clock },
    );
    return 'value' in outcome ? outcome.value : last;
  }

  /** The refresh, holding the item's lease: stored only while the lease is still this refresh's. */
  private async refreshHolding(
    principal: string,
    target: string,
    entry: VaultEntry,
    refreshToken: string,
    holder: string,
  ): Promise<Connection> {
    const { connection } = entry;
    const key = connectionKey(principal, target);
    const server = this.requireServer(target);
    // The client the grant was made to (its callback names it), whatever origin this request came by.
    const redirectUri = connection.redirectUri ?? this.redirectUri(target, currentRequest()?.facts.origin);
    let tokens: GrantedTokens;
    try {
      tokens = await server.refresh(refreshToken, redirectUri);
    } catch (error) {
      recordConnectionEvent('refreshFailed');
      const refused = error instanceof AuthorizationServerError && error.refusedGrant;
      this.options.logger.warn('connection refresh failed', { target, refused, error: describeError(error) });
      // The authorization server no longer honours the grant (revoked, expired): consent again.
      if (refused) return this.removeUnlessReplaced(principal, target, entry);
      await this.options.vault.releaseLease(principal, target, holder).catch(() => undefined);
      return this.unrefreshed(principal, target, connection, error);
    }
    this.stale.delete(key);
    recordConnectionEvent('refreshed');
    const refreshed = await this.store(principal, target, tokens, connection.connectedAt, redirectUri, holder).catch(
      (error: unknown) => {
        // The table failed the write: the new tokens still serve this call (the old refresh token may be spent).
        this.options.logger.warn('refreshed connection not stored', { target, error: describeError(error) });
        return undefined;
      },
    );
    if (!refreshed) return this.toConnection(tokens, connection.connectedAt, redirectUri);
    if (refreshed.stored) return refreshed.connection;
    // The lease lapsed before the write (the refresh took longer than it lasts): what is stored now wins.
    this.options.logger.warn('refreshed connection not stored: its refresh lease lapsed', { target });
    const current = await this.options.vault.read(principal, target);
    if (!current) throw new ConnectionRequiredError(target);
    return sameWrite(current, entry) ? refreshed.connection : current.connection;
  }

  /** A connection without a refresh token: used while it lasts, then removed (unless replaced meanwhile). */
  private async usableUntilExpiry(principal: string, target: string, entry: VaultEntry): Promise<Connection> {
    const { connection } = entry;
    const key = connectionKey(principal, target);
    if (!this.stale.has(key) && connection.expiresAt !== undefined && this.now() < connection.expiresAt)
      return connection;
    return this.removeUnlessReplaced(principal, target, entry);
  }

  /**
   * Gives up the write `entry` (its grant refused, or its token spent): removed only if it is still the
   * stored one, else the connection another instance stored meanwhile is used.
   */
  private async removeUnlessReplaced(principal: string, target: string, entry: VaultEntry): Promise<Connection> {
    const removed = await this.options.vault.remove(principal, target, entry.version).catch(() => false);
    if (!removed) {
      const current = await this.options.vault.read(principal, target).catch(() => undefined);
      if (current && !sameWrite(current, entry)) return this.replaced(principal, target, current);
    }
    this.stale.delete(connectionKey(principal, target));
    throw new ConnectionRequiredError(target);
  }

  /** Another write of the connection than the one refreshed (another instance's refresh, or a new consent). */
  private replaced(principal: string, target: string, entry: VaultEntry): Connection {
    this.stale.delete(connectionKey(principal, target));
    return entry.connection;
  }

  /** The refresh failed (the server is down or failing): a token that has not expired yet is still worth a try. */
  private unrefreshed(principal: string, target: string, connection: Connection, error: unknown): Connection {
    const lasts = connection.expiresAt === undefined || this.now() < connection.expiresAt;
    if (!this.stale.has(connectionKey(principal, target)) && lasts) return connection;
    throw error;
  }

  /** Stores the tokens (with `leaseHolder`, only while that refresh lease holds: `stored` false otherwise). */
  private async store(
    principal: string,
    target: string,
    tokens: GrantedTokens,
    connectedAt: number,
    redirectUri: string,
    leaseHolder?: string,
  ): Promise<{ connection: Connection; stored: boolean }> {
    const connection = this.toConnection(tokens, connectedAt, redirectUri);
    const stored = await this.options.vault.put(principal, target, connection, leaseHolder);
    return { connection, stored };
  }

  private toConnection(tokens: GrantedTokens, connectedAt: number, redirectUri: string): Connection {
    return {
      redirectUri,
      issuedAt: tokens.issuedAt ?? this.now(),
      accessToken: tokens.accessToken,
      ...(tokens.refreshToken ? { refreshToken: tokens.refreshToken } : {}),
      ...(tokens.expiresAt !== undefined ? { expiresAt: tokens.expiresAt } : {}),
      ...(tokens.scope ? { scope: tokens.scope } : {}),
      connectedAt,
    };
  }

  private requireServer(target: string): TargetAuthorizationServer {
    const server = this.options.servers.get(target);
    if (!server) throw new AuthorizationServerError(target, 'not a per-user OAuth target');
    return server;
  }
}

/** Whether two reads are of the same write of the connection. */
function sameWrite(a: VaultEntry, b: VaultEntry): boolean {
  return a.version.updatedAt === b.version.updatedAt && a.version.wrappedKey === b.version.wrappedKey;
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
