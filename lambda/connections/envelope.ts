import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { KMSClient } from '@aws-sdk/client-kms';

/**
 * Envelope encryption of what the vault keeps: each item has a data key of its own (AES-256-GCM), and
 * only the data key wrapped by the vault's key is stored beside the ciphertext. The vault's key is a KMS
 * key (deployed: the CDK stack creates it; the plaintext key never leaves KMS) or a local key (the
 * embedded run, tests). The encryption context (principal and target) is bound to both layers: an item
 * copied under another principal or target does not open.
 */

type KmsModule = typeof import('@aws-sdk/client-kms');

export type EncryptionContext = Record<string, string>;

export interface DataKey {
  plaintext: Buffer;
  wrapped: Buffer;
  keyId: string;
}

/** Where data keys come from and how they are unwrapped. */
export interface KeySource {
  newDataKey(context: EncryptionContext): Promise<DataKey>;
  unwrap(wrapped: Buffer, keyId: string, context: EncryptionContext): Promise<Buffer>;
}

export interface Sealed {
  ciphertext: string;
  wrappedKey: string;
  keyId: string;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

export class Envelope {
  constructor(private readonly keys: KeySource) {}

  async seal(plain: string, context: EncryptionContext): Promise<Sealed> {
    const key = await this.keys.newDataKey(context);
    try {
      return {
        ciphertext: gcmSeal(key.plaintext, Buffer.from(plain, 'utf8'), aadOf(context)).toString('base64url'),
        wrappedKey: key.wrapped.toString('base64url'),
        keyId: key.keyId,
      };
    } finally {
      key.plaintext.fill(0);
    }
  }

  /** The plaintext; throws when the item does not open under this context (tampered, moved, wrong key). */
  async open(sealed: Sealed, context: EncryptionContext): Promise<string> {
    const dataKey = await this.keys.unwrap(Buffer.from(sealed.wrappedKey, 'base64url'), sealed.keyId, context);
    try {
      return gcmOpen(dataKey, Buffer.from(sealed.ciphertext, 'base64url'), aadOf(context)).toString('utf8');
    } finally {
      dataKey.fill(0);
    }
  }
}

/** A local key (≥ 32 characters) that wraps each data key with AES-256-GCM. */
export class LocalKeySource implements KeySource {
  private readonly key: Buffer;
  readonly keyId: string;

  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync('sha256', secret, 'mcp-gateway/connections', 'wrap data keys v1', 32));
    this.keyId = `local:${createHash('sha256').update(this.key).digest().subarray(0, 6).toString('base64url')}`;
  }

  async newDataKey(context: EncryptionContext): Promise<DataKey> {
    const plaintext = randomBytes(32);
    return { plaintext, wrapped: gcmSeal(this.key, plaintext, aadOf(context)), keyId: this.keyId };
  }

  async unwrap(wrapped: Buffer, keyId: string, context: EncryptionContext): Promise<Buffer> {
    if (keyId !== this.keyId) throw new Error(`connection wrapped by another key (${keyId})`);
    return gcmOpen(this.key, wrapped, aadOf(context));
  }
}

/** A KMS key: GenerateDataKey per item, Decrypt with the same encryption context to read it. */
/**
 * A KMS key: GenerateDataKey per item, Decrypt with the same encryption context to read it. The KMS
 * client is loaded on first use (a dynamic import, a chunk of its own in the bundle), so a gateway
 * without per-user targets, or a cold start that reads no connection, does not load it.
 */
export class KmsKeySource implements KeySource {
  private client?: Promise<KmsModule & { kms: KMSClient }>;

  constructor(private readonly keyArn: string) {}

  async newDataKey(context: EncryptionContext): Promise<DataKey> {
    const { kms, GenerateDataKeyCommand } = await this.loaded();
    const out = await kms.send(
      new GenerateDataKeyCommand({ KeyId: this.keyArn, KeySpec: 'AES_256', EncryptionContext: context }),
      { abortSignal: AbortSignal.timeout(5000) },
    );
    if (!out.Plaintext || !out.CiphertextBlob) throw new Error('KMS GenerateDataKey returned no key');
    return {
      plaintext: Buffer.from(out.Plaintext),
      wrapped: Buffer.from(out.CiphertextBlob),
      keyId: `kms:${this.keyArn}`,
    };
  }

  async unwrap(wrapped: Buffer, _keyId: string, context: EncryptionContext): Promise<Buffer> {
    const { kms, DecryptCommand } = await this.loaded();
    const out = await kms.send(
      new DecryptCommand({ KeyId: this.keyArn, CiphertextBlob: wrapped, EncryptionContext: context }),
      { abortSignal: AbortSignal.timeout(5000) },
    );
    if (!out.Plaintext) throw new Error('KMS Decrypt returned no key');
    return Buffer.from(out.Plaintext);
  }

  private loaded() {
    this.client ??= import('@aws-sdk/client-kms').then((sdk) => ({
      ...sdk,
      kms: new sdk.KMSClient({ maxAttempts: 3 }),
    }));
    return this.client;
  }
}

function aadOf(context: EncryptionContext): Buffer {
  return Buffer.from(JSON.stringify(Object.entries(context).sort(([a], [b]) => (a < b ? -1 : 1))), 'utf8');
}

function gcmSeal(key: Buffer, plain: Buffer, aad: Buffer): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  return Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

function gcmOpen(key: Buffer, sealed: Buffer, aad: Buffer): Buffer {
  if (sealed.length < IV_BYTES + TAG_BYTES) throw new Error('sealed data too short');
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
  decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
}
