import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join, relative, sep } from 'node:path';
import { type Prerequisite, requireAll } from './setup/prerequisite';
import { pythonShortfall } from './setup/python-environment';

/**
 * What some tests need from the machine, and the one place that decides whether they run: a test file
 * gates its suite (or a test) with `describeNeeding(chromium)` / `itNeeding(pythonClients)`. Without
 * the prerequisite the suite is skipped, and the run names it in its first and last lines (test/support/setup/);
 * with `--require-all` or CI set it runs, and fails. Each prerequisite lists the files that need it,
 * so a run can say which will not run before it starts; a gate in a file not listed throws.
 */

const ROOT = join(__dirname, '../..');

/** Debian's Chromium, driven by playwright-core (test/support/oauth/browser.ts); CHROMIUM_PATH names another. */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.CHROMIUM_PATH || '/usr/bin/chromium';
}

export const chromium: Prerequisite = {
  name: 'Chromium',
  suites: [
    'test/oauth/client-id-metadata.test.ts',
    'test/oauth/consent-security.test.ts',
    'test/oauth/hostile-target.test.ts',
    'test/oauth/login-csrf.test.ts',
    'test/oauth/per-user-oauth.test.ts',
    'test/oauth/protected-target-direct.test.ts',
    'test/oauth/refresh-across-instances.test.ts',
    'test/oauth/released-while-connecting.test.ts',
    'test/oauth/tokens-not-logged.test.ts',
    'test/oauth/url-elicitation-samples.test.ts',
    'test/integration/oauth-demo.test.ts',
  ],
  check(env) {
    const path = chromiumPath(env);
    if (existsSync(path)) return undefined;
    return { reason: `not at ${path}${env.CHROMIUM_PATH ? ', CHROMIUM_PATH' : ''}`, packages: ['chromium'] };
  },
};

/** The openssl program, which makes a test's https certificate. */
export const openssl: Prerequisite = {
  name: 'openssl',
  suites: ['test/oauth/client-id-metadata.test.ts'],
  check: (env) => (onPath('openssl', env) ? undefined : { reason: 'not on PATH', packages: ['openssl'] }),
};

/** util-linux's `script` (Debian's bsdutils), which gives a test a pseudo-terminal to run `npm start` in. */
export const terminal: Prerequisite = {
  name: 'script (a pseudo-terminal)',
  suites: ['test/integration/console.test.ts'],
  check: (env) => (onPath('script', env) ? undefined : { reason: 'not on PATH', packages: ['bsdutils'] }),
};

/** The Python clients' environment (test/support/setup/python-environment.ts), which the test set-up prepares. */
export const pythonClients: Prerequisite = {
  name: "the Python clients' environment",
  suites: [
    'test/oauth/url-elicitation-samples.test.ts',
    'test/eras/target-notifications.test.ts',
    'test/integration/client-recipes.test.ts',
    'test/integration/reference-samples-verbatim.test.ts',
    'test/integration/release-policy-sdk-clients.test.ts',
    'test/integration/release-while-waiting.test.ts',
    'test/lambda-runtime/release-while-waiting.test.ts',
  ],
  check: (env) => pythonShortfall(env),
};

/** What only root can install: checked before anything is prepared. */
export const PRIVILEGED: readonly Prerequisite[] = [chromium, openssl, terminal];
export const PREREQUISITES: readonly Prerequisite[] = [...PRIVILEGED, pythonClients];

/** `describe`, or `describe.skip` when one of `needs` is missing and the run does not require all. */
export function describeNeeding(...needs: Prerequisite[]): jest.Describe {
  return runsHere(needs, currentTestFile(), process.env) ? describe : describe.skip;
}

/** `it`, or `it.skip` when one of `needs` is missing and the run does not require all. */
export function itNeeding(...needs: Prerequisite[]): jest.It {
  return runsHere(needs, currentTestFile(), process.env) ? it : it.skip;
}

/** Whether tests of `testFile` that need `needs` run here. */
export function runsHere(needs: readonly Prerequisite[], testFile: string, env: NodeJS.ProcessEnv): boolean {
  for (const need of needs) {
    if (!need.suites.includes(testFile)) {
      throw new Error(
        `${testFile} needs ${need.name}: add it to that prerequisite's suites (test/support/prerequisites.ts), so a run without it names the file`,
      );
    }
  }
  return requireAll(env) || needs.every((need) => !need.check(env));
}

function currentTestFile(): string {
  return relative(ROOT, expect.getState().testPath ?? '')
    .split(sep)
    .join('/');
}

function onPath(program: string, env: NodeJS.ProcessEnv): boolean {
  const dirs = (env.PATH ?? '').split(delimiter).filter(Boolean);
  return dirs.some((dir) => {
    try {
      accessSync(join(dir, program), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
