import { type BuildOptions, buildGatewayDeps } from '../app/bootstrap';
import type { GatewayDeps } from '../app/deps';
import { createGateway } from '../app/gateway';
import { reportTargetsAtStartup } from '../app/startup-report';
import { type GatewayConfig, type GatewayConfigInput, parseConfig } from '../config/schema';
import type { GatewayLogger } from '../observability/logger';
import { createLogger, describeError } from '../observability/logger';
import { createDocumentClient, ensureTable } from '../state/dynamo-client';
import { type DemoTarget, startDemoTarget } from './demo-target';
import { startEmbeddedDynamo } from './embedded-dynamodb';
import { serveOnNode } from './node-adapter';

export interface LocalGatewayOptions {
  host?: string;
  port?: number;
  /** Raw configuration in the shared schema (validated here). */
  config?: GatewayConfigInput;
  /** Use this DynamoDB API instead of the embedded one; the table is created if missing. */
  dynamodbEndpoint?: string;
  /** Start the demo target in-process as target `demo` (default true). */
  demo?: boolean;
  logger?: GatewayLogger;
  keepAliveMs?: number;
  requestTimeoutMs?: number;
  /** List targets at start-up and report problems (default true). */
  startupReport?: boolean;
  /** Inbound auth and outbound credential settings (tests: JWKS cooldown, a fake secret reader). */
  auth?: Pick<BuildOptions, 'inbound' | 'outbound'>;
}

export interface LocalGateway {
  url: string;
  config: GatewayConfig;
  deps: GatewayDeps;
  dynamodbEndpoint: string;
  demo?: DemoTarget;
  close(): Promise<void>;
}

/** The gateway as `npm start` runs it: the same core as the Lambda, on node:http. */
export async function startLocalGateway(options: LocalGatewayOptions = {}): Promise<LocalGateway> {
  const closers: Array<() => Promise<void>> = [];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  };
  try {
    let endpoint = options.dynamodbEndpoint;
    if (!endpoint) {
      const embedded = await startEmbeddedDynamo();
      closers.push(embedded.close);
      endpoint = embedded.endpoint;
    }
    const raw: GatewayConfigInput = { ...options.config, targets: [...(options.config?.targets ?? [])] };
    let demo: DemoTarget | undefined;
    if (options.demo ?? true) {
      demo = await startDemoTarget();
      closers.push(demo.close);
      if (!raw.targets!.some((t) => t.name === 'demo')) raw.targets!.push({ name: 'demo', url: demo.url });
    }
    const config = parseConfig(raw);
    const documentClient = createDocumentClient({ endpoint });
    const logger = options.logger ?? createLogger(config.logLevel);
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
      ...options.auth,
    });
    if (options.startupReport ?? true) await reportTargetsAtStartup(deps);
    const running = await serveOnNode(createGateway(deps), {
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 8080,
      requestTimeoutMs: options.requestTimeoutMs,
    });
    closers.push(running.close);
    return { url: running.url, config, deps, dynamodbEndpoint: endpoint, demo, close: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
