import { basename, dirname, extname } from 'node:path';
import type { GatewayConfig, GatewayConfigInput } from '../../lambda/config/schema';
import { CorsPolicy } from '../../lambda/http/cors';
import { startFrontEnd } from '../../tools/lambda-emulator/front-end';
import { EnvironmentPool, type LambdaModeStats } from '../../tools/lambda-emulator/pool';
import { ensureRuntimeImage } from '../../tools/lambda-emulator/runtime-image';
import type { DemoTargets, DemoTargetsOptions } from '../demo-targets';
import { closeInReverse, functionEnvironment, prepareLocalDeployment } from '../deployment-environment';
import { ensureBundle, snapshotBundle } from './bundle';

export type { LambdaModeStats } from '../../tools/lambda-emulator/pool';

export interface LambdaModeOptions {
  host?: string;
  /** Default 8080; 0 picks a free port. */
  port?: number;
  /** Raw configuration in the shared schema, validated here as CDK validates it at synth. */
  config?: GatewayConfigInput;
  /** Default: an embedded dynalite in this process, as for `npm start`. */
  dynamodbEndpoint?: string;
  /** Port of the embedded DynamoDB (default: a free one). */
  dynamodbPort?: number;
  /** Use the demo targets `demo` and `demo-modern`, as `npm start` does (default true). */
  demo?: boolean;
  /** Where the demo targets run (started here on these ports, or already running at a URL). */
  demoTargets?: DemoTargetsOptions;
  /** The function timeout; default as deployed (900 s). */
  timeoutMs?: number;
  /** AWS_LAMBDA_FUNCTION_MEMORY_SIZE and the heap limit; default as deployed (1024). */
  memoryMb?: number;
  /** A frozen environment unused this long is shut down; default 10 minutes. */
  idleMs?: number;
  /** At most this many environments (429 beyond); default unlimited. */
  maxEnvironments?: number;
  /** More function environment variables (e.g. GATEWAY_KEEPALIVE_MS, GATEWAY_LOG_LEVEL). */
  environment?: Record<string, string>;
  /** Rebuild dist/lambda/index.mjs when its sources are newer (default), or use it as it is. */
  build?: 'if-stale' | 'never';
  /**
   * Run another function instead of the gateway bundle (tests: a diagnostic handler). `file` is an
   * ES module, `handler` its export.
   */
  function?: { file: string; handler: string };
  /** Where the environments' output lines go (default: stderr). */
  log?: (line: string) => void;
  /** What the preparation is doing (bundle build, first-use runtime build); default: nothing. */
  progress?: (line: string) => void;
}

export interface LambdaMode {
  /** The MCP endpoint, `http://HOST:PORT/mcp`. */
  url: string;
  config: GatewayConfig;
  /** No requestState key was configured: one was made for this run's environments. */
  requestStateKeyGenerated: boolean;
  dynamodbEndpoint: string;
  /** The Node.js version of the environments. */
  nodeVersion: string;
  demo?: DemoTargets;
  stats(): LambdaModeStats;
  close(): Promise<void>;
}

/**
 * `npm start -- --lambda`: the deployment bundle behind a local function URL, run by AWS's runtime
 * interface client in a pool of execution-environment processes that are frozen between invocations.
 * tools/lambda-emulator/README.md has the semantics and what is not emulated.
 */
export async function startLambdaMode(options: LambdaModeOptions = {}): Promise<LambdaMode> {
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
    const image = await ensureRuntimeImage(progress);

    const code = options.function
      ? { taskRoot: dirname(options.function.file), remove: () => undefined }
      : snapshotBundle(await ensureBundle(options.build ?? 'if-stale', progress));
    closers.push(code.remove);
    const handler = options.function
      ? `${basename(options.function.file, extname(options.function.file))}.${options.function.handler}`
      : 'index.handler';
    const pool = new EnvironmentPool({
      spec: {
        node: image.node,
        ric: image.ric,
        taskRoot: code.taskRoot,
        handler,
        functionName: 'mcp-gateway-local',
        memoryMb: options.memoryMb ?? 1024,
        timeoutMs: options.timeoutMs ?? 900_000,
        region: 'us-east-1',
        environment: functionEnvironment(config, endpoint, options.environment),
        initTimeoutMs: 10_000,
        log,
      },
      idleMs: options.idleMs ?? 600_000,
      maxEnvironments: options.maxEnvironments,
    });
    closers.push(() => pool.close());
    // Origins of `cors.allowedOrigins` may call; the function itself answers their CORS (no GATEWAY_CORS here).
    const cors = new CorsPolicy(config.cors.allowedOrigins);
    const frontEnd = await startFrontEnd((event, res) => pool.invoke(event, res), {
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 8080,
      originAllowed: (origin) => cors.allows(origin),
    });
    // Environments first: a busy one would otherwise hold the front end's close for its grace period.
    closers.push(async () => {
      await pool.close();
      await frontEnd.close();
    });
    return {
      url: `${frontEnd.url}/mcp`,
      config,
      requestStateKeyGenerated,
      dynamodbEndpoint: endpoint,
      nodeVersion: image.nodeVersion,
      demo,
      stats: () => pool.stats(),
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
