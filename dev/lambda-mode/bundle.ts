import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';

/** The repository root (this file is dev/lambda-mode/bundle.ts). */
export const PROJECT_ROOT = join(__dirname, '..', '..');
/** The entry of what `npm run build` writes and the CDK stack deploys (built the same way); its chunks sit beside it. */
export const BUNDLE = join(PROJECT_ROOT, 'dist', 'lambda', 'index.mjs');

const LOCK = join(PROJECT_ROOT, 'dist', '.lambda-build.lock');
const LOCK_STALE_MS = 120_000;

/**
 * The deployment bundle, rebuilt with `npm run build` when a source it depends on is newer (the
 * sources under lambda/, the lockfile, the build script). Concurrent callers (two
 * test workers) build once: the second waits for the first's lock.
 */
export async function ensureBundle(
  mode: 'if-stale' | 'never',
  progress: (line: string) => void = () => undefined,
  /** The entry the caller serves (the build writes both forms'); named in what is said. */
  entry: string = BUNDLE,
): Promise<string> {
  const shown = relative(PROJECT_ROOT, entry);
  if (mode === 'never' || !isStale(entry)) {
    if (!existsSync(entry)) throw new Error(`${shown} is missing: run npm run build`);
    progress(`deployment bundle: ${shown} is up to date`);
    return entry;
  }
  mkdirSync(join(PROJECT_ROOT, 'dist'), { recursive: true });
  const deadline = Date.now() + LOCK_STALE_MS;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      // Someone else builds: wait for them, and take over a lock left by a process that died.
      if (existsSync(LOCK) && Date.now() - statSync(LOCK).mtimeMs > LOCK_STALE_MS) rmSync(LOCK, { recursive: true });
      if (Date.now() > deadline) throw new Error(`waited too long for ${LOCK}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    // The build script imports the esbuild options shared with the CDK construct (lib/bundling.ts): run it with tsx, as `npm run build` does.
    if (isStale(entry)) {
      const started = Date.now();
      progress(`deployment bundle: building ${shown} from lambda/ (esbuild) …`);
      await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/build.mjs'], { cwd: PROJECT_ROOT });
      progress(`  built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
  return entry;
}

/**
 * Copies the bundle's folder (index.mjs, its chunks, the source maps) into a new directory: the
 * "deployed" code, which a later rebuild does not change under running environments. Returns the
 * directory and its remover.
 */
export function snapshotBundle(bundle: string): { taskRoot: string; remove(): void } {
  const taskRoot = mkdtempSync(join(tmpdir(), 'mcp-gateway-lambda-'));
  cpSync(dirname(bundle), taskRoot, { recursive: true });
  return { taskRoot, remove: () => rmSync(taskRoot, { recursive: true, force: true }) };
}

function isStale(entry: string): boolean {
  if (!existsSync(entry)) return true;
  const built = statSync(entry).mtimeMs;
  const inputs = [
    join(PROJECT_ROOT, 'package-lock.json'),
    join(PROJECT_ROOT, 'scripts', 'build.mjs'),
    join(PROJECT_ROOT, 'lib', 'bundling.ts'),
  ];
  return (
    inputs.some((file) => existsSync(file) && statSync(file).mtimeMs > built) ||
    newerSource(join(PROJECT_ROOT, 'lambda'), built)
  );
}

/** Any .ts file under lambda/ (what the bundle is built from) newer than `than`. */
function newerSource(dir: string, than: number): boolean {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (newerSource(path, than)) return true;
    } else if (entry.name.endsWith('.ts') && statSync(path).mtimeMs > than) {
      return true;
    }
  }
  return false;
}
