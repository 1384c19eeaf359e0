// Installs what `npm start -- --lambda` runs its execution environments with (aws-lambda-ric, which
// compiles its native Runtime API client, and a Node.js 24 binary), exactly as image/package-lock.json
// pins them. The root package's postinstall runs it; it does nothing when that lockfile is installed
// already. A failure does not fail the root install: only the --lambda mode needs this, and it says so.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const stamp = join(here, 'node_modules', '.installed-lockfile');
const lockHash = createHash('sha256')
  .update(readFileSync(join(here, 'package-lock.json')))
  .digest('hex');
const built = existsSync(join(here, 'node_modules', 'aws-lambda-ric', 'rapid-client.node'));

if (built && existsSync(stamp) && readFileSync(stamp, 'utf8') === lockHash) process.exit(0);

const started = Date.now();
console.log('lambda runtime image: installing aws-lambda-ric (compiles native code, takes minutes) and Node.js 24');
try {
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: here, stdio: 'inherit' });
  writeFileSync(stamp, lockHash);
  console.log(`lambda runtime image: installed in ${Math.round((Date.now() - started) / 1000)} s`);
} catch (error) {
  console.warn(
    `lambda runtime image: install failed (${error.message}); npm start -- --lambda and its tests need it. Retry: node ${join(here, 'install.mjs')}`,
  );
}
