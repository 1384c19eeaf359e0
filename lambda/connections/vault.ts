import type { ConnectionTable } from '../state/connection-table';
import type { EncryptionContext, Envelope } from './envelope';

/**
 * The token vault: one connection per principal and target, encrypted (./envelope.ts: a data key per
 * item, wrapped by KMS or the local key, the principal and target bound as encryption context) before
 * it reaches the table. What an instance decrypted is kept in its memory for `cacheMs` (one KMS Decrypt
 * per principal and target per half minute, not per call); a connection removed on another instance is
 * therefore used here for at most that long, and the target's own refusal (401) ends it sooner.
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
}

export interface VaultOptions {
  /** A connection unused this long is removed by the table's TTL. */
  idleDays: number;
  now?: () => number;
  /** How long a decrypted connection is reused by this instance. */
  cacheMs?: number;
  /** Entries kept at most (the oldest go first). */
  cacheEntries?: number;
}

export class ConnectionVault {
  private readonly cache = new Map<string, { connection: Connection; until: number }>();
  private readonly now: () => number;

  constructor(
    private readonly table: ConnectionTable,
    private readonly envelope: Envelope,
    private readonly options: VaultOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  async get(principal: string, target: string): Promise<Connection | undefined> {
    const key = cacheKey(principal, target);
    const cached = this.cache.get(key);
    if (cached && this.now() < cached.until) return cached.connection;
    this.cache.delete(key);
    const stored = await this.table.read(principal, target);
    if (!stored) return undefined;
    let connection: Connection;
    try {
      connection = JSON.parse(await this.envelope.open(stored, contextOf(principal, target))) as Connection;
    } catch {
      // Not openable under this principal and target (moved, tampered, another key): as good as none.
      return undefined;
    }
    this.remember(key, connection);
    return connection;
  }

  async put(principal: string, target: string, connection: Connection): Promise<void> {
    const sealed = await this.envelope.seal(JSON.stringify(connection), contextOf(principal, target));
    const now = this.now();
    const expiresAt = Math.floor(now / 1000) + this.options.idleDays * 24 * 3600;
    await this.table.write(principal, target, { ...sealed, updatedAt: now }, expiresAt);
    this.remember(cacheKey(principal, target), connection);
  }

  async remove(principal: string, target: string): Promise<boolean> {
    this.cache.delete(cacheKey(principal, target));
    return this.table.remove(principal, target);
  }

  /** Forgets what this instance decrypted (the target refused the token: read the table again). */
  forget(principal: string, target: string): void {
    this.cache.delete(cacheKey(principal, target));
  }

  targetsOf(principal: string): Promise<string[]> {
    return this.table.targetsOf(principal);
  }

  private remember(key: string, connection: Connection): void {
    this.cache.delete(key);
    this.cache.set(key, { connection, until: this.now() + (this.options.cacheMs ?? 30_000) });
    const max = this.options.cacheEntries ?? 1000;
    while (this.cache.size > max) {
      const oldest = this.cache.keys().next().value;
      if (oldest === undefined) break;
      this.cache.delete(oldest);
    }
  }
}

function cacheKey(principal: string, target: string): string {
  return `${target}\u0000${principal}`;
}

export function contextOf(principal: string, target: string): EncryptionContext {
  return { purpose: 'mcp-gateway/connection', principal, target };
}
