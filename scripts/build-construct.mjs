// Builds the construct package (packages/construct, `npm pack` runs this as its prepack script):
// dist/lib/*.js + .d.ts compiled by tsc, and dist/handler/index.mjs, the Lambda handler bundled with
// the same esbuild options as the repository's own deployments (lib/bundling.ts). The construct uses
// that prebuilt bundle when its sources are absent, so an app that installs the package needs neither
// esbuild nor this repository. Run through tsx, which loads the TypeScript module lib/bundling.ts.

import { execFileSync } from 'node:child_process';
import { copyFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { esbuildOptions, HANDLER_ENTRY, PREBUILT_HANDLER_DIR, PREBUILT_HANDLER_FILE } from '../lib/bundling.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGE = join(ROOT, 'packages', 'construct');
const DIST = join(PACKAGE, 'dist');

rmSync(DIST, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(PACKAGE, 'tsconfig.build.json')], { stdio: 'inherit' });
const outfile = join(DIST, PREBUILT_HANDLER_DIR, PREBUILT_HANDLER_FILE);
await build(esbuildOptions(join(ROOT, HANDLER_ENTRY), outfile));
copyFileSync(join(ROOT, 'LICENSE'), join(PACKAGE, 'LICENSE'));
console.log(`built ${relative(ROOT, DIST)}: the construct and ${relative(ROOT, outfile)}`);
