import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';

/**
 * Authenticated encryption (AES-256-GCM) of small JSON payloads that clients carry and must not
 * read or alter, with key rotation: the current key seals, the current and the previous key open.
 *
 * Wire format (URL-safe, no padding): `gw1.<kid>.<iv>.<ciphertext+tag>`, where `kid` names the key
 * (a digest of it, so opening never tries keys blindly) and the format prefix and kid are bound as
 * additional authenticated data. Keys are derived with HKDF-SHA256 from secret material of any
 * length ≥ 32 characters, so an operator can paste a random string into Secrets Manager.
 *
 * @example
 * const box = SealedBox.fromSecrets({ current: process.env.SECRET! });
 * const sealed = box.seal({ hello: 'world' });
 * box.open(sealed); // → { hello: 'world' }
 */

const FORMAT = 'gw1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** A key id: 6 bytes, base64url (deriveKey). */
const KID_PATTERN = /^[A-Za-z0-9_-]{8}$/;
const HKDF_SALT = 'mcp-gateway/requestState';
const HKDF_INFO = 'aes-256-gcm v1';

export interface SealingKey {
  /** Short public key id (first 6 bytes of SHA-256 of the key, base64url). */
  kid: string;
  key: Buffer;
}

export interface KeySecrets {
  current: string;
  previous?: string;
}

export function deriveKey(secret: string | Buffer): SealingKey {
  const key = Buffer.from(hkdfSync('sha256', secret, HKDF_SALT, HKDF_INFO, 32));
  const kid = createHash('sha256').update(key).digest().subarray(0, 6).toString('base64url');
  return { kid, key };
}

/** A fresh random key (local runs without configured keys). */
export function randomSecret(): string {
  return randomBytes(32).toString('base64url');
}

export class SealedBox {
  private readonly keys: SealingKey[];

  constructor(current: SealingKey, previous?: SealingKey) {
    this.keys = previous && previous.kid !== current.kid ? [current, previous] : [current];
  }

  static fromSecrets(secrets: KeySecrets): SealedBox {
    return new SealedBox(deriveKey(secrets.current), secrets.previous ? deriveKey(secrets.previous) : undefined);
  }

  get currentKid(): string {
    return this.current.kid;
  }

  /** The key that seals (the constructor always puts one first). */
  private get current(): SealingKey {
    return this.keys[0]!;
  }

  /**
   * `deterministic`: the same payload seals to the same text (the IV is an HMAC of the payload under a
   * key of its own, as SIV modes do), so a name handed out twice — a task's id, relayed by two instances —
   * is one name. GCM's nonce is then repeated only for an identical payload, whose ciphertext is the same
   * anyway: what it tells is only that two sealed texts are equal.
   */
  seal(payload: unknown, options: { deterministic?: boolean } = {}): string {
    const { kid, key } = this.current;
    const plain = JSON.stringify(payload);
    const iv = options.deterministic
      ? createHmac('sha256', createHmac('sha256', key).update('mcp-gateway/deterministic-iv').digest())
          .update(plain)
          .digest()
          .subarray(0, IV_BYTES)
      : randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aad(kid));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${FORMAT}.${kid}.${iv.toString('base64url')}.${body.toString('base64url')}`;
  }

  /**
   * Whether `sealed` has this format and a well-formed key id that none of our keys has: sealed with a
   * key this box no longer holds (rotated out, a restarted process's random key) or another's. Says
   * nothing of its integrity, which only the key could check.
   */
  sealedByUnknownKey(sealed: unknown): boolean {
    if (typeof sealed !== 'string' || sealed.length > 1_000_000) return false;
    const [format, kid, ...rest] = sealed.split('.');
    return (
      format === FORMAT &&
      kid !== undefined &&
      KID_PATTERN.test(kid) &&
      rest.length === 2 &&
      !this.keys.some((k) => safeEqual(k.kid, kid))
    );
  }

  /** The payload, or undefined for anything not sealed by one of our keys (malformed, tampered, unknown key). */
  open(sealed: unknown): unknown {
    if (typeof sealed !== 'string' || sealed.length > 1_000_000) return undefined;
    const [format, kid, ivText, bodyText, ...rest] = sealed.split('.');
    if (format !== FORMAT || kid === undefined || ivText === undefined || bodyText === undefined || rest.length) {
      return undefined;
    }
    const entry = this.keys.find((k) => safeEqual(k.kid, kid));
    if (!entry) return undefined;
    const iv = Buffer.from(ivText, 'base64url');
    const body = Buffer.from(bodyText, 'base64url');
    if (iv.length !== IV_BYTES || body.length < TAG_BYTES) return undefined;
    // base64url decoding is lenient; insist on the canonical text so that two strings never open alike.
    if (iv.toString('base64url') !== ivText || body.toString('base64url') !== bodyText) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', entry.key, iv);
      decipher.setAAD(aad(kid));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]);
      return JSON.parse(plain.toString('utf8'));
    } catch {
      return undefined;
    }
  }
}

function aad(kid: string): Buffer {
  return Buffer.from(`${FORMAT}.${kid}`, 'utf8');
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
