import { announceAndRun, type EmulatedFormCliOptions, integerSetting } from '../deployment-cli';
import { startWebFunctionMode } from './index';

export type WebFunctionCliOptions = EmulatedFormCliOptions;

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
    timeoutSeconds: integerSetting(env, 'WEB_FUNCTION_TIMEOUT_SECONDS', 3, 900),
    maxConcurrencyPerEnvironment: integerSetting(env, 'WEB_FUNCTION_MAX_CONCURRENCY', 1, 128),
    idleSeconds: integerSetting(env, 'WEB_FUNCTION_IDLE_SECONDS', 1, 86_400),
    maxEnvironments: integerSetting(env, 'WEB_FUNCTION_MAX_ENVIRONMENTS', 1, 1000),
    progress: (line) => console.log(line),
  });
  announceAndRun(
    gateway,
    options,
    `Web Function mode: dist/web-function/index.mjs, a server per environment on Node.js ${gateway.nodeVersion}`,
    () => {
      const { environmentsStarted, requests, maxOpenPerEnvironment, timedOut, sigterms } = gateway.stats();
      // How many requests one environment held at once: what makes a held stream cheap in this form.
      return `${requests} requests, ${environmentsStarted} environments, at most ${maxOpenPerEnvironment} open in one, ${timedOut} cut by the timeout, ${sigterms} scaled in`;
    },
  );
}
