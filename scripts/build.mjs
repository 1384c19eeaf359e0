// Bundles the Lambda handler with esbuild into dist/lambda/ (index.mjs and its chunks), and the Web
// Function's server into dist/web-function/, as the CDK stack
// bundles what it deploys (lib/bundling.ts `writeBundle`). Run through tsx (`npm run build`), which loads
// that TypeScript module.

import { renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILD_DIR, HANDLER_ENTRY, WEB_FUNCTION_BUILD_DIR, WEB_FUNCTION_ENTRY, writeBundle } from '../lib/bundling.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** One form's bundle: the function URL's handler (dist/lambda/) or the Web Function's server (dist/web-function/). */
function build(entry, buildDir) {
  const outdir = join(ROOT, buildDir);
  const started = Date.now();
  // Written beside, then put in place: a process importing the bundle meanwhile (a test, `--lambda`)
  // finds the old bundle or the new one (or, for an instant, none), never index.mjs without its chunks.
  const staging = `${outdir}.building-${process.pid}`;
  const files = writeBundle(entry, staging, ROOT, buildDir);
  rmSync(outdir, { recursive: true, force: true });
  renameSync(staging, outdir);
  const code = files.filter((file) => file.endsWith('.mjs'));
  const kib = (names) => (names.reduce((sum, name) => sum + statSync(join(outdir, name)).size, 0) / 1024).toFixed(0);
  console.log(
    `built ${buildDir}/: index.mjs ${kib(['index.mjs'])} KiB, ${code.length - 1} chunks, ${kib(code)} KiB of code in ${Date.now() - started} ms`,
  );
}

build(HANDLER_ENTRY, BUILD_DIR);
build(WEB_FUNCTION_ENTRY, WEB_FUNCTION_BUILD_DIR);
