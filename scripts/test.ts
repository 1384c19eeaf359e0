// `npm test [-- --require-all] [-- <jest arguments>]`: the test set-up (test/support/setup/step.ts),
// the typecheck, both bundles, then jest with the arguments given (`npm test -- --json
// --outputFile=report.json`, `npm test -- test/oauth/`). When something the selected tests need is
// missing, the first line and the last say which files will not run and the command that installs it;
// with --require-all (or CI set) the run fails instead.

import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { PREREQUISITES } from '../test/support/prerequisites';
import { notRunLine } from '../test/support/setup/not-run';
import { missingOf } from '../test/support/setup/prerequisite';
import { jestPathPatterns, selectionOf } from '../test/support/setup/selection';
import { setUpTests } from '../test/support/setup/step';

const ROOT = join(__dirname, '..');
const REQUIRE_ALL = '--require-all';

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const jestArgs = args.filter((arg) => arg !== REQUIRE_ALL);
  // The tests' gates read these: TEST_REQUIRE_ALL runs (and fails) what cannot run here;
  // TEST_PREREQUISITES_REPORTED leaves the lines to this script (jest's hooks say them otherwise).
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...(args.includes(REQUIRE_ALL) && { TEST_REQUIRE_ALL: '1' }),
    TEST_PREREQUISITES_REPORTED: '1',
  };
  // jest's argument parser takes a tenth of a second: asked only when there is something to name.
  const selected =
    missingOf(PREREQUISITES, env).length > 0 ? selectionOf(await jestPathPatterns(jestArgs), ROOT) : () => true;
  const write = (line: string) => process.stderr.write(`${line}\n`);
  const setUp = await setUpTests({ root: ROOT, env, selected, write });
  const last = notRunLine(setUp.missing, selected, process.getuid?.() === 0);
  let status = setUp.ok ? 0 : 1;
  const steps: [string, ...string[]][] = [
    ['npm', 'run', 'typecheck'],
    ['npm', 'run', 'build'],
    [process.execPath, require.resolve('jest/bin/jest'), ...jestArgs],
  ];
  for (const [command, ...commandArgs] of steps) {
    if (status !== 0) break;
    status = spawnSync(command, commandArgs, { cwd: ROOT, env, stdio: 'inherit' }).status ?? 1;
  }
  if (last) write(last);
  return status;
}

main().then(
  (status) => process.exit(status),
  (error: unknown) => {
    process.stderr.write(`npm test: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
