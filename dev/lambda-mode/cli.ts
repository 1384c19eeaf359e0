import { announceAndRun, type EmulatedFormCliOptions, integerSetting } from '../deployment-cli';
import { startLambdaMode } from './index';

export type LambdaCliOptions = EmulatedFormCliOptions;

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
    memoryMb: integerSetting(env, 'LAMBDA_MEMORY_MB', 128, 10_240),
    maxEnvironments: integerSetting(env, 'LAMBDA_MAX_ENVIRONMENTS', 1, 1000),
    // Preparing can take seconds (the bundle) or minutes (the runtime's first build): say what happens.
    progress: (line) => console.log(line),
  });
  announceAndRun(
    gateway,
    options,
    `Lambda mode: dist/lambda/index.mjs in aws-lambda-ric on Node.js ${gateway.nodeVersion}`,
    () => {
      const { coldStarts, invocations, freezes, timeouts, longestInvocationMs } = gateway.stats();
      // The longest invocation shows whether a call held one through a person's think time.
      return `${invocations} invocations, longest ${(longestInvocationMs / 1000).toFixed(1)} s, ${coldStarts} cold starts, ${freezes} freezes, ${timeouts} timeouts`;
    },
  );
}

function seconds(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number | undefined {
  const value = integerSetting(env, name, min, max);
  return value === undefined ? undefined : value * 1000;
}
