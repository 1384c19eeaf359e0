import { z } from 'zod';
import { type GatewayConfig, type GatewayConfigInput, GatewayConfigSchema } from '../lambda/config/schema';
import { suggestName } from './config/suggest';

/**
 * CDK context → validated settings. Every field of the gateway configuration schema is a context key
 * of the same name (`-c sessionTimeoutSeconds=7200`, or `"context"` in cdk.json), plus the deployment
 * keys below. Values given with `-c` arrive as strings; numbers, lists and objects are parsed as JSON
 * (`-c targets='[{"name":"docs","url":"https://..."}]'`). Invalid context throws a `ContextError`
 * that names the key, so `cdk synth` fails before anything is built.
 */

/** CloudWatch Logs retention values (days); 9999 = never expire. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653, 9999,
] as const;

/** A Secrets Manager secret ARN including its 6-character suffix; wildcards are refused. */
export const FULL_SECRET_ARN_PATTERN =
  /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$/;

/** A secret or environment reference inside the gateway configuration, with its path. */
export interface ConfigReference {
  path: string[];
  kind: 'secretArn' | 'fromEnv';
  value: string;
}

/**
 * Every Secrets Manager ARN (`secretArn`, `…SecretArn` fields) and environment reference (`fromEnv`)
 * in a configuration, at any depth: target headers, OAuth client credentials, the requestState key.
 * Walking the value rather than naming fields keeps this right as the schema grows.
 */
export function configReferences(value: unknown, path: string[] = []): ConfigReference[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => configReferences(item, [...path, String(index)]));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, child]): ConfigReference[] => {
    const at = [...path, key];
    if (typeof child === 'string' && (key === 'secretArn' || key.endsWith('SecretArn')))
      return [{ path: at, kind: 'secretArn', value: child }];
    if (typeof child === 'string' && key === 'fromEnv') return [{ path: at, kind: 'fromEnv', value: child }];
    return configReferences(child, at);
  });
}

const retentionDays = z
  .number()
  .int()
  .refine((days) => (LOG_RETENTION_DAYS as readonly number[]).includes(days), {
    message: `one of ${LOG_RETENTION_DAYS.join(', ')}`,
  });

/**
 * CodeDeploy's predefined Lambda traffic-shifting configurations (without the `CodeDeployDefault.Lambda`
 * prefix). `none` moves the `live` alias to the new version at once, without CodeDeploy.
 */
export const GRADUAL_DEPLOYMENTS = [
  'none',
  'AllAtOnce',
  'Canary10Percent5Minutes',
  'Canary10Percent10Minutes',
  'Canary10Percent15Minutes',
  'Canary10Percent30Minutes',
  'Linear10PercentEvery1Minute',
  'Linear10PercentEvery2Minutes',
  'Linear10PercentEvery3Minutes',
  'Linear10PercentEvery10Minutes',
] as const;
export type GradualDeployment = (typeof GRADUAL_DEPLOYMENTS)[number];

/**
 * An existing VPC to attach the function to, by id only: synthesis stays offline (no lookups).
 * Without `securityGroupIds` the stack creates a security group that allows all outbound traffic.
 */
export const VpcContextSchema = z.strictObject({
  vpcId: z.string().regex(/^vpc-[0-9a-f]{8,17}$/, 'a VPC id (vpc-…)'),
  subnetIds: z
    .array(z.string().regex(/^subnet-[0-9a-f]{8,17}$/, 'a subnet id (subnet-…)'))
    .min(1, 'at least one subnet (private subnets in two or more Availability Zones are recommended)'),
  securityGroupIds: z
    .array(z.string().regex(/^sg-[0-9a-f]{8,17}$/, 'a security group id (sg-…)'))
    .min(1)
    .optional(),
});
export type VpcContext = z.output<typeof VpcContextSchema>;

/**
 * How the gateway is deployed: `functionUrl` (a Lambda function behind a streaming function URL, one
 * request per execution environment) or `webFunction` (a Lambda Web Function: the gateway's own HTTP
 * server, many requests per environment, behind the Web Function's endpoint).
 */
export const DEPLOYMENT_FORMS = ['functionUrl', 'webFunction'] as const;
export type DeploymentForm = (typeof DEPLOYMENT_FORMS)[number];
/** `deploymentForm` when the context does not set it. */
export const DEFAULT_DEPLOYMENT_FORM: DeploymentForm = 'functionUrl';
/** The function-URL form's shortest timeout; a Web Function accepts 3 s and up. */
export const FUNCTION_URL_MIN_TIMEOUT_SECONDS = 30;

/** The defaults of the deployment keys a Web Function cannot change. */
const FUNCTION_ONLY_DEFAULTS = {
  memorySize: 1024,
  architecture: 'arm64',
  gradualDeployment: 'none',
  tracing: 'off',
} as const;

/** Deployment knobs (not part of the gateway's runtime configuration). Defaults live here. */
const DeploymentContextFields = z.strictObject({
  /** CloudFormation stack name. */
  stackName: z
    .string()
    .regex(
      /^[A-Za-z][A-Za-z0-9-]{0,127}$/,
      'a CloudFormation stack name (letters, digits, hyphens; starts with a letter)',
    )
    .default('McpGateway'),
  /** Lambda memory (MB); CPU scales with it. */
  memorySize: z.number().int().min(128).max(10240).default(FUNCTION_ONLY_DEFAULTS.memorySize),
  architecture: z.enum(['arm64', 'x86_64']).default(FUNCTION_ONLY_DEFAULTS.architecture),
  /**
   * Lambda timeout (functionUrl: 30–900; webFunction: 3–900, the longest any request may run); elicitations
   * wait on people, so the 15-minute maximum is the default of both forms.
   */
  timeoutSeconds: z.number().int().min(3).max(900).default(900),
  logRetentionDays: retentionDays.default(30),
  /** Reserved concurrency (caps and guarantees concurrent executions); unset = shared account pool. */
  reservedConcurrency: z.number().int().min(1).max(10000).optional(),
  /** E-mail subscribed to the alarm topic; unset = alarms without notifications. */
  alarmEmail: z.email('an e-mail address').optional(),
  /** What happens to the table and log group when the stack is deleted. */
  removalPolicy: z.enum(['retain', 'destroy']).default('retain'),
  /** Secrets Manager secrets the function may read (full ARNs); later used for outbound credentials. */
  secretArns: z
    .array(
      z
        .string()
        .regex(
          FULL_SECRET_ARN_PATTERN,
          'a full Secrets Manager secret ARN (with its 6-character suffix), no wildcards',
        ),
    )
    .default([]),
  /** Where the function reads its configuration: the GATEWAY_CONFIG variable (4 KB) or AWS AppConfig. */
  configSource: z.enum(['environment', 'appconfig']).default('environment'),
  /** How a new version reaches the `live` alias: at once, or shifted by CodeDeploy with alarm rollback. */
  gradualDeployment: z.enum(GRADUAL_DEPLOYMENTS).default(FUNCTION_ONLY_DEFAULTS.gradualDeployment),
  /** Attach the function to these subnets of an existing VPC. */
  vpc: VpcContextSchema.optional(),
  /** AWS X-Ray active tracing (needs X-Ray permissions on Resource "*"). */
  tracing: z.enum(['off', 'active']).default(FUNCTION_ONLY_DEFAULTS.tracing),
  /** `functionUrl` (unset) or `webFunction`; unset rather than defaulted, so the settings of the default form stay as they were. */
  deploymentForm: z.enum(DEPLOYMENT_FORMS).optional(),
  /** webFunction only: requests one execution environment serves at once (unset: 64). */
  maxConcurrencyPerEnvironment: z.number().int().min(1).max(128).optional(),
});

/**
 * The keys that apply to one deployment form only, each refused with the reason when set for the other
 * one (set to anything but its default: cdk.json lists the defaults).
 */
function checkDeploymentForm(settings: z.output<typeof DeploymentContextFields>, context: z.RefinementCtx): void {
  const refuse = (key: string, message: string) => context.addIssue({ code: 'custom', path: [key], message });
  if ((settings.deploymentForm ?? DEFAULT_DEPLOYMENT_FORM) === 'functionUrl') {
    if (settings.timeoutSeconds < FUNCTION_URL_MIN_TIMEOUT_SECONDS) {
      refuse(
        'timeoutSeconds',
        `must be at least ${FUNCTION_URL_MIN_TIMEOUT_SECONDS} with deploymentForm "functionUrl" (a Web Function, deploymentForm "webFunction", accepts 3 to 900)`,
      );
    }
    if (settings.maxConcurrencyPerEnvironment !== undefined) {
      refuse(
        'maxConcurrencyPerEnvironment',
        'applies only to deploymentForm "webFunction" (a function URL invocation serves one request per execution environment); set -c deploymentForm=webFunction or remove the key',
      );
    }
    return;
  }
  const form = 'not supported with deploymentForm "webFunction"';
  if (settings.memorySize !== FUNCTION_ONLY_DEFAULTS.memorySize) {
    refuse('memorySize', `${form}: every Web Function execution environment has 2 GB; remove the key`);
  }
  if (settings.architecture !== FUNCTION_ONLY_DEFAULTS.architecture) {
    refuse('architecture', `${form}: Web Functions run on arm64 only`);
  }
  if (settings.reservedConcurrency !== undefined) {
    refuse(
      'reservedConcurrency',
      `${form}: a Web Function has no reserved concurrency; maxConcurrencyPerEnvironment sets how many requests one environment serves at once`,
    );
  }
  if (settings.gradualDeployment !== FUNCTION_ONLY_DEFAULTS.gradualDeployment) {
    refuse(
      'gradualDeployment',
      `${form}: a Web Function has no versions or aliases for CodeDeploy to shift; a deployment creates a new revision, which its endpoint serves at once (use "none")`,
    );
  }
  if (settings.tracing !== FUNCTION_ONLY_DEFAULTS.tracing) {
    refuse('tracing', `${form}: a Web Function revision has no X-Ray active tracing setting (use "off")`);
  }
  if (settings.vpc !== undefined) {
    refuse(
      'vpc',
      `${form}: a Web Function reaches a VPC through a Lambda network connector (egressNetworkConnector), which this stack does not create; use deploymentForm "functionUrl" to attach the gateway to a VPC`,
    );
  }
}

/** The deployment keys, checked together for the chosen deployment form. */
export const DeploymentContextSchema = DeploymentContextFields.superRefine(checkDeploymentForm);

export type DeploymentSettings = z.output<typeof DeploymentContextSchema>;

/** The context keys that are gateway configuration fields (all of them, taken from the schema). */
export const CONFIG_CONTEXT_KEYS = Object.keys(GatewayConfigSchema.shape) as Array<keyof GatewayConfigInput>;
/** The deployment context keys. */
export const DEPLOYMENT_CONTEXT_KEYS = Object.keys(DeploymentContextSchema.shape) as Array<keyof DeploymentSettings>;
export const ALL_CONTEXT_KEYS: readonly string[] = [...CONFIG_CONTEXT_KEYS, ...DEPLOYMENT_CONTEXT_KEYS];

export interface GatewayContext {
  /** The validated gateway configuration (written to the function as GATEWAY_CONFIG). */
  config: GatewayConfig;
  /** The configuration as given, before defaults (passed to the construct, which validates again). */
  configInput: GatewayConfigInput;
  /** True when `tableName` was given: it becomes the table's physical name; otherwise CloudFormation names it. */
  tableNameGiven: boolean;
  deployment: DeploymentSettings;
}

export class ContextError extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`Invalid CDK context "${key}": ${message}`);
    this.name = 'ContextError';
  }
}

/** Anything that answers context look-ups: a construct's `node`, or a plain record in tests. */
export type ContextSource = { tryGetContext(key: string): unknown; getAllContext?(): Record<string, unknown> };

type ZodDef = { type: string; innerType?: z.ZodType; element?: z.ZodType };

/** The zod definition under any default/optional wrappers. */
function baseDef(schema: z.ZodType): ZodDef {
  let def = (schema as unknown as { _zod: { def: ZodDef } })._zod.def;
  while ((def.type === 'default' || def.type === 'optional' || def.type === 'prefault') && def.innerType) {
    def = (def.innerType as unknown as { _zod: { def: ZodDef } })._zod.def;
  }
  return def;
}

/**
 * `-c key=value` gives strings: parse them as JSON unless the field is itself a string.
 * An empty string (or null) means "not set", so the default applies.
 */
function coerce(key: string, value: unknown, schema: z.ZodType): unknown {
  if (value === null || value === '') return undefined;
  if (typeof value !== 'string') return value;
  const def = baseDef(schema);
  const type = def.type;
  if (type === 'string' || type === 'enum' || type === 'literal') return value;
  const text = value.trim();
  // A list of words may also be given comma-separated: -c supportedVersions=2025-11-25,2026-07-28
  const elementType = type === 'array' && def.element ? baseDef(def.element).type : undefined;
  if ((elementType === 'string' || elementType === 'enum') && !text.startsWith('[')) {
    return text
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean);
  }
  try {
    return JSON.parse(text);
  } catch {
    // A field that takes a word or another value (`streamRelease`: a mode, or the booleans of earlier
    // releases) gets the word as it is; the schema then names what it accepts.
    if (type === 'union' || type === 'pipe') return value;
    throw new ContextError(key, `expected JSON (${type}), got ${JSON.stringify(value)}`);
  }
}

function describeIssues(error: z.ZodError, received: Record<string, unknown>): never {
  const issue = error.issues[0];
  const key =
    issue.code === 'unrecognized_keys' && issue.path.length === 0 ? issue.keys[0] : String(issue.path[0] ?? '(root)');
  const where = issue.path.length > 1 ? ` at ${issue.path.map(String).join('.')}` : '';
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more problem(s))` : '';
  // Echo only plain values: structured ones may hold credentials (headers, requestStateKeys).
  const value = received[key];
  const got = value !== undefined && typeof value !== 'object' ? `; got ${JSON.stringify(value).slice(0, 200)}` : '';
  throw new ContextError(key, `${issue.message}${where}${got}${more}`);
}

/**
 * Context keys that belong to the CDK itself rather than to this app: feature flags (`@aws-cdk/…:…`),
 * internal and lookup keys (anything with a colon: `aws:cdk:…`, `availability-zones:…`), and the CLI's
 * own plain keys.
 */
const CDK_PLAIN_KEYS = new Set(['cli-telemetry', 'acknowledged-issue-numbers', 'notices']);
export function isCdkOwnContextKey(key: string): boolean {
  return key.includes(':') || key.startsWith('@') || CDK_PLAIN_KEYS.has(key);
}

/** The known key a mistyped one most likely meant, if any is close enough to suggest. */
export function suggestContextKey(key: string): string | undefined {
  return suggestName(key, ALL_CONTEXT_KEYS);
}

/** Refuses any key this app does not know (`-c sesionTimeoutSeconds=1200` would otherwise be ignored). */
function checkUnknownKeys(all: Record<string, unknown>): void {
  for (const key of Object.keys(all)) {
    if (ALL_CONTEXT_KEYS.includes(key) || isCdkOwnContextKey(key)) continue;
    const suggestion = suggestContextKey(key);
    throw new ContextError(
      key,
      suggestion
        ? `unknown key; did you mean "${suggestion}"?`
        : 'unknown key; the context keys are listed in docs/deploy.md, section "Context"',
    );
  }
}

/** Reads and validates every context key; throws a ContextError naming the first bad key. */
export function readGatewayContext(source: ContextSource): GatewayContext {
  if (source.getAllContext) checkUnknownKeys(source.getAllContext());

  const configInput: Record<string, unknown> = {};
  for (const key of CONFIG_CONTEXT_KEYS) {
    const value = coerce(key, source.tryGetContext(key), GatewayConfigSchema.shape[key]);
    if (value !== undefined) configInput[key] = value;
  }
  const deploymentInput: Record<string, unknown> = {};
  for (const key of DEPLOYMENT_CONTEXT_KEYS) {
    const value = coerce(key, source.tryGetContext(key), DeploymentContextSchema.shape[key]);
    if (value !== undefined) deploymentInput[key] = value;
  }

  const config = GatewayConfigSchema.safeParse(configInput);
  if (!config.success) describeIssues(config.error, configInput);
  const deployment = DeploymentContextSchema.safeParse(deploymentInput);
  if (!deployment.success) describeIssues(deployment.error, deploymentInput);

  for (const reference of configReferences(config.data)) {
    const where = reference.path.join('.');
    if (reference.kind === 'secretArn' && !FULL_SECRET_ARN_PATTERN.test(reference.value)) {
      throw new ContextError(
        reference.path[0],
        `${where} must be a full Secrets Manager secret ARN with its 6-character suffix (the function is granted exactly that secret); got ${JSON.stringify(reference.value)}`,
      );
    }
    if (reference.kind === 'fromEnv') {
      throw new ContextError(
        reference.path[0],
        `${where}: {"fromEnv": ${JSON.stringify(reference.value)}} cannot be resolved in the Lambda deployment (the stack sets no such variable); use {"secretArn": "..."}`,
      );
    }
  }

  // A pending request must be able to expire while its invocation still runs, or the relay is killed
  // first — unless waiting calls may be released (streamRelease, at the latest before the deadline):
  // then the wait may outlast the invocation.
  if (
    config.data.streamRelease === 'never' &&
    config.data.pendingRequestTimeoutSeconds >= deployment.data.timeoutSeconds
  ) {
    throw new ContextError(
      'pendingRequestTimeoutSeconds',
      `must be less than timeoutSeconds (${deployment.data.timeoutSeconds}) while streamRelease is "never"; got ${config.data.pendingRequestTimeoutSeconds}`,
    );
  }

  return {
    config: config.data,
    configInput: configInput as GatewayConfigInput,
    tableNameGiven: configInput.tableName !== undefined,
    deployment: deployment.data,
  };
}

/** The documented default of every context key (`undefined` = unset by default). */
export function contextDefaults(): Record<string, unknown> {
  const config = GatewayConfigSchema.parse({});
  const deployment = DeploymentContextSchema.parse({});
  return { ...config, tableName: undefined, ...deployment, deploymentForm: DEFAULT_DEPLOYMENT_FORM };
}
