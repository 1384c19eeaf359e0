// Bundles the Lambda handler with esbuild into dist/lambda/ (index.mjs and its chunks), as the CDK stack
// bundles what it deploys (lib/bundling.ts `writeBundle`). Run through tsx (`npm run build`), which loads
// that TypeScript module.

import { statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILD_DIR, HANDLER_ENTRY, writeBundle } from '../lib/bundling.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUTDIR = join(ROOT, BUILD_DIR);
const started = Date.now();
const files = writeBundle(HANDLER_ENTRY, OUTDIR, ROOT);
const code = files.filter((file) => file.endsWith('.mjs'));
const kib = (names) => (names.reduce((sum, name) => sum + statSync(join(OUTDIR, name)).size, 0) / 1024).toFixed(0);
console.log(
  `built ${BUILD_DIR}/: index.mjs ${kib(['index.mjs'])} KiB, ${code.length - 1} chunks, ${kib(code)} KiB of code in ${Date.now() - started} ms`,
);
