import { ENV } from '../config/environment';
import type { GatewayConfig } from '../config/schema';
import { type SecretFetcher, secretAsKeyMaterial, secretsManagerFetcher } from '../config/secrets-manager';
import type { GatewayLogger } from '../observability/logger';
import { type KeySecrets, randomSecret } from './sealed-box';

/**
 * Where the requestState keys come from, resolved once per process (Lambda: once per cold start):
 * 1. `requestStateKeys` in the configuration (local runs, tests);
 * 2. a Secrets Manager secret (`requestStateSecretArn`, or the environment variable
 *    GATEWAY_REQUEST_STATE_SECRET_ARN): its AWSCURRENT version seals, its AWSPREVIOUS version still
 *    opens, so rotating the secret rotates the key without refusing retries in flight. A secret
 *    whose value is JSON `{"current": "...", "previous": "..."}` names both explicitly;
 * 3. otherwise a random key, logged, that only this process knows.
 */

export const SECRET_ARN_ENV = ENV.requestStateSecretArn;

/** Reads one version stage of a secret; undefined when that stage does not exist. */
export type SecretReader = (
  secretId: string,
  versionStage: 'AWSCURRENT' | 'AWSPREVIOUS',
) => Promise<string | undefined>;

/**
 * Keys available without I/O: configured ones, or a random key, with a warning: a deployment's other
 * instances will not know it. (The local server makes its own and says so when it is ready.)
 */
export function keySecretsFromConfig(config: GatewayConfig, logger: GatewayLogger): KeySecrets {
  if (config.requestStateKeys) return config.requestStateKeys;
  logger.warn(
    'no requestState key configured: generated a random one for this process; 2026-07-28 retries that reach another process will be refused (configure requestStateKeys or requestStateSecretArn)',
  );
  return { current: randomSecret() };
}

/** The Lambda's resolution: configuration, then Secrets Manager, then a random key. */
export async function resolveKeySecrets(
  config: GatewayConfig,
  logger: GatewayLogger,
  env: NodeJS.ProcessEnv = process.env,
  reader: SecretReader = secretsManagerReader(),
): Promise<KeySecrets> {
  if (config.requestStateKeys) return config.requestStateKeys;
  const arn = config.requestStateSecretArn ?? env[SECRET_ARN_ENV];
  if (!arn) return keySecretsFromConfig(config, logger);
  const current = await reader(arn, 'AWSCURRENT');
  if (!current) throw new Error(`requestState secret ${arn} has no AWSCURRENT value`);
  const explicit = parseExplicit(current);
  if (explicit) return explicit;
  const previous = await reader(arn, 'AWSPREVIOUS').catch(() => undefined);
  if (current.length < 32) throw new Error(`requestState secret ${arn} is shorter than 32 characters`);
  logger.info('requestState keys loaded from Secrets Manager', { previousKey: previous !== undefined });
  return previous && previous.length >= 32 && !parseExplicit(previous) ? { current, previous } : { current };
}

function parseExplicit(value: string): KeySecrets | undefined {
  if (!value.trimStart().startsWith('{')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  const { current, previous } = (parsed ?? {}) as { current?: unknown; previous?: unknown };
  if (typeof current !== 'string' || current.length < 32)
    throw new Error('requestState secret JSON needs "current" (≥ 32 characters)');
  if (previous !== undefined && (typeof previous !== 'string' || previous.length < 32)) {
    throw new Error('requestState secret JSON: "previous" must be ≥ 32 characters');
  }
  return typeof previous === 'string' ? { current, previous } : { current };
}

/** One stage of the key secret from Secrets Manager (read only when a secret is configured), as key material. */
export function secretsManagerReader(fetch: SecretFetcher = secretsManagerFetcher()): SecretReader {
  return async (secretId, versionStage) => {
    const value = await fetch(secretId, versionStage);
    return value && secretAsKeyMaterial(value);
  };
}
