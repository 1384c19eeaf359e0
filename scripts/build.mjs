// Bundles the Lambda handler with esbuild into dist/lambda/ (index.mjs and its chunks), as the CDK stack
// bundles what it deploys (lib/bundling.ts `writeBundle`). Run through tsx (`npm run build`), which loads
// that TypeScript module.

import { renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILD_DIR, HANDLER_ENTRY, writeBundle } from '../lib/bundling.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUTDIR = join(ROOT, BUILD_DIR);
const started = Date.now();
// Written beside, then put in place: a process importing dist/lambda/ meanwhile (a test, `--lambda`)
// finds the old bundle or the new one (or, for an instant, none), never index.mjs without its chunks.
const staging = `${OUTDIR}.building-${process.pid}`;
const files = writeBundle(HANDLER_ENTRY, staging, ROOT);
rmSync(OUTDIR, { recursive: true, force: true });
renameSync(staging, OUTDIR);
const code = files.filter((file) => file.endsWith('.mjs'));
const kib = (names) => (names.reduce((sum, name) => sum + statSync(join(OUTDIR, name)).size, 0) / 1024).toFixed(0);
console.log(
  `built ${BUILD_DIR}/: index.mjs ${kib(['index.mjs'])} KiB, ${code.length - 1} chunks, ${kib(code)} KiB of code in ${Date.now() - started} ms`,
);
