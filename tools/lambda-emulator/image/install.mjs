// Installs what `npm start -- --lambda` runs its execution environments with (aws-lambda-ric, which
// compiles its native Runtime API client, and a Node.js 24 binary), exactly as the package-lock.json beside this script
// pins them. `npm start -- --lambda` runs it on first use (showing its progress), `npm run lambda:runtime`
// runs it explicitly (CI, before the tests of the Lambda mode); `npm ci` does not, as most users never need it.
//
// The compile takes one to four minutes (curl's configure is most of it), so the result is kept per lockfile in a
// machine-wide cache (~/.cache/mcp-gateway/lambda-runtime-image/<sha256 of the lockfile>) and
// image/node_modules is a link to it: another clone or worktree on the same machine, or a fresh CI
// clone, reuses it. Without the cache (not writable), it installs in place. Exit status 1 when it fails.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const lockHash = createHash('sha256')
  .update(readFileSync(join(here, 'package-lock.json')))
  .digest('hex');
const cacheRoot = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'mcp-gateway', 'lambda-runtime-image');
const cached = join(cacheRoot, lockHash);
const link = join(here, 'node_modules');
const built = (dir) => existsSync(join(dir, 'node_modules', '.installed-lockfile'));

const npmCi = (cwd) =>
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd, stdio: 'inherit' });

function linked() {
  try {
    return lstatSync(link).isSymbolicLink() && readlinkSync(link) === join(cached, 'node_modules');
  } catch {
    return false;
  }
}

/** Builds the image into the cache (in a temporary directory first, so a half-built one is never used). */
function buildIntoCache() {
  mkdirSync(cacheRoot, { recursive: true });
  const building = mkdtempSync(join(cacheRoot, 'building-'));
  try {
    copyFileSync(join(here, 'package.json'), join(building, 'package.json'));
    copyFileSync(join(here, 'package-lock.json'), join(building, 'package-lock.json'));
    npmCi(building);
    writeFileSync(join(building, 'node_modules', '.installed-lockfile'), lockHash);
    if (!built(cached)) {
      rmSync(cached, { recursive: true, force: true });
      renameSync(building, cached);
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
}

function installedInPlace() {
  try {
    return !lstatSync(link).isSymbolicLink() && readFileSync(join(link, '.installed-lockfile'), 'utf8') === lockHash;
  } catch {
    return false;
  }
}

if (built(cached) && linked()) process.exit(0);
const started = Date.now();
try {
  if (!built(cached)) {
    console.log(
      'lambda runtime image: building aws-lambda-ric (it compiles native code, once per machine: one to four minutes) and Node.js 24 …',
    );
    buildIntoCache();
    console.log(`lambda runtime image: built in ${Math.round((Date.now() - started) / 1000)} s, cached in ${cached}`);
  } else {
    console.log(`lambda runtime image: cached on this machine (${cached})`);
  }
  rmSync(link, { recursive: true, force: true });
  symlinkSync(join(cached, 'node_modules'), link, 'dir');
} catch (cacheError) {
  if (installedInPlace()) process.exit(0);
  console.warn(`lambda runtime image: no cache (${cacheError.message}); installing in place`);
  try {
    rmSync(link, { recursive: true, force: true });
    npmCi(here);
    writeFileSync(join(link, '.installed-lockfile'), lockHash);
    console.log(`lambda runtime image: installed in ${Math.round((Date.now() - started) / 1000)} s`);
  } catch (error) {
    console.warn(
      `lambda runtime image: install failed (${error.message}); npm start -- --lambda and its tests need it (cmake, make and g++). Retry: npm run lambda:runtime`,
    );
    process.exitCode = 1;
  }
}
