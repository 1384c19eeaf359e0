import { PREREQUISITES } from '../prerequisites';
import { notRunLine } from './not-run';
import { missingOf, requireAll } from './prerequisite';
import { selectionOf } from './selection';

/** What jest hands its global set-up and teardown (the part read here). */
export interface JestGlobalConfig {
  rootDir: string;
  testPathPatterns?: { patterns: readonly string[] };
}

/**
 * The not-run line of a jest run started directly (`npx jest …`), for the files it selects; under
 * `npm test` the set-up step says it instead, before the typecheck (TEST_PREREQUISITES_REPORTED).
 * Undefined when nothing it selects is kept from running.
 */
export function jestNotRunLine(config: JestGlobalConfig, env: NodeJS.ProcessEnv): string | undefined {
  if (env.TEST_PREREQUISITES_REPORTED) return undefined;
  const selected = selectionOf(config.testPathPatterns?.patterns ?? [], config.rootDir);
  return notRunLine(missingOf(PREREQUISITES, env), selected, process.getuid?.() === 0);
}

/** jest's globalSetup: the first line; a run that requires every test stops here. */
export function reportAtStart(config: JestGlobalConfig, env: NodeJS.ProcessEnv = process.env): void {
  const line = jestNotRunLine(config, env);
  if (!line) return;
  process.stderr.write(`${line}\n`);
  if (requireAll(env)) {
    const error = new Error('the run requires every test (--require-all or CI): it fails rather than skip them');
    error.stack = error.message; // jest prints the stack: where this was thrown says nothing to the reader
    throw error;
  }
}

/** jest's globalTeardown: the same line, last. */
export function reportAtEnd(config: JestGlobalConfig, env: NodeJS.ProcessEnv = process.env): void {
  const line = jestNotRunLine(config, env);
  if (line) process.stderr.write(`${line}\n`);
}
