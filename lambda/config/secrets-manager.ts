import { regionOfArn } from './arn';

/**
 * The one Secrets Manager read the gateway makes (GetSecretValue), for target credentials
 * (targets/credentials.ts) and the requestState key secret (crypto/keys.ts). The SDK client is
 * imported only when a secret is actually read, and the secret is read in the region its ARN names.
 *
 * A secret holds text (`SecretString`) or bytes (`SecretBinary`); the value is returned as it is
 * stored, and each reader decides what bytes mean for it: a credential is text (UTF-8), key material
 * is any bytes (kept whole as base64).
 */
export type SecretValue = { text: string } | { bytes: Uint8Array };

export type SecretStage = 'AWSCURRENT' | 'AWSPREVIOUS';

/** One version stage of a secret; undefined when that stage does not exist (only AWSPREVIOUS may be missing). */
export type SecretFetcher = (secretId: string, stage: SecretStage) => Promise<SecretValue | undefined>;

export function secretsManagerFetcher(): SecretFetcher {
  return async (secretId, stage) => {
    const { SecretsManagerClient, GetSecretValueCommand, ResourceNotFoundException } = await import(
      '@aws-sdk/client-secrets-manager'
    );
    const client = new SecretsManagerClient({ region: regionOfArn(secretId) });
    try {
      const out = await client.send(new GetSecretValueCommand({ SecretId: secretId, VersionStage: stage }));
      if (out.SecretString !== undefined) return { text: out.SecretString };
      if (out.SecretBinary) return { bytes: out.SecretBinary };
      throw new Error('the secret has no value');
    } catch (error) {
      // A secret never rotated has no AWSPREVIOUS: not an error for the reader that asks for it.
      if (error instanceof ResourceNotFoundException && stage === 'AWSPREVIOUS') return undefined;
      throw error;
    } finally {
      client.destroy();
    }
  };
}

/** The value as text: a binary secret is read as UTF-8. */
export function secretAsText(value: SecretValue): string {
  return 'text' in value ? value.text : Buffer.from(value.bytes).toString('utf8');
}

/** The value as key material: a binary secret is kept whole, as base64. */
export function secretAsKeyMaterial(value: SecretValue): string {
  return 'text' in value ? value.text : Buffer.from(value.bytes).toString('base64');
}
