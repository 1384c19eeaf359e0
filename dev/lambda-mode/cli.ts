import { ConfigError, type GatewayConfigInput } from '../../lambda/config/schema';
import type { DemoTargetsOptions } from '../demo-targets';
import { startLambdaMode } from './index';

export interface LambdaCliOptions {
  host: string;
  port: number;
  config?: GatewayConfigInput;
  dynamodbEndpoint?: string;
  dynamodbPort?: number;
  demo: boolean;
  demoTargets?: DemoTargetsOptions;
}

/**
 * `npm start -- --lambda …`: the same flags as `npm start`; the function's own settings come from the
 * environment, as the stack's context does in AWS (LAMBDA_TIMEOUT_SECONDS, LAMBDA_MEMORY_MB,
 * LAMBDA_IDLE_SECONDS, LAMBDA_MAX_ENVIRONMENTS). Runs until SIGINT/SIGTERM.
 */
export async function runLambdaMode(options: LambdaCliOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const gateway = await startLambdaMode({
    ...options,
    timeoutMs: seconds(env, 'LAMBDA_TIMEOUT_SECONDS', 1, 900),
    idleMs: seconds(env, 'LAMBDA_IDLE_SECONDS', 1, 86_400),
    memoryMb: integer(env, 'LAMBDA_MEMORY_MB', 128, 10_240),
    maxEnvironments: integer(env, 'LAMBDA_MAX_ENVIRONMENTS', 1, 1000),
    // Preparing can take seconds (the bundle) or minutes (the runtime's first build): say what happens.
    progress: (line) => console.log(line),
  });
  const targets = gateway.config.targets.map((t) => `${t.name} → ${t.url}`).join(', ') || 'none';
  // One write: a reader waiting for the ready line gets the lines under it in the same chunk.
  const lines = [
    `MCP gateway ready: ${gateway.url}`,
    `  Lambda mode: dist/lambda/index.mjs in aws-lambda-ric on Node.js ${gateway.nodeVersion}`,
    `  targets: ${targets}`,
  ];
  const demos = gateway.demo?.running.filter((demo) => demo.startedHere) ?? [];
  if (demos.length) {
    lines.push(
      `  ${demos.map((d) => `${d.name} (${d.era})`).join(' and ')} run in this process; their URL elicitations open a consent page on the target`,
    );
  }
  lines.push(
    `  DynamoDB: ${options.dynamodbEndpoint ?? `embedded (${gateway.dynamodbEndpoint})`}, table ${gateway.config.tableName}`,
  );
  if (gateway.demo?.running.some((demo) => demo.name === 'demo')) {
    lines.push(
      `  try it: npm run demo:client -- --url ${gateway.url}   (a tool call whose elicitation you answer in the terminal)`,
    );
  }
  console.log(lines.join('\n'));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const { coldStarts, invocations, freezes, timeouts, longestInvocationMs } = gateway.stats();
    // The invocation summary: the longest invocation shows whether a call held one through a person's think time.
    console.log(
      `${signal}: shutting down (${invocations} invocations, longest ${(longestInvocationMs / 1000).toFixed(1)} s, ${coldStarts} cold starts, ${freezes} freezes, ${timeouts} timeouts)`,
    );
    setTimeout(() => process.exit(0), 5000).unref(); // bounded: environments are killed, not drained
    void gateway.close().then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

function integer(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name}: must be an integer from ${min} to ${max}, got ${raw}`);
  }
  return value;
}

function seconds(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number | undefined {
  const value = integer(env, name, min, max);
  return value === undefined ? undefined : value * 1000;
}
