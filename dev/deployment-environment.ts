import { randomBytes } from 'node:crypto';
import { ENV } from '../lambda/config/environment';
import type { GatewayConfig } from '../lambda/config/schema';

/**
 * What both local deployment forms (`--lambda`, `--web-function`) give the gateway's environments, as the
 * CDK stack gives them in AWS.
 */

/**
 * The function's environment as the CDK stack writes it: the validated configuration in
 * GATEWAY_CONFIG, the metrics settings and source maps; plus, locally, the DynamoDB endpoint and the
 * variables that `{"fromEnv": …}` references name (the stack's `environment` prop), taken from here.
 */
export function functionEnvironment(
  config: GatewayConfig,
  dynamodbEndpoint: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  const environment: Record<string, string> = {
    GATEWAY_CONFIG: JSON.stringify(config),
    POWERTOOLS_METRICS_NAMESPACE: 'McpGateway',
    POWERTOOLS_SERVICE_NAME: 'McpGateway',
    NODE_OPTIONS: '--enable-source-maps',
    DYNAMODB_ENDPOINT: dynamodbEndpoint,
  };
  for (const name of referencedVariables(config)) {
    const value = process.env[name];
    if (value !== undefined) environment[name] = value;
  }
  for (const name of [ENV.logLevel, ENV.keepAliveMs, ENV.holderLeaseMs]) {
    const value = process.env[name];
    if (value !== undefined) environment[name] = value;
  }
  return { ...environment, ...extra };
}

/**
 * A deployment shares one requestState key (the stack generates a secret); every environment here
 * must too, or a 2026-07-28 retry that reaches another environment is refused. So when none is
 * configured, one is made per front end, as a deployment would have one.
 */
export function withDeploymentKeys(config: GatewayConfig): GatewayConfig {
  if (config.requestStateKeys || config.requestStateSecretArn) return config;
  return { ...config, requestStateKeys: { current: randomBytes(32).toString('base64url') } };
}

function referencedVariables(value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) referencedVariables(item, found);
  else if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if (typeof record.fromEnv === 'string') found.add(record.fromEnv);
    for (const item of Object.values(record)) referencedVariables(item, found);
  }
  return found;
}
