import { z } from 'zod';

/**
 * The one configuration schema, shared by the local server (`--config FILE`), the Lambda
 * (`GATEWAY_CONFIG` environment variable written by CDK) and CDK context. Every default lives here.
 */

export const ALL_PROTOCOL_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'] as const;
export const DEFAULT_SUPPORTED_VERSIONS = ['2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'];

const targetName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9-]+$/, 'letters, digits and hyphens only');

const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'an HTTP header name');

/** True for hosts that never leave the machine: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127(?:\.\d{1,3}){3}$/.test(host);
}

/** An https URL, or http on a loopback host only (local issuers and token endpoints in tests). */
const secureUrl = z
  .url({ protocol: /^https?$/, error: 'an http(s) URL' })
  .refine((value) => value.startsWith('https:') || isLoopbackHost(new URL(value).hostname), {
    error: 'must be https (http is accepted only for a loopback host: 127.0.0.1, ::1, localhost)',
  });

export const TargetConfigSchema = z.strictObject({
  name: targetName,
  url: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }),
  /** Static headers sent to this target (outbound credentials). Never the client's token. */
  headers: z.record(headerName, z.string()).optional(),
  /**
   * Which protocol era the target speaks: 'auto' (default) probes once with `server/discover` and
   * falls back to `initialize`; 'legacy' (2025-11-25 and earlier) or 'modern' (2026-07-28) skip the probe.
   */
  era: z.enum(['auto', 'legacy', 'modern']).optional(),
});

/** A tool pattern for `confirmTools`: `target___tool`, or `target___*` for every tool of a target. */
const confirmToolPattern = z
  .string()
  .regex(/^[A-Za-z0-9-]+___(?:\*|[A-Za-z0-9_.\-/]+)$/, 'a pattern "target___tool" or "target___*"');

/** Secret material for sealing requestState; any string of at least 32 characters (a key is derived from it). */
const stateSecret = z.string().min(32, 'at least 32 characters of secret material');

const claimValues = z.array(z.string().min(1));

/**
 * Inbound authentication. `none`: every caller is `anonymous` (or the function URL's IAM caller);
 * `jwt`: an OAuth access token (JWT) checked against the issuer's keys; `iam`: the function URL's
 * AWS_IAM (SigV4) auth, the caller's IAM principal ARN is the principal. Empty lists = no check.
 */
export const AuthConfigSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('none') }),
  z.strictObject({
    type: z.literal('jwt'),
    /** The issuer's OpenID discovery document (`…/.well-known/openid-configuration`). */
    discoveryUrl: secureUrl,
    /** Accept a token only when one of its `aud` values is listed. */
    allowedAudiences: claimValues.optional(),
    /** Accept a token only when its `client_id` (or `azp`) is listed. */
    allowedClients: claimValues.optional(),
    /** Accept a token only when it carries at least one of these scopes (`scope` or `scp`). */
    allowedScopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'a scope token')).optional(),
  }),
  z.strictObject({ type: z.literal('iam') }),
]);

export const GatewayConfigSchema = z
  .strictObject({
    targets: z.array(TargetConfigSchema).default([]),
    toolNamePrefix: z.enum(['always', 'conditional', 'never']).default('always'),
    sessionTimeoutSeconds: z.number().int().min(900).max(28800).default(3600),
    pendingRequestTimeoutSeconds: z.number().int().min(1).max(3600).default(300),
    supportedVersions: z
      .array(z.enum(ALL_PROTOCOL_VERSIONS))
      .min(1)
      .default(DEFAULT_SUPPORTED_VERSIONS as Array<(typeof ALL_PROTOCOL_VERSIONS)[number]>),
    tableName: z.string().regex(/^[A-Za-z0-9_.-]{3,255}$/, 'a DynamoDB table name').default('mcp-gateway'),
    logLevel: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']).default('INFO'),
    auth: AuthConfigSchema.default({ type: 'none' }),
    /** Largest accepted request body; a function URL refuses more than 6 MB anyway. */
    maxBodyBytes: z.number().int().min(1024).max(6 * 1024 * 1024).default(4 * 1024 * 1024),
    /** Tools the gateway itself asks the user to confirm (form elicitation) before forwarding. */
    confirmTools: z.array(confirmToolPattern).default([]),
    /**
     * Keys that seal 2026-07-28 `requestState`: `current` seals and opens, `previous` still opens
     * during a rotation. In AWS prefer `requestStateSecretArn`; without either, a random key is
     * generated at start (fine for one process, wrong for a fleet).
     */
    requestStateKeys: z.strictObject({ current: stateSecret, previous: stateSecret.optional() }).optional(),
    /** A Secrets Manager secret holding the keys: JSON `{"current": "...", "previous": "..."}` or a plain string. */
    requestStateSecretArn: z
      .string()
      .regex(/^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$/, 'a Secrets Manager secret ARN')
      .optional(),
    /** How long a sealed requestState stays valid (the client must retry within it). */
    requestStateTtlSeconds: z.number().int().min(30).max(3600).default(600),
  })
  .superRefine((config, ctx) => {
    const seen = new Set<string>();
    config.targets.forEach((target, index) => {
      if (seen.has(target.name)) {
        ctx.addIssue({ code: 'custom', path: ['targets', index, 'name'], message: `duplicate target name "${target.name}"` });
      }
      seen.add(target.name);
    });
  });

export type GatewayConfigInput = z.input<typeof GatewayConfigSchema>;
export type GatewayConfig = z.output<typeof GatewayConfigSchema>;
export type TargetConfig = z.output<typeof TargetConfigSchema>;
export type AuthConfig = z.output<typeof AuthConfigSchema>;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Validates raw configuration; the error names every offending field by its path. */
export function parseConfig(raw: unknown, source = 'configuration'): GatewayConfig {
  const result = GatewayConfigSchema.safeParse(raw);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const base = issue.path.map(String);
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [undefined];
    return keys
      .map((key) => `${[...base, ...(key ? [key] : [])].join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
  });
  throw new ConfigError(`invalid ${source}: ${problems.join('; ')}`);
}
