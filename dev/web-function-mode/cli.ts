import { ConfigError, type GatewayConfigInput } from '../../lambda/config/schema';
import type { DemoTargetsOptions } from '../demo-targets';
import { startWebFunctionMode } from './index';

export interface WebFunctionCliOptions {
  host: string;
  port: number;
  config?: GatewayConfigInput;
  dynamodbEndpoint?: string;
  dynamodbPort?: number;
  demo: boolean;
  demoTargets?: DemoTargetsOptions;
}

/**
 * `npm start -- --web-function …`: the same flags as `npm start`; the Web Function's own settings come
 * from the environment, as the stack's context gives them in AWS (WEB_FUNCTION_TIMEOUT_SECONDS,
 * WEB_FUNCTION_MAX_CONCURRENCY, WEB_FUNCTION_IDLE_SECONDS, WEB_FUNCTION_MAX_ENVIRONMENTS). Runs until
 * SIGINT/SIGTERM, then prints what the environments did.
 */
export async function runWebFunctionMode(
  options: WebFunctionCliOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const gateway = await startWebFunctionMode({
    ...options,
    timeoutSeconds: integer(env, 'WEB_FUNCTION_TIMEOUT_SECONDS', 3, 900),
    maxConcurrencyPerEnvironment: integer(env, 'WEB_FUNCTION_MAX_CONCURRENCY', 1, 128),
    idleSeconds: integer(env, 'WEB_FUNCTION_IDLE_SECONDS', 1, 86_400),
    maxEnvironments: integer(env, 'WEB_FUNCTION_MAX_ENVIRONMENTS', 1, 1000),
    progress: (line) => console.log(line),
  });
  const targets = gateway.config.targets.map((t) => `${t.name} → ${t.url}`).join(', ') || 'none';
  // One write: a reader waiting for the ready line gets the lines under it in the same chunk.
  const lines = [
    `MCP gateway ready: ${gateway.url}`,
    `  Web Function mode: dist/web-function/index.mjs, a server per environment on Node.js ${gateway.nodeVersion}`,
    `  targets: ${targets}`,
    `  DynamoDB: ${options.dynamodbEndpoint ?? `embedded (${gateway.dynamodbEndpoint})`}, table ${gateway.config.tableName}`,
  ];
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
    const { environmentsStarted, requests, maxOpenPerEnvironment, timedOut, sigterms } = gateway.stats();
    // How many requests one environment held at once: what makes a held stream cheap in this form.
    console.log(
      `${signal}: shutting down (${requests} requests, ${environmentsStarted} environments, at most ${maxOpenPerEnvironment} open in one, ${timedOut} cut by the timeout, ${sigterms} scaled in)`,
    );
    setTimeout(() => process.exit(0), 5000).unref();
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
