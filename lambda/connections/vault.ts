import type { Clock } from '../scheduling/clock';
import type { ConnectionTable, ConnectionVersion, RefreshLease } from '../state/connection-table';
import type { EncryptionContext, Envelope } from './envelope';

/**
 * The token vault: one connection per principal and target, encrypted (./envelope.ts: a data key per
 * item, wrapped by KMS or the local key, the principal and target bound as encryption context) before
 * it reaches the table. Every use reads the item (one consistent GetItem), so a connection removed or
 * replaced on any instance is gone everywhere at once; what an instance decrypted is reused while the
 * item is unchanged, so KMS is asked once per connection written, not per call. A connection is read
 * with its version (which write it is) and the refresh lease on it, so that a refresh can be one
 * instance's at a time and a removal can be of the write that was read only.
 */

/** A principal's authorization at one target, as the vault hands it out (never logged). */
export interface Connection {
  accessToken: string;
  refreshToken?: string;
  /** Epoch ms; absent when the authorization server gave no lifetime. */
  expiresAt?: number;
  scope?: string;
  /** Epoch ms of the consent. */
  connectedAt: number;
  /** Epoch ms the access token was asked for (its lifetime runs from here; absent: `connectedAt`). */
  issuedAt?: number;
  /** The callback the grant was made for: it names the client, which refreshes and revokes it. */
  redirectUri?: string;
}

/** A connection as read from the table: which write it is, and who is refreshing it, if anyone. */
export interface VaultEntry {
  connection: Connection;
  version: ConnectionVersion;
  lease?: RefreshLease;
}

export interface VaultOptions {
  /** A connection unused this long is removed by the table's TTL. */
  idleDays: number;
  /** The gateway's clock: when a connection was written, when it lapses. */
  clock: Clock;
  /** Decrypted entries kept at most (the oldest go first). */
  cacheEntries?: number;
}

export class ConnectionVault {
  /** Decrypted connections by principal and target, with the item they came from. */
  private readonly cache = new Map<string, { connection: Connection; written: string }>();
  constructor(
    private readonly table: ConnectionTable,
    private readonly envelope: Envelope,
    private readonly options: VaultOptions,
  ) {}

  async get(principal: string, target: string): Promise<Connection | undefined> {
    return (await this.read(principal, target))?.connection;
  }

  /** The connection with its version and lease; undefined when there is none (or it does not open). */
  async read(principal: string, target: string): Promise<VaultEntry | undefined> {
    const key = connectionKey(principal, target);
    const stored = await this.table.read(principal, target);
    if (!stored) {
      this.cache.delete(key);
      return undefined;
    }
    const version = { updatedAt: stored.updatedAt, wrappedKey: stored.wrappedKey };
    const lease = stored.lease ? { lease: stored.lease } : {};
    const written = writtenOf(version);
    const cached = this.cache.get(key);
    if (cached?.written === written) return { connection: cached.connection, version, ...lease };
    let connection: Connection;
    try {
      connection = JSON.parse(await this.envelope.open(stored, contextOf(principal, target))) as Connection;
    } catch {
      // Not openable under this principal and target (moved, tampered, another key): as good as none.
      return undefined;
    }
    this.remember(key, connection, written);
    return { connection, version, ...lease };
  }

  /**
   * Stores (replaces) the connection. With `leaseHolder`, only while that refresh lease is still held
   * on the item: false, and nothing stored, when it is not (the lease lapsed and was taken, or the
   * connection was removed or written anew meanwhile).
   */
  async put(principal: string, target: string, connection: Connection, leaseHolder?: string): Promise<boolean> {
    const sealed = await this.envelope.seal(JSON.stringify(connection), contextOf(principal, target));
    const now = this.options.clock.now();
    const expiresAt = Math.floor(now / 1000) + this.options.idleDays * 24 * 3600;
    const version = { updatedAt: now, wrappedKey: sealed.wrappedKey };
    const written = await this.table.write(principal, target, { ...sealed, updatedAt: now }, expiresAt, leaseHolder);
    if (written) this.remember(connectionKey(principal, target), connection, writtenOf(version));
    return written;
  }

  /** Removes the connection (with `version`, only while it is still that write); true when removed. */
  async remove(principal: string, target: string, version?: ConnectionVersion): Promise<boolean> {
    this.cache.delete(connectionKey(principal, target));
    return this.table.remove(principal, target, version);
  }

  /** Takes the refresh lease on the write `version`, unless another instance holds one that lasts past `now`. */
  takeLease(
    principal: string,
    target: string,
    version: ConnectionVersion,
    lease: RefreshLease,
    now: number,
  ): Promise<boolean> {
    return this.table.takeLease(principal, target, version, lease, now);
  }

  releaseLease(principal: string, target: string, holder: string): Promise<void> {
    return this.table.releaseLease(principal, target, holder);
  }

  targetsOf(principal: string): Promise<string[]> {
    return this.table.targetsOf(principal);
  }

  private remember(key: string, connection: Connection, written: string): void {
    this.cache.delete(key);
    this.cache.set(key, { connection, written });
    const max = this.options.cacheEntries ?? 1000;
    while (this.cache.size > max) {
      const oldest = this.cache.keys().next().value;
      if (oldest === undefined) break;
      this.cache.delete(oldest);
    }
  }
}

/** What the cache compares: a write has its own time and data key. */
function writtenOf(version: ConnectionVersion): string {
  return `${version.updatedAt}.${version.wrappedKey}`;
}

/** One principal's connection at one target, as a key in memory (never stored). */
export function connectionKey(principal: string, target: string): string {
  return `${target}\u0000${principal}`;
}

export function contextOf(principal: string, target: string): EncryptionContext {
  return { purpose: 'mcp-gateway/connection', principal, target };
}
