import { join } from 'node:path';
import type { GatewayConfig, GatewayConfigInput } from '../../lambda/config/schema';
import { ensureRuntimeImage } from '../../tools/lambda-emulator/runtime-image';
import { startWebFunctionEmulator, type WebFunctionStats } from '../../tools/web-function-emulator/emulator';
import type { DemoTargets, DemoTargetsOptions } from '../demo-targets';
import { closeInReverse, functionEnvironment, prepareLocalDeployment } from '../deployment-environment';
import { ensureBundle, PROJECT_ROOT, snapshotBundle } from '../lambda-mode/bundle';

export type { WebFunctionStats } from '../../tools/web-function-emulator/emulator';

/** The Web Function's bundle (`npm run build` writes it beside the function URL's). */
export const WEB_FUNCTION_BUNDLE = join(PROJECT_ROOT, 'dist', 'web-function', 'index.mjs');

export interface WebFunctionModeOptions {
  host?: string;
  /** Default 8080; 0 picks a free port. */
  port?: number;
  /** Raw configuration in the shared schema, validated here as CDK validates it at synth. */
  config?: GatewayConfigInput;
  /** Default: an embedded dynalite in this process, as for `npm start`. */
  dynamodbEndpoint?: string;
  dynamodbPort?: number;
  /** Use the demo targets, as `npm start` does (default true). */
  demo?: boolean;
  demoTargets?: DemoTargetsOptions;
  /** The Web Function's timeout, which cuts every request still open (default 900 s, as the stack deploys it). */
  timeoutSeconds?: number;
  /** Requests one environment serves at once before another starts (default 64, the service's). */
  maxConcurrencyPerEnvironment?: number;
  /** An environment without a request this long is scaled in (SIGTERM); default 5 minutes. */
  idleSeconds?: number;
  /** From SIGTERM to the kill (default 1 s, as documented). */
  shutdownGraceMs?: number;
  /** At most this many environments (429 beyond); default unlimited. */
  maxEnvironments?: number;
  /** More function environment variables (e.g. GATEWAY_LOG_LEVEL). */
  environment?: Record<string, string>;
  /** Rebuild the bundles when their sources are newer (default), or use them as they are. */
  build?: 'if-stale' | 'never';
  /** Where the environments' output lines go (default: stderr). */
  log?: (line: string) => void;
  progress?: (line: string) => void;
}

export interface WebFunctionMode {
  /** The MCP endpoint, `http://HOST:PORT/mcp`. */
  url: string;
  config: GatewayConfig;
  /** No requestState key was configured: one was made for this run's environments. */
  requestStateKeyGenerated: boolean;
  dynamodbEndpoint: string;
  nodeVersion: string;
  demo?: DemoTargets;
  stats(): WebFunctionStats;
  /** Scales in every idle environment now (SIGTERM, then the kill after the grace). */
  scaleIn(): Promise<void>;
  /** The environments' processes (pid, open requests). */
  environments(): ReturnType<Awaited<ReturnType<typeof startWebFunctionEmulator>>['environments']>;
  close(): Promise<void>;
}

/**
 * `npm start -- --web-function`: the Web Function bundle (`dist/web-function/`, what the stack deploys with
 * `deploymentForm: webFunction`) in the local Web Function emulator (tools/web-function-emulator/): one
 * server per environment on Node.js 24, many requests each, scale-out, the timeout, scale-in by SIGTERM.
 */
export async function startWebFunctionMode(options: WebFunctionModeOptions = {}): Promise<WebFunctionMode> {
  const closers: Array<() => Promise<void> | void> = [];
  const closeAll = () => closeInReverse(closers);
  try {
    const progress = options.progress ?? (() => undefined);
    const {
      config,
      requestStateKeyGenerated,
      dynamodbEndpoint: endpoint,
      demo,
      log,
    } = await prepareLocalDeployment(options, closers);
    // The runtime's Node.js 24 (the same binary `--lambda` runs), not this process's.
    const image = await ensureRuntimeImage(progress);
    // The build writes both forms' bundles; this form serves the Web Function's.
    const code = snapshotBundle(await ensureBundle(options.build ?? 'if-stale', progress, WEB_FUNCTION_BUNDLE));
    closers.push(code.remove);
    const timeoutSeconds = options.timeoutSeconds ?? 900;
    const emulator = await startWebFunctionEmulator({
      entry: join(code.taskRoot, 'index.mjs'),
      nodeBinary: image.node,
      env: {
        ...functionEnvironment(config, endpoint, options.environment),
        // What the stack sets for this form: each request's deadline is its start plus the timeout.
        GATEWAY_REQUEST_TIMEOUT_SECONDS: String(timeoutSeconds),
        AWS_REGION: 'us-east-1',
        AWS_DEFAULT_REGION: 'us-east-1',
        // The execution role's credentials in AWS; dynalite takes any.
        AWS_ACCESS_KEY_ID: 'ASIALOCALWEBFUNCTION',
        AWS_SECRET_ACCESS_KEY: 'local-web-function-secret',
        AWS_SESSION_TOKEN: 'local-web-function-session',
      },
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 8080,
      maxConcurrencyPerEnvironment: options.maxConcurrencyPerEnvironment,
      timeoutSeconds,
      idleSeconds: options.idleSeconds,
      shutdownGraceMs: options.shutdownGraceMs,
      maxEnvironments: options.maxEnvironments,
      log,
    });
    closers.push(() => emulator.close());
    return {
      url: `${emulator.url}/mcp`,
      config,
      requestStateKeyGenerated,
      dynamodbEndpoint: endpoint,
      nodeVersion: image.nodeVersion,
      demo,
      stats: () => emulator.stats(),
      scaleIn: () => emulator.scaleIn(),
      environments: () => emulator.environments(),
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
