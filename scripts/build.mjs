// Bundles the Lambda handler with esbuild into dist/lambda/index.mjs (ESM: import.meta works, and
// cold-start import is faster than CJS). The CDK stack bundles the same entry the same way.

import { statSync } from 'node:fs';
import { build } from 'esbuild';

const started = Date.now();
await build({
  entryPoints: ['lambda/handler.ts'],
  outfile: 'dist/lambda/index.mjs',
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'esm',
  minify: true,
  sourcemap: 'linked',
  // Some bundled CommonJS code calls require() for node builtins; give ESM a require.
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  logLevel: 'warning',
});
const kb = (statSync('dist/lambda/index.mjs').size / 1024).toFixed(0);
console.log(`built dist/lambda/index.mjs: ${kb} KiB in ${Date.now() - started} ms`);
