// `npm run test:setup`: what `npm test` does before its typecheck (test/support/setup/step.ts), alone:
// checks what needs root, prepares the rest once. `--require-all` (or CI set) fails when something is
// missing. `--missing-packages` only prints the Debian packages that are missing (for a CI that
// installs them as root), space-separated.

import { join } from 'node:path';
import { PRIVILEGED } from '../test/support/prerequisites';
import { missingOf } from '../test/support/setup/prerequisite';
import { setUpTests } from '../test/support/setup/step';

const ROOT = join(__dirname, '..');
const args = process.argv.slice(2);

async function main(): Promise<number> {
  if (args.includes('--missing-packages')) {
    const packages = new Set(missingOf(PRIVILEGED, process.env).flatMap((missing) => missing.packages));
    process.stdout.write(`${[...packages].join(' ')}\n`);
    return 0;
  }
  const env = { ...process.env, ...(args.includes('--require-all') && { TEST_REQUIRE_ALL: '1' }) };
  const write = (line: string) => process.stderr.write(`${line}\n`);
  const { ok } = await setUpTests({ root: ROOT, env, selected: () => true, write });
  return ok ? 0 : 1;
}

main().then(
  (status) => process.exit(status),
  (error: unknown) => {
    process.stderr.write(`test set-up: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
