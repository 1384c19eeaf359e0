// Bundles the Lambda handler with esbuild into dist/lambda/index.mjs, with the same options the CDK
// stack uses to bundle what it deploys (lib/bundling.ts). Run through tsx (`npm run build`), which
// loads that TypeScript module.

import { statSync } from 'node:fs';
import { build } from 'esbuild';
import { esbuildOptions, HANDLER_ENTRY } from '../lib/bundling.ts';

const OUTFILE = 'dist/lambda/index.mjs';
const started = Date.now();
await build(esbuildOptions(HANDLER_ENTRY, OUTFILE));
const kb = (statSync(OUTFILE).size / 1024).toFixed(0);
console.log(`built ${OUTFILE}: ${kb} KiB in ${Date.now() - started} ms`);
