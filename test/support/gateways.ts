import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLambdaMode } from '../../dev/lambda-mode';
import { startLocalGateway } from '../../dev/local-gateway';
import { startWebFunctionMode, type WebFunctionMode } from '../../dev/web-function-mode';
import type { GatewayConfigInput } from '../../lambda/config/schema';
import { createDocumentClient, ensureTable } from '../../lambda/state/dynamo-client';
import type { LambdaModeStats } from '../../tools/lambda-emulator/pool';
import { installLambdaGlobals, startLambdaInvoker } from './lambda-invoker';

export type GatewayKind = 'local server' | 'lambda handler' | 'lambda runtime' | 'web function';

export interface GatewayUnderTest {
  url: string;
  close(): Promise<void>;
  /** The `lambda runtime` kind: its environments and invocations (`npm start -- --lambda`'s summary). */
  stats?(): LambdaModeStats;
  /** The `web function` kind: its environments, their open requests, timeouts and scale-ins. */
  webFunction?: Pick<WebFunctionMode, 'stats' | 'scaleIn' | 'environments'>;
}

/**
 * Starts the gateway the way users run it: the local server (`startLocalGateway`), the Lambda
 * handler module itself behind the local function-URL invoker, configured through the environment
 * exactly as the CDK stack configures it, the deployment bundle in frozen-between-invocations
 * execution environments (`npm start -- --lambda`), or the Web Function bundle in the Web Function
 * emulator (`npm start -- --web-function`: many requests per environment).
 */
export async function startGateway(
  kind: GatewayKind,
  config: GatewayConfigInput,
  dynamodbEndpoint: string,
  options: {
    keepAliveMs?: number;
    timeoutMs?: number;
    environment?: Record<string, string>;
    /** Its loopback port, for a gateway whose URL must be known before it starts (a registered callback); default a free one. */
    port?: number;
  } = {},
): Promise<GatewayUnderTest> {
  if (kind === 'local server') {
    const gateway = await startLocalGateway({
      port: options.port ?? 0,
      config,
      dynamodbEndpoint,
      demo: false,
      startupReport: false,
      keepAliveMs: options.keepAliveMs,
      requestTimeoutMs: options.timeoutMs,
    });
    return gateway;
  }
  if (kind === 'lambda runtime') {
    const gateway = await startLambdaMode({
      port: options.port ?? 0,
      config,
      dynamodbEndpoint,
      demo: false,
      timeoutMs: options.timeoutMs,
      environment: {
        ...(options.keepAliveMs ? { GATEWAY_KEEPALIVE_MS: String(options.keepAliveMs) } : {}),
        ...options.environment,
      },
      // The environments' output (CloudWatch Logs, in AWS): LAMBDA_RUNTIME_LOG=1 shows it.
      log: process.env.LAMBDA_RUNTIME_LOG ? (line) => console.error(line) : () => undefined,
    });
    return gateway;
  }
  if (kind === 'web function') {
    const gateway = await startWebFunctionMode({
      port: options.port ?? 0,
      config,
      dynamodbEndpoint,
      demo: false,
      timeoutSeconds: options.timeoutMs === undefined ? undefined : options.timeoutMs / 1000,
      environment: {
        ...(options.keepAliveMs ? { GATEWAY_KEEPALIVE_MS: String(options.keepAliveMs) } : {}),
        ...options.environment,
      },
      // The environments' output: WEB_FUNCTION_LOG=1 shows it.
      log: process.env.WEB_FUNCTION_LOG ? (line) => console.error(line) : () => undefined,
    });
    return { url: gateway.url, close: gateway.close, webFunction: gateway };
  }
  installLambdaGlobals();
  const tableName = config.tableName ?? 'mcp-gateway';
  await ensureTable(createDocumentClient({ endpoint: dynamodbEndpoint }), tableName);
  process.env.GATEWAY_CONFIG = JSON.stringify(config);
  process.env.DYNAMODB_ENDPOINT = dynamodbEndpoint;
  if (options.keepAliveMs) process.env.GATEWAY_KEEPALIVE_MS = String(options.keepAliveMs);
  // A fresh module instance per gateway: each is a new "execution environment" with its own cold start.
  let handlerModule!: typeof import('../../lambda/handler');
  jest.isolateModules(() => {
    handlerModule = require('../../lambda/handler');
  });
  const invoker = await startLambdaInvoker(handlerModule, { timeoutMs: options.timeoutMs });
  return { url: `${invoker.url.replace(/\/$/, '')}/mcp`, close: invoker.close };
}

/** A separate gateway process (`npm start` with flags), as a second Lambda instance would be. */
export async function startGatewayProcess(
  config: GatewayConfigInput,
  dynamodbEndpoint: string,
  options: { logLevel?: string } = {},
): Promise<GatewayUnderTest & { output(): string }> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'dev/cli.ts',
      '--port',
      '0',
      '--no-demo',
      '--config',
      file,
      '--dynamodb-endpoint',
      dynamodbEndpoint,
    ],
    {
      cwd: join(__dirname, '../..'),
      env: { ...process.env, GATEWAY_LOG_LEVEL: options.logLevel ?? 'SILENT' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway process did not start: ${output}`)), 30_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /MCP gateway ready: (\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`gateway process exited with ${code}: ${output}`)));
  });
  return {
    url,
    output: () => output,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
