import { serveOnNode } from '../lambda/adapters/node-http';
import { type BuildOptions, buildGatewayDeps } from '../lambda/app/bootstrap';
import type { GatewayDeps } from '../lambda/app/deps';
import { createGateway } from '../lambda/app/gateway';
import { readEnvironment } from '../lambda/config/environment';
import { type GatewayConfig, type GatewayConfigInput, parseConfig } from '../lambda/config/schema';
import { randomSecret } from '../lambda/crypto/sealed-box';
import type { GatewayLogger, GatewayLogLevel } from '../lambda/observability/logger';
import { describeError } from '../lambda/observability/logger';
import { createDocumentClient, ensureTable } from '../lambda/state/dynamo-client';
import { createConsoleLogger } from './console-log/console-logger';
import type { LogFormat } from './console-log/format';
import { type DemoTargets, type DemoTargetsOptions, startDemoTargets } from './demo-targets';
import { startEmbeddedDynamo } from './embedded-dynamodb';
import { refuseOpenCorsWithoutAuth } from './open-cors';
import { reportTargetsAtStartup } from './startup-report';

export interface LocalGatewayOptions {
  host?: string;
  port?: number;
  /** Raw configuration in the shared schema (validated here). */
  config?: GatewayConfigInput;
  /** Use this DynamoDB API instead of the embedded one; the table is created if missing. */
  dynamodbEndpoint?: string;
  /** Port of the embedded DynamoDB (default 0: a free one). */
  dynamodbPort?: number;
  /**
   * The demo targets `demo` (2025-11-25) and `demo-modern` (2026-07-28), added to the configured
   * targets: started in-process (default), or already running ones (`url`); `false` for none.
   */
  demo?: boolean;
  demoTargets?: DemoTargetsOptions;
  logger?: GatewayLogger;
  /** Wins over GATEWAY_LOG_LEVEL and the configuration's `logLevel` (`--log-level`). */
  logLevel?: GatewayLogLevel;
  /** Lines for a person, or the Lambda's JSON lines (default: JSON). */
  logFormat?: LogFormat;
  keepAliveMs?: number;
  requestTimeoutMs?: number;
  /** List targets at start-up and report problems (default true). */
  startupReport?: boolean;
  /** Inbound auth and outbound credential settings (tests: JWKS cooldown, a fake secret reader). */
  auth?: Pick<BuildOptions, 'inbound' | 'outbound'>;
  /** The gateway's one clock (tests run the whole gateway ahead of the wall clock to cross a window). */
  clock?: BuildOptions['clock'];
}

export interface LocalGateway {
  url: string;
  config: GatewayConfig;
  deps: GatewayDeps;
  dynamodbEndpoint: string;
  /** The embedded DynamoDB runs in this process (no `dynamodbEndpoint` was given). */
  dynamodbEmbedded: boolean;
  /** No requestState key was configured: this process made one that only it knows. */
  requestStateKeyGenerated: boolean;
  demo?: DemoTargets;
  close(): Promise<void>;
}

/** How long a shutdown waits for held calls to end cleanly before the server closes anyway. */
const SHUTDOWN_GRACE_MS = 3000;

/** The gateway as `npm start` runs it: the same core as the Lambda, on node:http. */
export async function startLocalGateway(options: LocalGatewayOptions = {}): Promise<LocalGateway> {
  const closers: Array<() => Promise<void>> = [];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  };
  try {
    // Before anything starts: a configuration this server must not serve fails with one line.
    const environment = readEnvironment();
    refuseOpenCorsWithoutAuth(parseConfig(options.config ?? {}));
    let endpoint = options.dynamodbEndpoint;
    if (!endpoint) {
      const embedded = await startEmbeddedDynamo(options.dynamodbPort);
      closers.push(embedded.close);
      endpoint = embedded.endpoint;
    }
    const targets = [...(options.config?.targets ?? [])];
    let demo: DemoTargets | undefined;
    if (options.demo ?? true) {
      demo = await startDemoTargets(options.demoTargets);
      closers.push(demo.close);
      // A configured target of the same name wins.
      for (const target of demo.targets) if (!targets.some((t) => t.name === target.name)) targets.push(target);
    }
    const config = parseConfig({ ...options.config, targets });
    const documentClient = createDocumentClient({ endpoint });
    const logger =
      options.logger ??
      createConsoleLogger(options.logLevel ?? environment.logLevel ?? config.logLevel, options.logFormat ?? 'json');
    try {
      await ensureTable(documentClient, config.tableName);
    } catch (error) {
      // Not fatal: 2026-07-28 requests never touch DynamoDB; 2025 sessions answer 503 until it is back.
      logger.warn('DynamoDB not reachable at start-up; 2025-11-25 sessions will fail until it is', {
        endpoint,
        error: describeError(error),
      });
    }
    const deps = buildGatewayDeps(config, {
      documentClient,
      logger,
      keepAliveMs: options.keepAliveMs,
      // One process: a random key is the expected default here, said in the ready lines (the Lambda warns).
      requestStateKeys: config.requestStateKeys ?? { current: randomSecret() },
      clock: options.clock,
      ...options.auth,
    });
    if (options.startupReport ?? true) await reportTargetsAtStartup(deps);
    const running = await serveOnNode(createGateway(deps), {
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 8080,
      requestTimeoutMs: options.requestTimeoutMs,
      allowedOrigins: config.cors.allowedOrigins,
      clock: deps.clock,
    });
    closers.push(async () => {
      // Graceful: calls held here are cancelled at their targets, their clients told (-32001) and
      // their pending records removed before the server stops (bounded).
      if (deps.activeCalls.size > 0) {
        await deps.activeCalls.shutdown(SHUTDOWN_GRACE_MS);
        // Their last events are written to the sockets before the connections are closed.
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      await running.close();
    });
    return {
      url: running.url,
      config,
      deps,
      dynamodbEndpoint: endpoint,
      dynamodbEmbedded: !options.dynamodbEndpoint,
      requestStateKeyGenerated: !config.requestStateKeys,
      demo,
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
