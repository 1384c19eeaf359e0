// Builds the construct package (packages/construct, `npm pack` runs this as its prepack script):
// dist/lib/*.js + .d.ts compiled by tsc, and dist/handler/ (index.mjs and its chunks), the Lambda handler
// bundled as the repository's own deployments bundle it (lib/bundling.ts `writeBundle`). The construct
// uses that prebuilt bundle when its sources are absent, so an app that installs the package needs
// neither esbuild nor this repository. Run through tsx, which loads the TypeScript module lib/bundling.ts.

import { execFileSync } from 'node:child_process';
import { copyFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HANDLER_ENTRY, PREBUILT_HANDLER_DIR, writeBundle } from '../lib/bundling.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGE = join(ROOT, 'packages', 'construct');
const DIST = join(PACKAGE, 'dist');

rmSync(DIST, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(PACKAGE, 'tsconfig.build.json')], { stdio: 'inherit' });
const outdir = join(DIST, PREBUILT_HANDLER_DIR);
const files = writeBundle(HANDLER_ENTRY, outdir, ROOT);
copyFileSync(join(ROOT, 'LICENSE'), join(PACKAGE, 'LICENSE'));
console.log(`built ${relative(ROOT, DIST)}: the construct and ${relative(ROOT, outdir)}/ (${files.length} files)`);
