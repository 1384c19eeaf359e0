// A namespace import lets esbuild drop what the schema does not use (zod's locales and most of its API):
// 459 KiB of zod in the Lambda bundle became 102 KiB, and importing it took 40 % of the cold-start import.
import * as z from 'zod';

/**
 * The one configuration schema, shared by the local server (`--config FILE`), the Lambda
 * (`GATEWAY_CONFIG` environment variable written by CDK) and CDK context. Every default lives here.
 */

import { ALL_PROTOCOL_VERSIONS, DEFAULT_SUPPORTED_VERSIONS } from '../protocol/versions';
import { ClientPatternSchema, DEFAULT_RESUMING_CLIENTS } from './resuming-clients';

export { ALL_PROTOCOL_VERSIONS, DEFAULT_SUPPORTED_VERSIONS };

/** How waiting calls of 2025-11-25 sessions are released (`streamRelease`). */
export const STREAM_RELEASE_MODES = ['proven', 'always', 'never'] as const;
export type StreamReleaseMode = (typeof STREAM_RELEASE_MODES)[number];

const targetName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9-]+$/, 'letters, digits and hyphens only');

const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'an HTTP header name');

/** A Secrets Manager secret ARN (the CDK construct additionally requires the full ARN with its suffix). */
export const SECRET_ARN_PATTERN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$/;
const secretArn = z.string().regex(SECRET_ARN_PATTERN, 'a Secrets Manager secret ARN');

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

/**
 * Credential values are never written inline in deployed configuration: a value is a plain string
 * (non-secret values, local runs), `{"fromEnv": "NAME"}` (an environment variable of the gateway
 * process) or `{"secretArn": "arn:aws:secretsmanager:…"}` (the secret's string; with `"key"`, one
 * field of a JSON secret). `"prefix"` is put in front of the resolved value (e.g. `"Bearer "`).
 */
export const EnvReferenceSchema = z.strictObject({
  fromEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'),
  prefix: z.string().optional(),
});
export const SecretReferenceSchema = z.strictObject({
  secretArn,
  key: z.string().min(1).optional(),
  prefix: z.string().optional(),
});
const REFERENCE_SHAPE = '{"fromEnv": "NAME"} or {"secretArn": "arn:aws:secretsmanager:…", "key"?: "field"}';
export const CredentialReferenceSchema = z.union([EnvReferenceSchema, SecretReferenceSchema], {
  error: REFERENCE_SHAPE,
});
export const CredentialValueSchema = z.union([z.string(), EnvReferenceSchema, SecretReferenceSchema], {
  error: `a string, ${REFERENCE_SHAPE}`,
});

/** OAuth 2.0 client-credentials grant for one target; tokens are cached until shortly before they expire. */
export const OAuthClientCredentialsSchema = z.strictObject({
  tokenUrl: secureUrl,
  clientId: CredentialValueSchema,
  /** Never inline: an environment variable or a Secrets Manager secret. */
  clientSecret: CredentialReferenceSchema,
  scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'a scope token')).optional(),
  /** RFC 8707 resource indicator sent with the token request (e.g. the target's URL). */
  resource: z.url().optional(),
  /** Some authorization servers (Auth0, …) want an `audience` parameter instead. */
  audience: z.string().min(1).optional(),
  /** How the client authenticates at the token endpoint (RFC 6749 §2.3.1). */
  authMethod: z.enum(['client_secret_basic', 'client_secret_post']).default('client_secret_basic'),
});

/**
 * Per-user OAuth to a target (the MCP authorization specification's client side, run by the gateway for
 * each principal): the user connects an account once, in a browser, through URL elicitation; the
 * gateway keeps the tokens per principal and target and calls the target as that user. Discovery is the
 * specification's (RFC 9728 protected-resource metadata → RFC 8414 / OpenID metadata); the client is
 * the pre-registered one when `clientId` is set, else the gateway registers itself (RFC 7591) where
 * the authorization server offers it.
 */
export const UserOAuthSchema = z.strictObject({
  /** A client registered at the target's authorization server for the gateway's callback URL. */
  clientId: CredentialValueSchema.optional(),
  /** Its secret (a confidential client); never inline. Without it the client is public (PKCE only). */
  clientSecret: CredentialReferenceSchema.optional(),
  /** Scopes asked for (default: the protected-resource metadata's `scopes_supported`, else none). */
  scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'a scope token')).optional(),
  /** The target's protected-resource metadata, when it is not at the well-known URL or in its 401. */
  resourceMetadataUrl: secureUrl.optional(),
  /**
   * The authorization server's issuer: pins it, whatever the target's metadata names (a target that
   * publishes none, like GitHub's apps, needs it). Required beside `clientSecret`, which is sent to no other.
   */
  authorizationServer: secureUrl.optional(),
});

/**
 * A tool-name glob for `targets[].tools`: matched against the target's own tool names (before any
 * `target___` prefix). `*` matches any run of characters, `?` one character; everything else is
 * literal, so other glob syntax (`[…]`, `{…}`, `!`) is refused rather than guessed at.
 */
export const TOOL_GLOB_PATTERN = /^[A-Za-z0-9_.\-/*?]{1,128}$/;
const toolGlob = z
  .string()
  .regex(
    TOOL_GLOB_PATTERN,
    'a tool-name glob: letters, digits, "_", "-", ".", "/", with "*" (any run) and "?" (one character); at most 128 characters',
  );

/** Which of a target's tools are exposed: `include` (default: all), then `exclude` removes matches. */
export const ToolFilterSchema = z
  .strictObject({
    include: z
      .array(toolGlob)
      .min(1, 'an empty include list would hide every tool; remove the target instead')
      .optional(),
    exclude: z.array(toolGlob).optional(),
  })
  .refine((filter) => filter.include !== undefined || filter.exclude !== undefined, {
    message: 'give "include", "exclude" or both',
  });

/**
 * What the gateway allows each target: how long it waits for it and how much it reads from it.
 * `targetLimits` holds the defaults; a target's `limits` overrides any of them for that target.
 */
export const TargetLimitsSchema = z.strictObject({
  /**
   * Every request the gateway sends for itself (`initialize`, `server/discover`, `logging/setLevel`,
   * lists): the longest wait for the whole answer. A list also gets it as the budget for the whole
   * listing of one target (opening its session and every page): a late target is left out as a failing one.
   */
  requestTimeoutMs: z.number().int().min(100).max(900_000),
  /**
   * A relayed call (`tools/call`, `prompts/get`, `resources/read`, `completion/complete`): the longest
   * the target may stay silent — no response headers, no byte on the call's stream. A tool may run long
   * as long as it streams something; the clock stands still while a request the target sent to the
   * user (elicitation, sampling, roots) waits for the answer, until the target's next byte.
   */
  callIdleTimeoutMs: z.number().int().min(100).max(900_000),
  /** One message from the target: an SSE event (or a line that never ends), or a JSON body. */
  maxMessageBytes: z
    .number()
    .int()
    .min(1024)
    .max(256 * 1024 * 1024),
  /** One target's listing of one kind (tools, prompts, resources, templates), every page together. */
  maxListItems: z.number().int().min(1).max(1_000_000),
  /** The same listing's size, as JSON. */
  maxListBytes: z
    .number()
    .int()
    .min(1024)
    .max(256 * 1024 * 1024),
});

export const DEFAULT_TARGET_LIMITS: TargetLimits = {
  requestTimeoutMs: 10_000,
  callIdleTimeoutMs: 300_000,
  maxMessageBytes: 16 * 1024 * 1024,
  maxListItems: 10_000,
  maxListBytes: 8 * 1024 * 1024,
};

export const TargetConfigSchema = z.strictObject({
  name: targetName,
  url: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }),
  /**
   * Headers sent to this target (outbound credentials): values are strings or references (see
   * CredentialValueSchema), resolved once per process. Never the client's token.
   */
  headers: z.record(headerName, CredentialValueSchema).optional(),
  /** OAuth 2.0 client credentials: the gateway's own access token for this target, as `Authorization: Bearer`. */
  oauth: OAuthClientCredentialsSchema.optional(),
  /**
   * Per-user OAuth: each principal connects its own account at the target's authorization server
   * (URL elicitation, a browser); the target is called with that principal's token, never another's.
   */
  userOAuth: UserOAuthSchema.optional(),
  /**
   * Which protocol era the target speaks: 'auto' (default) probes once with `server/discover` and
   * falls back to `initialize`; 'legacy' (2025-11-25 and earlier) or 'modern' (2026-07-28) skip the probe.
   */
  era: z.enum(['auto', 'legacy', 'modern']).optional(),
  /** Tool filtering by glob on the target's own tool names; filtered tools are absent and cannot be called. */
  tools: ToolFilterSchema.optional(),
  /** This target's own timeouts and size limits (any of `targetLimits`). */
  limits: TargetLimitsSchema.partial().optional(),
  /**
   * false: a call of this target is not released early while its stream is open (only just before the
   * function timeout, when it would be cut anyway). For a target with an event store that drops what
   * it sends while no stream is attached (TypeScript SDK 1.25–1.29:
   * https://github.com/modelcontextprotocol/typescript-sdk/issues/2151), so a released call's result
   * would be lost. Default true.
   */
  releaseCalls: z.boolean().optional(),
});

/**
 * A browser origin as it appears in the `Origin` header: `scheme://host[:port]`, no path, no trailing
 * slash (the function URL's CORS setting compares it exactly), or `*` for any origin.
 */
export const ORIGIN_PATTERN =
  /^[a-z][a-z0-9+.-]*:\/\/(?:\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)(?::(?:[1-9]\d{0,4}))?$/i;
const origin = z
  .string()
  .max(253)
  .refine(
    (value) => value === '*' || (ORIGIN_PATTERN.test(value) && Number(/:(\d+)$/.exec(value)?.[1] ?? 1) <= 65535),
    {
      message: 'an origin "scheme://host[:port]" (no path, no trailing slash) or "*"',
    },
  );

/** Cross-origin access for browser-based clients (MCP Inspector, web apps). Default: none. */
export const CorsConfigSchema = z.strictObject({
  /** At most 100, the function URL's limit. */
  allowedOrigins: z.array(origin).max(100).default([]),
  /**
   * The local server refuses to start with `allowedOrigins: ["*"]` and auth `none`: any web page the
   * user opens could then call the gateway and its targets (the Host/Origin checks let every origin
   * past). `true` says that is intended. Deployed it changes nothing: with auth `none` the function
   * URL requires SigV4 (AWS_IAM), which a web page cannot sign.
   */
  allowAnyOriginWithoutAuth: z.boolean().default(false),
});

/** The Cedar types a tool argument may be declared as for policies (what a JSON value maps to without loss). */
export const POLICY_ARGUMENT_TYPES = ['String', 'Long', 'Bool', 'Set<String>', 'Set<Long>'] as const;

/**
 * Who may call which tool: Cedar policies evaluated in the gateway (lambda/policy/access-policy.ts
 * says what they read). Validated against the schema the configuration generates at
 * `--check-config`, at `cdk synth` and when the gateway starts.
 */
export const PolicyConfigSchema = z.strictObject({
  /** `enforce` refuses and hides what policy denies; `logOnly` decides and logs, and refuses nothing. */
  mode: z.enum(['enforce', 'logOnly']).default('enforce'),
  /** The policies, in Cedar's own syntax; give each an `@id("…")` to see it named in logs. */
  policies: z.string().min(1).max(1_000_000),
  /**
   * The tool arguments policies read as `context.arguments.NAME`, with their Cedar type; a call whose
   * declared argument has another type is refused, as no policy can reason about it.
   */
  argumentTypes: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'a Cedar identifier'), z.enum(POLICY_ARGUMENT_TYPES))
    .default({}),
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

const KMS_KEY_ARN_PATTERN = /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)\/.+$/;

/**
 * Where per-user connections (`targets[].userOAuth`) are started, proven and kept. The consent link a
 * user opens is the gateway's own page, single-use, sealed to the principal, target and elicitation.
 */
export const ConnectionsConfigSchema = z.strictObject({
  /**
   * The gateway's public base URL (the function URL, or your domain in front of it), for the consent
   * link and each target's OAuth callback (`<publicUrl>/connect/callback/<target>`, register it at that
   * target's authorization server). Default: the origin of the request that needed the connection.
   */
  publicUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** How long a consent link stays usable (the user must finish within it). */
  linkTtlSeconds: z.number().int().min(60).max(3600).default(600),
  /** Stored connections unused this long are removed (DynamoDB TTL), refresh token and all. */
  idleDays: z.number().int().min(1).max(400).default(90),
  /** The KMS key that wraps each stored connection's data key (the CDK stack creates one). */
  kmsKeyArn: z.string().regex(KMS_KEY_ARN_PATTERN, 'a KMS key or alias ARN').optional(),
  /**
   * Without `kmsKeyArn`: the key that wraps each connection's data key (≥ 32 characters; local runs).
   * Default: derived from the requestState keys.
   */
  localKey: z.string().min(32).optional(),
  /**
   * With `auth.type: "jwt"`: the gateway's client at that identity provider, with which the consent
   * page has the user sign in, so that only the principal the link was made for can connect
   * (redirect URI `<publicUrl>/connect/identity`).
   */
  identityLogin: z
    .strictObject({ clientId: CredentialValueSchema, clientSecret: CredentialReferenceSchema.optional() })
    .optional(),
});

/** An origin the gateway may reach: `http(s)://host[:port]`, nothing after it. */
const outboundOrigin = z
  .url({ protocol: /^https?$/, error: 'an http(s) origin' })
  .refine((value) => new URL(value).origin === value.replace(/\/$/, ''), {
    error: 'an origin only: scheme://host[:port], no path, query or credentials',
  });

/**
 * What the gateway may reach of the URLs others choose: a target's protected-resource metadata, an
 * authorization server's metadata and endpoints (lambda/outbound/policy.ts). By default only https URLs
 * whose names resolve to public addresses; the origins the configuration itself names (targets,
 * `userOAuth.authorizationServer`, `userOAuth.resourceMetadataUrl`, the JWT issuer's discovery URL) are
 * trusted as the operator's own choice.
 */
export const OutboundConfigSchema = z.strictObject({
  /**
   * Further origins that may be reached although they are plain http or resolve to a loopback, private
   * or link-local address (an authorization server inside your network, a local one in development).
   * Never the Lambda Runtime API.
   */
  allowedOrigins: z.array(outboundOrigin).max(100).default([]),
  /**
   * The authorization servers (issuer identifiers) per-user targets may send users to; empty: any that
   * passes the policy. A target's own `userOAuth.authorizationServer` is always allowed.
   */
  authorizationServers: z.array(secureUrl).max(100).default([]),
});

export const GatewayConfigSchema = z
  .strictObject({
    targets: z.array(TargetConfigSchema).default([]),
    toolNamePrefix: z.enum(['always', 'conditional', 'never']).default('always'),
    sessionTimeoutSeconds: z.number().int().min(900).max(28800).default(3600),
    pendingRequestTimeoutSeconds: z.number().int().min(1).max(3600).default(300),
    /**
     * Requests of targets (and the gateway's own) waiting for one session's client at once; beyond
     * it a target's request is refused (-32603 TooManyPendingRequests) instead of stored.
     */
    maxPendingRequestsPerSession: z.number().int().min(1).max(1000).default(100),
    /**
     * A 2025 session's standalone GET stream (what targets send outside calls: list changes, resource
     * updates, log messages, requests not tied to a call) is held at most this long, then ended with an
     * SSE `retry` so the client reconnects (an open stream holds a Lambda invocation, so it is bounded;
     * it always ends before the function deadline). 0: no GET stream (405), and the gateway declares
     * no list changes and no resource subscriptions. Short by default, with a long `retry` (SSE
     * polling): the official TS clients open this stream by themselves, and a stream held all the time
     * would bill an invocation for every connected session's whole life.
     */
    clientStreamHoldSeconds: z.number().int().min(0).max(900).default(5),
    /**
     * How long a 2025 call that listens on its target session's GET stream waits, once the target
     * answered, for that stream to be quiet this long (at most 5 times over) before the answer is
     * relayed: a target logs there just before it answers (v1 SDK `sendLoggingMessage(params,
     * sessionId)`), and the two streams are not ordered, so a message can arrive a few milliseconds
     * after the answer; relayed on the call's stream, it would otherwise be lost. While the instance
     * learns (20 calls per target) and for targets seen sending notifications there; 0: no wait.
     */
    targetStreamSettleMs: z.number().int().min(0).max(1000).default(10),
    /** The SSE `retry` (ms) a client GET stream ends with: how soon the client reconnects (polling interval). */
    clientStreamRetryMs: z.number().int().min(0).max(60_000).default(30_000),
    /**
     * Resumable streams (2025-11-25 sessions): how long the events of a client's SSE stream are kept
     * in DynamoDB at most, for a reconnect with `Last-Event-ID` (never past the session's expiry).
     */
    streamLogTtlSeconds: z.number().int().min(60).max(28800).default(3600),
    /** How long a stream's end (a call's final response) is kept after the call ended, for a client that missed it. */
    streamLogRetainSeconds: z.number().int().min(5).max(3600).default(120),
    /** Bytes of events kept per stream; events beyond it are sent without an id and never replayed (the final response always is). */
    streamLogMaxBytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(16 * 1024 * 1024)
      .default(1024 * 1024),
    /**
     * Release while waiting (SSE polling, MCP 2025-11-25): a call of a 2025-11-25 session that waits
     * for the client (an elicitation, sampling, roots, a confirmation) and whose target stream can be
     * resumed (a 2026-07-28 target, or a 2025 target that sends event ids) may end its client stream
     * with an SSE `retry`, so no invocation waits; the client's reconnect (`GET` + `Last-Event-ID`, any
     * instance) goes on with the call. Many clients never reconnect a POST stream the server ended, and
     * a plain SSE parser dispatches a priming event's empty data, so:
     * - `proven` (default): a call is released after `streamReleaseAfterSeconds` only for a client shown
     *   to resume — one matching `streamReleaseClients`, or one that already resumed an ended POST
     *   stream and got what it missed (in this session, or in an earlier one of the same principal and
     *   `clientInfo` within `streamReleaseProofDays`). Every other client's call is held on its open
     *   stream, with no priming event and no `retry` on it; it is released only just before the
     *   function timeout, when the stream would be cut anyway.
     * - `always`: every client's calls are released after `streamReleaseAfterSeconds` (priming events
     *   on every stream), but those of `streamReleaseExcludeClients`.
     * - `never`: every call is held for its whole wait; the function timeout ends it with -32001.
     * The booleans of earlier releases still parse: `true` is `always`, `false` is `never`.
     */
    streamRelease: z
      .union([z.enum(STREAM_RELEASE_MODES), z.boolean()])
      .default('proven')
      .transform((mode): StreamReleaseMode => (mode === true ? 'always' : mode === false ? 'never' : mode)),
    /**
     * Clients trusted to resume an ended POST stream (`streamRelease: "proven"`), by the `clientInfo`
     * they send: `name` exact or with `*` wildcards, `version` (optional) exact, with `*`, or `>=x.y.z`.
     * Setting it replaces the default list (docs/clients.md lists it, with the evidence for each entry).
     */
    streamReleaseClients: z.array(ClientPatternSchema).max(100).default(DEFAULT_RESUMING_CLIENTS),
    /** How long a client seen resuming (principal and clientInfo) stays proven for its later sessions. */
    streamReleaseProofDays: z.number().int().min(1).max(365).default(30),
    /**
     * Read-ahead (legacy-era sessions): a relayed call (tools/call, prompts/get, resources/read,
     * completion/complete) of a session this instance read in the last minute goes to its target while
     * the session is read again, instead of after; the answer waits for that read, and a session found
     * gone, expired or another principal's is answered 404 as always (the call at the target is
     * cancelled). Saves the session read's latency on every call. false: a call leaves only after its read.
     */
    sessionReadAhead: z.boolean().default(true),
    /** How long a waiting call stays held before its stream is released: an answer within it pays no reconnect. */
    streamReleaseAfterSeconds: z.number().min(0).max(900).default(2),
    /** The SSE `retry` (ms) a released stream ends with: how soon the client reconnects, so what an answer may wait for. */
    streamReleaseRetryMs: z.number().int().min(0).max(60_000).default(2000),
    /** `clientInfo.name`s whose streams are never released (a client known not to reconnect after a server-side close). */
    streamReleaseExcludeClients: z.array(z.string().min(1).max(200)).max(100).default([]),
    /**
     * Bridged 2026-07-28 calls (a 2025-only target asking for input) one principal may have waiting
     * for input across all instances (counted in DynamoDB), each holding a target stream open; beyond it
     * the call is refused (429 TooManyBridgedCalls) and cancelled at the target before anything is stored.
     */
    maxBridgedCallsPerPrincipal: z.number().int().min(1).max(1000).default(20),
    /**
     * Open `subscriptions/listen` streams one principal may hold at once on one instance (2026-07-28;
     * counted in memory: that path stores nothing). Each holds a stream, and one at each 2026-07-28
     * target it listens at; beyond it a listen is refused (429) before any target is asked.
     */
    maxListensPerPrincipal: z.number().int().min(1).max(1000).default(10),
    /**
     * Resource URIs one `subscriptions/listen` may name (`notifications.resourceSubscriptions`, each of
     * at most 8000 characters); more is refused (-32602) before any target is asked. A client
     * subscribes to the resources it shows or works on: thousands in one request are an attack.
     */
    maxResourceSubscriptionsPerListen: z.number().int().min(1).max(10_000).default(100),
    /**
     * Task ids one `subscriptions/listen` may name (`notifications.taskIds`, Tasks extension); more is
     * refused (-32602) before any target is asked. Each is unsealed to find its target.
     */
    maxTaskIdsPerListen: z.number().int().min(1).max(10_000).default(100),
    /**
     * Largest outcome (the target's result, or its next round's requests) a bridged 2026-07-28 call
     * hands from the invocation holding it to the client's retry, stored in parts of under 400 KB;
     * beyond it the retry gets a non-retryable 413 `OutcomeTooLarge`.
     */
    maxBridgedOutcomeBytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(16 * 1024 * 1024)
      .default(4 * 1024 * 1024),
    /**
     * Live legacy-era sessions one principal may hold at once, counted across instances (DynamoDB); an
     * `initialize` beyond it is refused with 429 + Retry-After. With auth `none` every caller is one
     * principal (`anonymous`), so this caps the whole gateway.
     */
    maxSessionsPerPrincipal: z.number().int().min(1).max(1_000_000).default(1000),
    /** `initialize` requests one principal may send per minute, counted across instances; beyond it 429 + Retry-After. */
    initializeRatePerMinute: z.number().int().min(1).max(100_000).default(300),
    supportedVersions: z
      .array(z.enum(ALL_PROTOCOL_VERSIONS))
      .min(1)
      .default(DEFAULT_SUPPORTED_VERSIONS as Array<(typeof ALL_PROTOCOL_VERSIONS)[number]>),
    tableName: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{3,255}$/, 'a DynamoDB table name')
      .default('mcp-gateway'),
    /**
     * The longest one DynamoDB operation may take, the SDK's retries included; past it the request
     * answers 503 + Retry-After instead of waiting on a DynamoDB that does not answer. (The SDK itself
     * gives up after 3 attempts of 2 s each, so a bound above about 7 s is never reached.)
     */
    storeOperationTimeoutMs: z.number().int().min(100).max(10_000).default(5000),
    logLevel: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']).default('INFO'),
    /** One INFO line per MCP request when its response ends (lambda/observability/access-log.ts). */
    accessLog: z.boolean().default(true),
    auth: AuthConfigSchema.default({ type: 'none' }),
    /** Largest accepted request body; a function URL refuses more than 6 MB anyway. */
    maxBodyBytes: z
      .number()
      .int()
      .min(1024)
      .max(6 * 1024 * 1024)
      .default(4 * 1024 * 1024),
    /** Per-user OAuth connections (targets[].userOAuth): consent links, their proof, the vault's key. */
    connections: ConnectionsConfigSchema.default({ linkTtlSeconds: 600, idleDays: 90 }),
    /** The outbound policy for URLs targets and authorization servers choose. */
    outbound: OutboundConfigSchema.default({ allowedOrigins: [], authorizationServers: [] }),
    /** Cedar policies: who may list and call which tool. */
    policy: PolicyConfigSchema.optional(),
    /** Tools the gateway itself asks the user to confirm (form elicitation) before forwarding. */
    confirmTools: z.array(confirmToolPattern).default([]),
    /**
     * Keys that seal 2026-07-28 `requestState`: `current` seals and opens, `previous` still opens
     * during a rotation. In AWS prefer `requestStateSecretArn`; without either, a random key is
     * generated at start (fine for one process, wrong for a fleet).
     */
    requestStateKeys: z.strictObject({ current: stateSecret, previous: stateSecret.optional() }).optional(),
    /** A Secrets Manager secret holding the keys: JSON `{"current": "...", "previous": "..."}` or a plain string. */
    requestStateSecretArn: secretArn.optional(),
    /** How long a sealed requestState stays valid (the client must retry within it). */
    requestStateTtlSeconds: z.number().int().min(30).max(3600).default(600),
    /**
     * confirmTools on 2026-07-28: how long the gateway's own confirmation round stays valid (at most
     * requestStateTtlSeconds). The modern path keeps no record of it, so within this window a
     * confirmed retry can be sent again (bound to the principal, tool and arguments); keep it short.
     */
    confirmationTtlSeconds: z.number().int().min(5).max(3600).default(120),
    /**
     * Tasks extension (2026-07-28): the longest a task id the gateway hands out stays valid. A task id
     * is the target's own, sealed to the target and the principal (nothing is stored); it lives as
     * long as the target's `ttlMs` says, and never longer than this (nor forever when it says null),
     * counted on the gateway's clock: a target's `createdAt` in the future counts as the gateway's now.
     */
    taskIdMaxTtlSeconds: z
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(86_400),
    /** Origins allowed to call the gateway from a browser (CORS); in AWS also the function URL's CORS setting. */
    cors: CorsConfigSchema.default({ allowedOrigins: [], allowAnyOriginWithoutAuth: false }),
    /** Timeouts and size limits for every target (a target's `limits` overrides them). */
    targetLimits: TargetLimitsSchema.partial()
      .default({})
      .transform((limits) => ({ ...DEFAULT_TARGET_LIMITS, ...limits })),
    /**
     * A client that stops reading its stream: the gateway stops reading the target meanwhile
     * (backpressure); after this long without the client taking anything its stream is cut and the
     * call treated as for a client gone (a resumable stream's call goes on for a reconnect; any other
     * is ended and the target told).
     */
    stalledClientTimeoutSeconds: z.number().int().min(1).max(900).default(60),
  })
  .superRefine((config, ctx) => {
    for (const issue of crossFieldIssues(config)) ctx.addIssue({ code: 'custom', ...issue });
  });

/**
 * What the rules across fields read. The parsed configuration is one; `--check-config` gives what it
 * can read of a file with other problems (lib/config/cross-field.ts), so that these rules are told at
 * once with the rest: a field left undefined skips the rules that need it.
 */
export interface CrossFieldSubject {
  /** An entry that is not an object is undefined (its index still counts). */
  targets: ReadonlyArray<CrossFieldTarget | undefined>;
  auth?: { type: string };
  connections?: { identityLogin?: unknown };
  streamRelease?: StreamReleaseMode;
  pendingRequestTimeoutSeconds?: number;
  streamLogTtlSeconds?: number;
}

export interface CrossFieldTarget {
  name?: string;
  headers?: Readonly<Record<string, unknown>>;
  oauth?: unknown;
  userOAuth?: { clientId?: unknown; clientSecret?: unknown; authorizationServer?: unknown };
}

export interface CrossFieldIssue {
  path: Array<string | number>;
  message: string;
}

/** The rules that relate fields to each other (the schema's last check). */
export function crossFieldIssues(config: CrossFieldSubject): CrossFieldIssue[] {
  const issues: CrossFieldIssue[] = [];
  const seen = new Set<string>();
  config.targets.forEach((target, index) => {
    if (!target) return;
    if (target.name !== undefined) {
      if (seen.has(target.name)) {
        issues.push({ path: ['targets', index, 'name'], message: `duplicate target name "${target.name}"` });
      }
      seen.add(target.name);
    }
    const headerNames = Object.keys(target.headers ?? {}).map((name) => name.toLowerCase());
    if (target.userOAuth && (target.oauth || headerNames.includes('authorization'))) {
      issues.push({
        path: ['targets', index, 'userOAuth'],
        message: 'userOAuth sets the Authorization header per user; drop "oauth" and any "authorization" header',
      });
    }
    if (target.userOAuth?.clientSecret && target.userOAuth.clientId === undefined) {
      issues.push({
        path: ['targets', index, 'userOAuth', 'clientSecret'],
        message: 'a clientSecret needs its clientId',
      });
    }
    if (target.userOAuth?.clientSecret && target.userOAuth.authorizationServer === undefined) {
      issues.push({
        path: ['targets', index, 'userOAuth', 'authorizationServer'],
        message:
          'a clientSecret is sent only to the authorization server it was issued by: name its issuer in authorizationServer',
      });
    }
    if (target.oauth && headerNames.includes('authorization')) {
      issues.push({
        path: ['targets', index, 'headers'],
        message: 'an "authorization" header and "oauth" both set the Authorization header; keep one',
      });
    }
  });
  if (
    config.auth?.type === 'jwt' &&
    config.connections &&
    !config.connections.identityLogin &&
    config.targets.some((target) => target?.userOAuth)
  ) {
    issues.push({
      path: ['connections', 'identityLogin'],
      message:
        'targets with userOAuth behind JWT auth need connections.identityLogin: the consent page signs the user in to prove the link is theirs',
    });
  }
  // A released call's stream (its events and its record) must outlive the longest wait for an answer.
  const { streamRelease, pendingRequestTimeoutSeconds: pending, streamLogTtlSeconds: ttl } = config;
  if (
    streamRelease !== undefined &&
    streamRelease !== 'never' &&
    pending !== undefined &&
    ttl !== undefined &&
    pending > ttl
  ) {
    issues.push({
      path: ['pendingRequestTimeoutSeconds'],
      message: `must not exceed streamLogTtlSeconds (${ttl}) unless streamRelease is "never": a released call's stream would expire while it still waits`,
    });
  }
  return issues;
}

export type GatewayConfigInput = z.input<typeof GatewayConfigSchema>;
export type GatewayConfig = z.output<typeof GatewayConfigSchema>;
export type TargetConfig = z.output<typeof TargetConfigSchema>;
export type TargetLimits = z.output<typeof TargetLimitsSchema>;

/** A target's limits: the gateway's defaults with the target's own overrides. */
export function limitsOf(target: TargetConfig, defaults: TargetLimits = DEFAULT_TARGET_LIMITS): TargetLimits {
  return { ...defaults, ...target.limits };
}
export type AuthConfig = z.output<typeof AuthConfigSchema>;
export type CredentialValue = z.output<typeof CredentialValueSchema>;
export type CredentialReference = z.output<typeof CredentialReferenceSchema>;
export type OAuthClientCredentials = z.output<typeof OAuthClientCredentialsSchema>;
export type UserOAuth = z.output<typeof UserOAuthSchema>;
export type ConnectionsConfig = z.output<typeof ConnectionsConfigSchema>;
export type OutboundConfig = z.output<typeof OutboundConfigSchema>;
export type ToolFilter = z.output<typeof ToolFilterSchema>;
export type CorsConfig = z.output<typeof CorsConfigSchema>;
export type PolicyConfig = z.output<typeof PolicyConfigSchema>;

/** Every Secrets Manager ARN the configuration refers to (for least-privilege grants). */
export function secretArnsIn(config: GatewayConfig): string[] {
  const arns = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === 'object' && value !== null && 'secretArn' in value)
      arns.add((value as { secretArn: string }).secretArn);
  };
  for (const target of config.targets) {
    Object.values(target.headers ?? {}).forEach(add);
    if (target.oauth) [target.oauth.clientId, target.oauth.clientSecret].forEach(add);
    if (target.userOAuth) [target.userOAuth.clientId, target.userOAuth.clientSecret].forEach(add);
  }
  if (config.requestStateSecretArn) arns.add(config.requestStateSecretArn);
  const login = config.connections.identityLogin;
  if (login) [login.clientId, login.clientSecret].forEach(add);
  return [...arns];
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * A configuration file may name its JSON Schema (`"$schema": "…"`, for editors); the gateway ignores
 * that key and nothing else it does not know.
 */
export function withoutSchemaKey(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !('$schema' in raw)) return raw;
  const { $schema: _ignored, ...rest } = raw as Record<string, unknown>;
  return rest;
}

/** Validates raw configuration; the error names every offending field by its path. */
export function parseConfig(raw: unknown, source = 'configuration'): GatewayConfig {
  const result = GatewayConfigSchema.safeParse(withoutSchemaKey(raw));
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const base = issue.path.map(String);
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [undefined];
    return keys.map((key) => `${[...base, ...(key ? [key] : [])].join('.') || '(root)'}: ${issue.message}`).join('; ');
  });
  throw new ConfigError(`invalid ${source}: ${problems.join('; ')}`);
}
