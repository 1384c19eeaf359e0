/**
 * How the Lambda handler is bundled, in one place: `scripts/build.mjs` (dist/lambda/index.mjs, used by
 * the bundle tests and the local measurements) and the CDK construct's NodejsFunction bundling both read
 * these options, so what is tested is what is deployed. Plain data plus two small mappings: no CDK here,
 * so the build script stays fast.
 */

/** The handler, relative to the project root. */
export const HANDLER_ENTRY = 'lambda/handler.ts';

/**
 * The published construct package's prebuilt handler: this folder (relative to the package's compiled
 * root, `dist/`) holds only this file and its source map, so the folder is the function's code asset.
 */
export const PREBUILT_HANDLER_DIR = 'handler';
export const PREBUILT_HANDLER_FILE = 'index.mjs';

/**
 * ESM (import.meta works, and a cold-start import is faster than CommonJS), minified with names kept
 * (stack traces stay readable), a linked source map without sources (smaller asset). Every dependency
 * is bundled, the AWS SDK included: the pinned versions travel with the code.
 */
export const LAMBDA_BUNDLE = {
  format: 'esm',
  platform: 'node',
  target: 'node22',
  minify: true,
  keepNames: true,
  sourcemap: true,
  sourcesContent: false,
  mainFields: ['module', 'main'],
  // Some bundled CommonJS still calls require() for Node built-ins; ESM has no require.
  banner:
    "import { createRequire as __gatewayCreateRequire } from 'node:module'; const require = __gatewayCreateRequire(import.meta.url);",
} as const;

/** The options for esbuild's `build()` (scripts/build.mjs, scripts/build-construct.mjs). */
export function esbuildOptions(entry: string, outfile: string) {
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: LAMBDA_BUNDLE.format,
    platform: LAMBDA_BUNDLE.platform,
    target: LAMBDA_BUNDLE.target,
    minify: LAMBDA_BUNDLE.minify,
    keepNames: LAMBDA_BUNDLE.keepNames,
    sourcemap: LAMBDA_BUNDLE.sourcemap ? ('linked' as const) : false,
    sourcesContent: LAMBDA_BUNDLE.sourcesContent,
    mainFields: [...LAMBDA_BUNDLE.mainFields],
    banner: { js: LAMBDA_BUNDLE.banner },
    logLevel: 'warning' as const,
  };
}
