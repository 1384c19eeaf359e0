import type { ConnectionTable } from '../state/connection-table';
import type { EncryptionContext, Envelope } from './envelope';

/**
 * The token vault: one connection per principal and target, encrypted (./envelope.ts: a data key per
 * item, wrapped by KMS or the local key, the principal and target bound as encryption context) before
 * it reaches the table. Every use reads the item (one consistent GetItem), so a connection removed or
 * replaced on any instance is gone everywhere at once; what an instance decrypted is reused while the
 * item is unchanged, so KMS is asked once per connection written, not per call.
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

export interface VaultOptions {
  /** A connection unused this long is removed by the table's TTL. */
  idleDays: number;
  now?: () => number;
  /** Decrypted entries kept at most (the oldest go first). */
  cacheEntries?: number;
}

export class ConnectionVault {
  /** Decrypted connections by principal and target, with the item they came from. */
  private readonly cache = new Map<string, { connection: Connection; written: string }>();
  private readonly now: () => number;

  constructor(
    private readonly table: ConnectionTable,
    private readonly envelope: Envelope,
    private readonly options: VaultOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  async get(principal: string, target: string): Promise<Connection | undefined> {
    const key = connectionKey(principal, target);
    const stored = await this.table.read(principal, target);
    if (!stored) {
      this.cache.delete(key);
      return undefined;
    }
    const written = `${stored.updatedAt}.${stored.wrappedKey}`;
    const cached = this.cache.get(key);
    if (cached?.written === written) return cached.connection;
    let connection: Connection;
    try {
      connection = JSON.parse(await this.envelope.open(stored, contextOf(principal, target))) as Connection;
    } catch {
      // Not openable under this principal and target (moved, tampered, another key): as good as none.
      return undefined;
    }
    this.remember(key, connection, written);
    return connection;
  }

  async put(principal: string, target: string, connection: Connection): Promise<void> {
    const sealed = await this.envelope.seal(JSON.stringify(connection), contextOf(principal, target));
    const now = this.now();
    const expiresAt = Math.floor(now / 1000) + this.options.idleDays * 24 * 3600;
    await this.table.write(principal, target, { ...sealed, updatedAt: now }, expiresAt);
    this.remember(connectionKey(principal, target), connection, `${now}.${sealed.wrappedKey}`);
  }

  async remove(principal: string, target: string): Promise<boolean> {
    this.cache.delete(connectionKey(principal, target));
    return this.table.remove(principal, target);
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

/** One principal's connection at one target, as a key in memory (never stored). */
export function connectionKey(principal: string, target: string): string {
  return `${target}\u0000${principal}`;
}

export function contextOf(principal: string, target: string): EncryptionContext {
  return { purpose: 'mcp-gateway/connection', principal, target };
}
