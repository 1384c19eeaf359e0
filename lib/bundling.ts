/**
 * How the Lambda handler is bundled, in one place: `scripts/build.mjs` (dist/lambda/, used by the
 * bundle tests, `--lambda` mode and the local measurements), the CDK construct's local bundling and the
 * construct package's prebuilt handler all call `writeBundle`, so what is tested is what is deployed.
 * esbuild is loaded only when a bundle is written: the installed construct package deploys its prebuilt
 * bundle and has no esbuild.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** The handler, relative to the project root. */
export const HANDLER_ENTRY = 'lambda/handler.ts';

/** The bundle's entry file in its folder (the function's `index.handler`); the chunks sit beside it. */
export const HANDLER_FILE = 'index.mjs';

/**
 * The published construct package's prebuilt handler: this folder (relative to the package's compiled
 * root, `dist/`) holds only the bundle (entry, chunks, source maps), so the folder is the function's
 * code asset.
 */
export const PREBUILT_HANDLER_DIR = 'handler';
export const PREBUILT_HANDLER_FILE = HANDLER_FILE;

/** `npm run build`'s folder for the bundle, relative to the project root. */
export const BUILD_DIR = 'dist/lambda';

/**
 * The Web Function form: its entry (a server listening where the runtime says) and its bundle's folder;
 * the function's `entryPoint` is the bundle's index.mjs, its chunks beside it.
 */
export const WEB_FUNCTION_ENTRY = 'lambda/web-function.ts';
export const WEB_FUNCTION_BUILD_DIR = 'dist/web-function';

/**
 * ESM (import.meta works, and a cold-start import is faster than CommonJS), minified with names kept
 * (stack traces stay readable), a linked source map without sources (smaller asset). Every dependency
 * is bundled, the AWS SDK included: the pinned versions travel with the code. Split into chunks: what
 * the code `import()`s only when configured (jose, the X-Ray tracer, Secrets Manager, AppConfig, the
 * SDK's other credential providers) is a chunk of its own that a cold start does not parse.
 */
export const LAMBDA_BUNDLE = {
  format: 'esm',
  platform: 'node',
  target: 'node22',
  minify: true,
  keepNames: true,
  sourcemap: true,
  sourcesContent: false,
  splitting: true,
  mainFields: ['module', 'main'],
  // Some bundled CommonJS still calls require() for Node built-ins; ESM has no require. (Every chunk
  // gets it: each is a module of its own.)
  banner:
    "import { createRequire as __gatewayCreateRequire } from 'node:module'; const require = __gatewayCreateRequire(import.meta.url);",
} as const;

/** The options for esbuild's `build()`/`buildSync()`: `entry` bundled into `outdir` as index.mjs + chunks. */
export function esbuildOptions(entry: string, outdir: string) {
  return {
    entryPoints: { [HANDLER_FILE.replace(/\.mjs$/, '')]: entry },
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    format: LAMBDA_BUNDLE.format,
    platform: LAMBDA_BUNDLE.platform,
    target: LAMBDA_BUNDLE.target,
    minify: LAMBDA_BUNDLE.minify,
    keepNames: LAMBDA_BUNDLE.keepNames,
    sourcemap: LAMBDA_BUNDLE.sourcemap ? ('linked' as const) : false,
    sourcesContent: LAMBDA_BUNDLE.sourcesContent,
    splitting: LAMBDA_BUNDLE.splitting,
    mainFields: [...LAMBDA_BUNDLE.mainFields],
    banner: { js: LAMBDA_BUNDLE.banner },
    external: [...UNBUNDLED.map((pkg) => `${pkg.name}/${pkg.entry}`)],
    logLevel: 'warning' as const,
  };
}

/**
 * Packages that travel beside the bundle, in its own `node_modules/`, instead of inside it: Cedar's
 * engine finds its WebAssembly module next to its own script (a bundled copy could not), and is
 * loaded only when policies are configured. Only the files its Node entry needs are copied.
 */
export const UNBUNDLED = [
  {
    name: '@cedar-policy/cedar-wasm',
    entry: 'nodejs',
    // Its own package.json (which exports the entry), and the entry's folder.
    files: ['package.json', ...['package.json', 'cedar_wasm.js', 'cedar_wasm_bg.wasm'].map((file) => `nodejs/${file}`)],
  },
] as const;

/**
 * Bundles `entry` (relative to `projectRoot`, or absolute) into `outputDir`, emptied first so the folder
 * holds exactly the bundle (no chunk of an earlier build). Synchronous: CDK's local bundling
 * (`ILocalBundling.tryBundle`) is. Returns the files written, relative to `outputDir`. (The root is a
 * parameter: under tsx an ES module importing this file sees no usable `__dirname` here.)
 */
export function writeBundle(
  entry: string,
  outputDir: string,
  projectRoot: string,
  /** The folder the bundle is built for (its `npm run build` folder). */
  buildDir = BUILD_DIR,
): string[] {
  const { buildSync } = loadEsbuild();
  // The source maps are computed for the build folder whatever folder the files go to: the same relative
  // `sources` in dist/lambda/, a CDK asset and the package's prebuilt folder, so a bundle's bytes (and
  // the CDK asset hash) do not depend on where it was built.
  const virtualOutdir = join(projectRoot, buildDir);
  const result = buildSync({
    ...esbuildOptions(resolve(projectRoot, entry), virtualOutdir),
    absWorkingDir: projectRoot,
    write: false,
  });
  if (existsSync(outputDir)) {
    for (const name of readdirSync(outputDir)) rmSync(join(outputDir, name), { recursive: true, force: true });
  }
  const written: string[] = [];
  for (const file of result.outputFiles) {
    const name = relative(virtualOutdir, file.path);
    mkdirSync(dirname(join(outputDir, name)), { recursive: true });
    writeFileSync(join(outputDir, name), file.contents);
    written.push(name);
  }
  for (const pkg of UNBUNDLED) {
    // The package exports its entry, not its package.json: its root is found from the entry.
    const entry = require.resolve(`${pkg.name}/${pkg.entry}`, { paths: [projectRoot] });
    const from = entry.slice(0, entry.lastIndexOf(`/${pkg.entry}/`));
    for (const file of pkg.files) {
      const name = join('node_modules', pkg.name, file);
      mkdirSync(dirname(join(outputDir, name)), { recursive: true });
      copyFileSync(join(from, file), join(outputDir, name));
      written.push(name);
    }
  }
  return written.sort();
}

/** esbuild, a devDependency: only the repository (or an app passing its own `entry`) bundles. */
function loadEsbuild(): typeof import('esbuild') {
  try {
    return require('esbuild') as typeof import('esbuild');
  } catch (error) {
    throw new Error(`bundling the Lambda handler needs esbuild installed: ${(error as Error).message}`);
  }
}
