import { ConfigError, type GatewayConfigInput } from '../lambda/config/schema';
import type { DemoTargetsOptions } from './demo-targets';
import type { LocalDeployment } from './deployment-environment';

/** What `npm start -- --lambda` and `--web-function` take from the flags (the same as `npm start`). */
export interface EmulatedFormCliOptions {
  host: string;
  port: number;
  config?: GatewayConfigInput;
  dynamodbEndpoint?: string;
  dynamodbPort?: number;
  demo: boolean;
  demoTargets?: DemoTargetsOptions;
  /** Where the environments' output goes (`--log-format`). */
  log?: (line: string) => void;
  /** More function environment variables (`--log-level` as GATEWAY_LOG_LEVEL). */
  environment?: Record<string, string>;
}

/**
 * What `npm start -- --lambda` and `npm start -- --web-function` print and do alike: the ready lines
 * (the form's own line under the first), a summary line on SIGINT/SIGTERM, then a bounded close.
 */
export function announceAndRun(
  gateway: Omit<LocalDeployment, 'log'> & { url: string; close(): Promise<void> },
  options: { dynamodbEndpoint?: string },
  formLine: string,
  summary: () => string,
): void {
  const targets = gateway.config.targets.map((t) => `${t.name} → ${t.url}`).join(', ') || 'none';
  // One write: a reader waiting for the ready line gets the lines under it in the same chunk.
  const lines = [`MCP gateway ready: ${gateway.url}`, `  ${formLine}`, `  targets: ${targets}`];
  const demos = gateway.demo?.running.filter((demo) => demo.startedHere) ?? [];
  if (demos.length) {
    lines.push(
      `  ${demos.map((d) => `${d.name} (${d.era})`).join(' and ')} run in this process; their URL elicitations open a consent page on the target`,
    );
  }
  lines.push(
    `  DynamoDB: ${options.dynamodbEndpoint ?? `embedded (${gateway.dynamodbEndpoint})`}, table ${gateway.config.tableName}`,
  );
  // A deployment's instances share one key (the stack's secret); so do this run's environments.
  if (gateway.requestStateKeyGenerated)
    lines.push(
      '  requestState key: a random one for this run, shared by its environments (set requestStateKeys in a --config file to choose it)',
    );
  if (gateway.demo?.running.some((demo) => demo.name === 'demo')) {
    lines.push(
      `  try it: npm run demo:client -- --url ${gateway.url}   (a tool call whose elicitation you answer in the terminal)`,
    );
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: shutting down (${summary()})`);
    setTimeout(() => process.exit(0), 5000).unref(); // bounded: environments are killed, not drained
    void gateway.close().then(() => process.exit(0));
  };
  // Before the ready lines: a Ctrl-C right after them must not kill the process.
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  console.log(lines.join('\n'));
}

/** A whole number from the environment within bounds (a form's setting), or undefined when unset. */
export function integerSetting(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name}: must be an integer from ${min} to ${max}, got ${raw}`);
  }
  return value;
}
