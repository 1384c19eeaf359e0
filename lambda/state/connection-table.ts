import { createHash } from 'node:crypto';

/**
 * Where per-user connections (targets[].userOAuth) are kept: one item per principal and target,
 * holding only ciphertext (the connections/ layer encrypts before it writes, so the table never sees
 * a token) and, while one instance refreshes it, that instance's refresh lease; a marker per consent
 * link used (single use across instances), and the gateway's own registration at a target's
 * authorization server when it registered itself (RFC 7591), so that every instance presents the same
 * client.
 */

/** A stored connection: an envelope (the ciphertext and its wrapped data key), as connections/ wrote it. */
export interface StoredConnection {
  /** The encrypted connection (base64url). */
  ciphertext: string;
  /** The data key, wrapped by the vault's key (KMS or local), base64url. */
  wrappedKey: string;
  /** Which key wrapped it: `kms:<key arn>` or `local:<kid>`. */
  keyId: string;
  /** Epoch milliseconds of the write (a cache may keep what it decrypted while this is unchanged). */
  updatedAt: number;
}

/** Which write of a connection an instance read: any later write changes it (a new data key each time). */
export type ConnectionVersion = Pick<StoredConnection, 'updatedAt' | 'wrappedKey'>;

/**
 * One instance's right to refresh a connection (one refresh at a time across instances: a refresh token
 * that a server rotates works once, and its reuse may revoke the whole grant).
 */
export interface RefreshLease {
  /** A random id of the refresh that holds it. */
  holder: string;
  /** Epoch ms it lapses (another instance may take it from then on). */
  until: number;
}

/** A connection as read: the envelope, and the refresh lease on it, if one was taken since the write. */
export interface ReadConnection extends StoredConnection {
  lease?: RefreshLease;
}

export interface ConnectionTable {
  read(principal: string, target: string): Promise<ReadConnection | undefined>;
  /**
   * Writes (replaces) the principal's connection, dropping any lease; the item expires `expiresAt`
   * (epoch seconds) unless written again. With `leaseHolder`, only while the item still carries that
   * holder's lease (false, and nothing written, when it does not).
   */
  write(
    principal: string,
    target: string,
    stored: StoredConnection,
    expiresAt: number,
    leaseHolder?: string,
  ): Promise<boolean>;
  /** Removes it (with `version`, only while it is still that write); true when it was removed. */
  remove(principal: string, target: string, version?: ConnectionVersion): Promise<boolean>;
  /**
   * Takes the refresh lease: only while the item is still `version` and no lease on it lasts past `now`
   * (epoch ms). False when another instance holds one or wrote the connection since.
   */
  takeLease(
    principal: string,
    target: string,
    version: ConnectionVersion,
    lease: RefreshLease,
    now: number,
  ): Promise<boolean>;
  /** Gives the lease up (a refresh that stored nothing), if `holder` still has it. */
  releaseLease(principal: string, target: string, holder: string): Promise<void>;
  /** Every target the principal has a connection at. */
  targetsOf(principal: string): Promise<string[]>;
  /** Marks a one-time value used; false when it already was (a replay). Kept until `expiresAt` (epoch seconds). */
  useOnce(value: string, expiresAt: number): Promise<boolean>;
  /** The gateway's registration at a target's authorization server (JSON, sealed by connections/). */
  readRegistration(target: string, issuer: string): Promise<string | undefined>;
  /** Keeps the first registration written; returns the one to use (another instance's, if it won). */
  keepRegistration(target: string, issuer: string, sealed: string): Promise<string>;
}

const hashed = (value: string) => createHash('sha256').update(value).digest('base64url');

/** The partition of one principal's connections (the principal is hashed: keys never carry identities). */
export const connectionPk = (principal: string) => `V#${hashed(principal)}`;
export const CONNECTION_PREFIX = 'T#';
export const connectionSk = (target: string) => `${CONNECTION_PREFIX}${target}`;
/** A used one-time value (consent link state). */
export const usedPk = (value: string) => `N#${hashed(value)}`;
export const USED_SK = 'used';
/** The gateway's client registration at one authorization server, for one target. */
export const registrationPk = (target: string) => `O#${target}`;
export const registrationSk = (issuer: string) => `R#${hashed(issuer)}`;
