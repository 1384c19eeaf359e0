import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createInboundAuth, type InboundAuthOptions } from '../auth/inbound';
import { ActiveCalls } from '../calls/active-calls';
import { CatalogCache } from '../catalog/cache';
import { Catalog } from '../catalog/catalog';
import { DEFAULT_KEEPALIVE_MS, readEnvironment } from '../config/environment';
import type { GatewayConfig } from '../config/schema';
import { loadConfig } from '../config/source';
import { keySecretsFromConfig, resolveKeySecrets } from '../crypto/keys';
import { type KeySecrets, SealedBox } from '../crypto/sealed-box';
import { TaskIdSealer } from '../crypto/task-ids';
import type { ShutdownableHandler } from '../http/exchange';
import { SessionCache } from '../legacy/session-cache';
import { LegacySessionPool } from '../modern/legacy-sessions';
import { ListenPlaces } from '../modern/listen-places';
import { RequestStateSealer } from '../modern/request-state';
import { createActiveTracer } from '../observability/active-tracing';
import { createLogger, type GatewayLogger } from '../observability/logger';
import { policedFetch, type Resolver } from '../outbound/policed-fetch';
import { accessPolicyOf } from '../policy/access-policy';
import { LATEST_LEGACY_VERSION, legacyVersionsOf } from '../protocol/versions';
import { type Clock, systemClock } from '../scheduling/clock';
import type { ConnectionTable } from '../state/connection-table';
import { createDocumentClient } from '../state/dynamo-client';
import { DynamoSessionStore } from '../state/dynamo-store';
import type { SessionStore } from '../state/store';
import { OutboundCredentials, type OutboundCredentialsOptions } from '../targets/credentials';
import { Targets } from '../targets/targets';
import { buildConnections } from './connections';
import type { GatewayDeps } from './deps';
import { createGateway } from './gateway';
import { outboundPolicyOf } from './outbound';

export const GATEWAY_INFO = { name: 'mcp-gateway', version: '0.1.0' };

export interface BuildOptions {
  documentClient?: DynamoDBDocumentClient;
  store?: SessionStore;
  logger?: GatewayLogger;
  keepAliveMs?: number;
  /** requestState keys resolved by the caller (the Lambda reads Secrets Manager); default: from the configuration. */
  requestStateKeys?: KeySecrets;
  /** Inbound auth settings (JWKS cooldown, timeouts); the mode itself is `config.auth`. */
  inbound?: Omit<InboundAuthOptions, 'logger' | 'clock'>;
  /** Outbound credential sources (environment, Secrets Manager reader); default: process.env and Secrets Manager. */
  outbound?: Omit<OutboundCredentialsOptions, 'logger' | 'clock'>;
  /**
   * The gateway's one clock: every time a part reads and every timer it sets (sealed states' and task
   * ids' expiry, leases, waits, caches, consent links, the store's writes); default Node's. Tests drive a
   * fake one, or run the whole gateway ahead of the wall clock to cross a window without waiting.
   */
  clock?: Clock;
  /** Where per-user connections are kept (default: the gateway table through `documentClient`). */
  connectionTable?: ConnectionTable;
  /**
   * The Lambda Runtime API's `host:port`, which the outbound policy never reaches; default the AWS
   * runtime's own `AWS_LAMBDA_RUNTIME_API`.
   */
  runtimeApi?: string;
  /** Name resolution of the outbound policy (tests point a name where they want); default the system's. */
  outboundResolver?: Resolver;
}

/** Assembles the gateway from a validated configuration: the one place parts are wired together. */
export function buildGatewayDeps(config: GatewayConfig, options: BuildOptions = {}): GatewayDeps {
  // GATEWAY_LOG_LEVEL overrides the configured level without a redeploy; a malformed environment fails here.
  const logger = options.logger ?? createLogger(readEnvironment().logLevel ?? config.logLevel);
  // Chosen here, once: every part below reads the time from it and sets its timers on it.
  const clock = options.clock ?? systemClock;
  const store =
    options.store ??
    new DynamoSessionStore(options.documentClient ?? createDocumentClient(), config.tableName, {
      operationTimeoutMs: config.storeOperationTimeoutMs,
      clock,
    });
  const outbound = new OutboundCredentials({ ...options.outbound, logger, clock });
  const secrets = options.requestStateKeys ?? keySecretsFromConfig(config, logger);
  // The AWS runtime's own variable (not the gateway's: config/environment.ts names only those).
  const outboundPolicy = outboundPolicyOf(config, options.runtimeApi ?? process.env.AWS_LAMBDA_RUNTIME_API);
  const outboundFetch = policedFetch(outboundPolicy, { resolve: options.outboundResolver });
  const auth = createInboundAuth(config.auth, {
    ...options.inbound,
    logger,
    clock,
    jwt: { ...options.inbound?.jwt, fetch: outboundFetch },
  });
  const userConnections = buildConnections(config, {
    documentClient: options.documentClient,
    table: options.connectionTable,
    secrets,
    outbound,
    auth,
    logger,
    clock,
    outboundPolicy,
    outboundFetch,
  });
  const credentials = new Map(
    config.targets.map((target, index) => [
      target.name,
      userConnections?.credentials.get(target.name) ?? outbound.forTarget(target, index),
    ]),
  );
  const targets = new Targets(config.targets, {
    clientInfo: GATEWAY_INFO,
    logger,
    clock,
    credentials,
    connections: userConnections?.connections,
    legacyVersion: legacyVersionsOf(config.supportedVersions)[0] ?? LATEST_LEGACY_VERSION,
    limits: config.targetLimits,
    streams: { settleMs: config.targetStreamSettleMs },
  });
  const box = SealedBox.fromSecrets(secrets);
  return {
    config,
    auth,
    consentRoutes: userConnections?.routes,
    store,
    logger,
    targets,
    catalog: new Catalog(
      targets,
      { toolNamePrefix: config.toolNamePrefix },
      logger,
      new CatalogCache(clock),
      accessPolicyOf(config.policy, clock, logger),
    ),
    serverInfo: GATEWAY_INFO,
    keepAliveMs: options.keepAliveMs ?? DEFAULT_KEEPALIVE_MS,
    clock,
    requestState: new RequestStateSealer(box, config.requestStateTtlSeconds, clock),
    taskIds: new TaskIdSealer(box, config.taskIdMaxTtlSeconds, clock),
    legacySessions: new LegacySessionPool(targets, logger, clock),
    listens: new ListenPlaces(config.maxListensPerPrincipal),
    activeCalls: new ActiveCalls(),
    sessionCache: config.sessionReadAhead ? new SessionCache(clock) : undefined,
    // The same table: only bridged calls (a 2026-07-28 client, a 2025 target that asks for input) write through it.
    bridgeStore: store,
  };
}

/**
 * The Lambda's gateway, built once per cold start from the environment the CDK stack writes
 * (config/environment.ts names and validates every variable; a malformed one fails the cold start
 * naming it): GATEWAY_CONFIG (JSON, the shared schema) or GATEWAY_APPCONFIG, optionally
 * DYNAMODB_ENDPOINT (local runs only), GATEWAY_KEEPALIVE_MS (SSE keep-alive interval, default 15 s),
 * GATEWAY_LOG_LEVEL, GATEWAY_CORS=function-url (the function URL answers CORS, so the function sets
 * no CORS headers) and GATEWAY_TRACING=active (X-Ray active tracing with Powertools Tracer).
 */
export async function createGatewayFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  /** How long a shutdown may take (SIGTERM to SIGKILL, less a margin to finish the responses). */
  shutdownMs = LAMBDA_SHUTDOWN_MS,
): Promise<ShutdownableHandler & { allowedOrigins: readonly string[] }> {
  const environment = readEnvironment(env);
  const config = await loadConfig(env); // GATEWAY_CONFIG or AppConfig (lambda/config/source.ts), once per cold start
  const documentClient = createDocumentClient({ endpoint: environment.dynamodbEndpoint });
  const logger = createLogger(environment.logLevel ?? config.logLevel);
  // Once per cold start: configuration, else Secrets Manager (GATEWAY_REQUEST_STATE_SECRET_ARN), else random.
  const requestStateKeys = await resolveKeySecrets(config, logger, env);
  const tracer =
    environment.tracing === 'active'
      ? await createActiveTracer(environment.serviceName ?? GATEWAY_INFO.name)
      : undefined;
  tracer?.instrumentClient(documentClient);
  const deps = buildGatewayDeps(config, {
    documentClient,
    keepAliveMs: environment.keepAliveMs,
    logger,
    requestStateKeys,
  });
  const gateway = createGateway(deps, {
    cors: environment.cors === 'function-url' ? 'platform' : 'gateway',
    tracer,
  });
  // On SIGTERM a call this environment holds that can go on elsewhere is released (its client's reconnect
  // takes it over on another environment); any other is cancelled at its target and its records removed.
  // The browser origins the configuration allows: a server in front of the core (a Web Function's) must
  // not refuse them as foreign (node-http's Origin check).
  return Object.assign(gateway, {
    shutdown: () => deps.activeCalls.shutdown(shutdownMs),
    allowedOrigins: config.cors.allowedOrigins,
  });
}

/** Lambda gives a runtime 300–500 ms between SIGTERM and SIGKILL (with extensions registered). */
const LAMBDA_SHUTDOWN_MS = 400;
