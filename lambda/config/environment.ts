import * as z from 'zod';
import { ConfigError, SECRET_ARN_PATTERN } from './schema';

/**
 * The one place the gateway's own environment variables are named and validated, for the runtime
 * (`lambda/`) and the CDK construct that writes them (`lib/`). A malformed value fails at start with
 * a message naming the variable, instead of becoming `NaN` timers or an unknown log level later.
 * Not here: `fromEnv` references of the configuration (named by the configuration, checked when the
 * gateway is built), the AWS runtime's own variables, and `npm start -- --lambda`'s LAMBDA_* settings
 * (`dev/lambda-mode/cli.ts`).
 */
export const ENV = {
  /** The configuration as JSON (lambda/config/source.ts). */
  config: 'GATEWAY_CONFIG',
  /** `<application>/<environment>/<profile>` of an AppConfig configuration instead. */
  appConfig: 'GATEWAY_APPCONFIG',
  /** The table the stack made, whatever the configuration says. */
  tableName: 'GATEWAY_TABLE_NAME',
  /** Secrets Manager secret holding the requestState keys. */
  requestStateSecretArn: 'GATEWAY_REQUEST_STATE_SECRET_ARN',
  /** `function-url`: the function URL answers CORS, the function adds no CORS headers. */
  cors: 'GATEWAY_CORS',
  /** `active`: X-Ray active tracing with Powertools Tracer. */
  tracing: 'GATEWAY_TRACING',
  /** Overrides the configured `logLevel` without a redeploy (tests, operators). */
  logLevel: 'GATEWAY_LOG_LEVEL',
  /** SSE keep-alive comment interval (default 15 s). */
  keepAliveMs: 'GATEWAY_KEEPALIVE_MS',
  /** The holder's lease on its waiting records (default 30 s; fault tests shorten it). */
  holderLeaseMs: 'GATEWAY_HOLDER_LEASE_MS',
  /** A DynamoDB API endpoint (local runs only). */
  dynamodbEndpoint: 'DYNAMODB_ENDPOINT',
  /**
   * The Web Function's timeout (seconds), which cuts every request still open: each request's deadline,
   * so a call that waits is released (or ended) before it. The function-URL form reads the invocation's own.
   */
  requestTimeoutSeconds: 'GATEWAY_REQUEST_TIMEOUT_SECONDS',
  /** Powertools: the metrics namespace (metrics are written only when it is set) and the service name. */
  metricsNamespace: 'POWERTOOLS_METRICS_NAMESPACE',
  serviceName: 'POWERTOOLS_SERVICE_NAME',
} as const;

export const DEFAULT_KEEPALIVE_MS = 15_000;
export const DEFAULT_HOLDER_LEASE_MS = 30_000;

/** A whole number of milliseconds within bounds, given as decimal digits. */
const milliseconds = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `a whole number of milliseconds from ${min} to ${max}`)
    .transform(Number)
    .pipe(
      z
        .number()
        .min(min, `a whole number of milliseconds from ${min} to ${max}`)
        .max(max, `a whole number of milliseconds from ${min} to ${max}`),
    );

const EnvironmentSchema = z.object({
  [ENV.config]: z.string().optional(),
  [ENV.appConfig]: z.string().optional(),
  [ENV.tableName]: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{3,255}$/, 'a DynamoDB table name')
    .optional(),
  [ENV.requestStateSecretArn]: z.string().regex(SECRET_ARN_PATTERN, 'a Secrets Manager secret ARN').optional(),
  [ENV.cors]: z.enum(['function-url'], 'unset, or "function-url"').optional(),
  [ENV.tracing]: z.enum(['active'], 'unset, or "active"').optional(),
  [ENV.logLevel]: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'], 'DEBUG, INFO, WARN, ERROR or SILENT').optional(),
  // Keep-alives shorter than 50 ms only cost; longer than 10 minutes, and proxies close the idle stream.
  [ENV.keepAliveMs]: milliseconds(50, 600_000).optional(),
  // Shorter than 300 ms and renewals (a third of it) race DynamoDB's latency; never longer than the default.
  [ENV.holderLeaseMs]: milliseconds(300, DEFAULT_HOLDER_LEASE_MS).optional(),
  [ENV.dynamodbEndpoint]: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }).optional(),
  [ENV.requestTimeoutSeconds]: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'seconds from 1 to 900')
    .transform(Number)
    .pipe(z.number().min(1, 'seconds from 1 to 900').max(900, 'seconds from 1 to 900'))
    .optional(),
  [ENV.metricsNamespace]: z
    .string()
    .regex(/^[0-9A-Za-z.\-_/#:]{1,255}$/, 'a CloudWatch namespace (1–255 of 0-9 A-Z a-z . - _ / # :)')
    .optional(),
  [ENV.serviceName]: z.string().min(1).max(255).optional(),
});

type Parsed = z.output<typeof EnvironmentSchema>;

/** The validated environment, by the keys of ENV; unset (or empty) variables are absent. */
export type GatewayEnvironment = { [K in keyof typeof ENV]?: NonNullable<Parsed[(typeof ENV)[K]]> };

/** The gateway's variables of `env` (an empty value counts as unset, as a shell's `NAME=` means). */
function ownVariables(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const own: Record<string, string> = {};
  for (const name of Object.values(ENV)) {
    const value = env[name];
    if (value !== undefined && value !== '') own[name] = value;
  }
  return own;
}

/**
 * Validates the gateway's variables of `env`. Every malformed one is named, with what it must be and
 * what it was (values are short settings; GATEWAY_CONFIG's document is never echoed, it is checked by
 * the configuration schema).
 */
export function readEnvironment(env: Readonly<Record<string, string | undefined>> = process.env): GatewayEnvironment {
  const result = EnvironmentSchema.safeParse(ownVariables(env));
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const name = String(issue.path[0]);
      return `${name}: must be ${issue.message}, got ${JSON.stringify(env[name])}`;
    });
    throw new ConfigError(`invalid environment: ${problems.join('; ')}`);
  }
  const environment: Record<string, unknown> = {};
  for (const [key, name] of Object.entries(ENV)) {
    const value = result.data[name];
    if (value !== undefined) environment[key] = value;
  }
  return environment as GatewayEnvironment;
}

/**
 * The holder lease for a module-level constant (state/records.ts), read when that module loads. It
 * never throws there — an import-time failure would be a stack trace, not a message — because every
 * entry point validates the whole environment with readEnvironment() before serving.
 */
export function holderLeaseMsOf(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const parsed = EnvironmentSchema.shape[ENV.holderLeaseMs].safeParse(env[ENV.holderLeaseMs] || undefined);
  return (parsed.success ? parsed.data : undefined) ?? DEFAULT_HOLDER_LEASE_MS;
}
