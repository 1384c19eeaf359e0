import { randomBytes } from 'node:crypto';
import { ENV, readEnvironment } from '../lambda/config/environment';
import { type GatewayConfig, type GatewayConfigInput, parseConfig } from '../lambda/config/schema';
import { createDocumentClient, ensureTable } from '../lambda/state/dynamo-client';
import { type DemoTargets, type DemoTargetsOptions, startDemoTargets } from './demo-targets';
import { startEmbeddedDynamo } from './embedded-dynamodb';
import { refuseOpenCorsWithoutAuth } from './open-cors';

/**
 * What both local deployment forms (`--lambda`, `--web-function`) prepare before their emulator starts,
 * and what they give the gateway's environments, as the CDK stack gives them in AWS.
 */

export interface LocalDeploymentOptions {
  config?: GatewayConfigInput;
  /** Default: an embedded dynalite in this process, as for `npm start`. */
  dynamodbEndpoint?: string;
  dynamodbPort?: number;
  /** Use the demo targets `demo` and `demo-modern`, as `npm start` does (default true). */
  demo?: boolean;
  demoTargets?: DemoTargetsOptions;
  /** Where the environments' output lines go (default: stderr). */
  log?: (line: string) => void;
}

export interface LocalDeployment {
  /** The validated configuration, with the demo targets and one requestState key for all environments. */
  config: GatewayConfig;
  /** No requestState key was configured: one was made for this run's environments. */
  requestStateKeyGenerated: boolean;
  dynamodbEndpoint: string;
  demo?: DemoTargets;
  log: (line: string) => void;
}

/**
 * Checks the environment and the configuration (once, here, not in each environment), starts DynamoDB
 * and the demo targets when asked (their closers go to `closers`), and makes the table, as the stack
 * does in AWS (locally it may start without: 2026-07-28 requests never touch DynamoDB).
 */
export async function prepareLocalDeployment(
  options: LocalDeploymentOptions,
  closers: Array<() => Promise<void> | void>,
): Promise<LocalDeployment> {
  // Before anything starts: the front end serves on this machine as `npm start` does.
  readEnvironment();
  refuseOpenCorsWithoutAuth(parseConfig(options.config ?? {}));
  let endpoint = options.dynamodbEndpoint;
  if (!endpoint) {
    const embedded = await startEmbeddedDynamo(options.dynamodbPort);
    closers.push(embedded.close);
    endpoint = embedded.endpoint;
  }
  const raw: GatewayConfigInput = { ...options.config, targets: [...(options.config?.targets ?? [])] };
  let demo: DemoTargets | undefined;
  if (options.demo ?? true) {
    demo = await startDemoTargets(options.demoTargets);
    closers.push(demo.close);
    for (const target of demo.targets) {
      if (!raw.targets!.some((configured) => configured.name === target.name)) raw.targets!.push(target);
    }
  }
  const parsed = parseConfig(raw);
  const config = withDeploymentKeys(parsed);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const dynamodbEndpoint = endpoint;
  await ensureTable(createDocumentClient({ endpoint }), config.tableName).catch((error: Error) =>
    log(`DynamoDB not reachable at start-up (${dynamodbEndpoint}): ${error.message}`),
  );
  return { config, requestStateKeyGenerated: config !== parsed, dynamodbEndpoint, demo, log };
}

/** Runs the closers in reverse order (what started last stops first), each failure ignored. */
export async function closeInReverse(closers: Array<() => Promise<void> | void>): Promise<void> {
  for (const close of closers.reverse()) await Promise.resolve(close()).catch(() => undefined);
  closers.length = 0;
}

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
