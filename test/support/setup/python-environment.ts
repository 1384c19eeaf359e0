import { spawn } from 'node:child_process';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Shortfall } from './prerequisite';

/**
 * The Python environment the Python clients of the tests run in (the MCP Python SDK, fastmcp, the
 * reference page's `requests` samples): a venv with the packages `test/support/clients/requirements.txt`
 * names, made by the test set-up once and kept. A copy of the requirements it was installed with marks
 * it ready, so a later run reads one file instead of asking pip, and a changed requirements file
 * installs again. `RECIPES_PYTHON` names another interpreter instead (then nothing is prepared).
 */
export interface PythonEnvironment {
  /** The venv's directory. */
  readonly dir: string;
  /** The requirements file it is installed from. */
  readonly requirements: string;
}

const ROOT = join(__dirname, '../../..');

/** The repository's: `.venv-recipes` at its root. */
export const RECIPES_ENVIRONMENT: PythonEnvironment = {
  dir: join(ROOT, '.venv-recipes'),
  requirements: join(ROOT, 'test/support/clients/requirements.txt'),
};

/** The interpreter the tests run their Python clients with. */
export function recipesPython(env: NodeJS.ProcessEnv = process.env, at = RECIPES_ENVIRONMENT): string {
  return env.RECIPES_PYTHON || join(at.dir, 'bin', 'python');
}

const stampOf = (at: PythonEnvironment) => join(at.dir, 'installed-requirements.txt');
const REQUIRED_PACKAGES = ['python3', 'python3-venv'];
const RETRY = 'npm run test:setup';

/** Why the environment cannot run the clients yet, or undefined when it can. */
export function pythonShortfall(env: NodeJS.ProcessEnv, at = RECIPES_ENVIRONMENT): Shortfall | undefined {
  if (env.RECIPES_PYTHON) {
    return existsSync(env.RECIPES_PYTHON)
      ? undefined
      : { reason: `RECIPES_PYTHON names no file (${env.RECIPES_PYTHON})`, packages: [] };
  }
  if (existsSync(join(at.dir, 'bin', 'python')) && installedWith(at) === readFileSync(at.requirements, 'utf8')) {
    return undefined;
  }
  return { reason: `${at.dir} not prepared`, packages: [], command: RETRY };
}

function installedWith(at: PythonEnvironment): string | undefined {
  try {
    return readFileSync(stampOf(at), 'utf8');
  } catch {
    return undefined;
  }
}

export interface CommandResult {
  /** The exit status; 127 when the program was not found. */
  status: number;
  /** Its stdout and stderr, interleaved (the last 64 KiB). */
  output: string;
}

/** Runs a program to its end; injected so a test can see and script what is run. */
export type CommandRunner = (command: string, args: readonly string[]) => Promise<CommandResult>;

const OUTPUT_KEPT = 64 * 1024;

export const runCommand: CommandRunner = (command, args) =>
  new Promise((resolve) => {
    let output = '';
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-OUTPUT_KEPT);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (error) => resolve({ status: 127, output: `${command}: ${error.message}` }));
    child.on('close', (code) => resolve({ status: code ?? 1, output }));
  });

export interface PythonPreparation {
  at?: PythonEnvironment;
  env: NodeJS.ProcessEnv;
  run: CommandRunner;
  progress: (line: string) => void;
  /**
   * A local package index (a directory in pip's "simple" layout). A machine that has one installs from
   * it alone: pip would otherwise try the public index first and wait out its timeouts. PIP_INDEX_URL,
   * when set, is pip's to follow instead.
   */
  mirror?: string;
  now?: () => number;
}

const DEFAULT_MIRROR = '/opt/pypi/simple';

/**
 * Makes the environment ready if it is not: creates the venv (`python3 -m venv`), installs the
 * requirements with pip, then marks it. Returns why it could not, with what supplies it.
 * The caller holds the set-up lock: two preparations never share a venv.
 */
export async function preparePythonEnvironment(options: PythonPreparation): Promise<Shortfall | undefined> {
  const { env, run, progress, at = RECIPES_ENVIRONMENT, mirror = DEFAULT_MIRROR, now = Date.now } = options;
  if (env.RECIPES_PYTHON || !pythonShortfall(env, at)) return pythonShortfall(env, at);
  const started = now();
  const packages = readFileSync(at.requirements, 'utf8')
    .split('\n')
    .map(
      (line) =>
        line
          .replace(/#.*/, '')
          .trim()
          .split(/[<>=!~ ;[]/)[0],
    )
    .filter(Boolean);
  progress(`test set-up: preparing the Python clients' environment once (${at.dir}: ${packages.join(', ')}) …`);
  const python = join(at.dir, 'bin', 'python');
  if (!existsSync(python)) {
    const made = await run('python3', ['-m', 'venv', at.dir]);
    if (made.status !== 0) {
      progress(tail(made.output));
      // Debian's python3 comes without the venv module (ensurepip): python3-venv adds it.
      return made.status === 127
        ? { reason: 'python3 not found', packages: REQUIRED_PACKAGES, command: RETRY }
        : { reason: `python3 -m venv failed (exit ${made.status})`, packages: REQUIRED_PACKAGES, command: RETRY };
    }
  }
  const index = !env.PIP_INDEX_URL && isDirectory(mirror) ? ['--index-url', `file://${mirror}`] : [];
  const requirements = readFileSync(at.requirements, 'utf8');
  const installed = await run(python, [
    '-m',
    'pip',
    'install',
    '--quiet',
    '--disable-pip-version-check',
    ...index,
    '--requirement',
    at.requirements,
  ]);
  if (installed.status !== 0) {
    progress(tail(installed.output));
    return { reason: `pip install failed (exit ${installed.status})`, packages: [], command: RETRY };
  }
  // Written beside, then renamed: a reader sees the old mark or the whole new one.
  const stamp = stampOf(at);
  writeFileSync(`${stamp}.${process.pid}`, requirements);
  renameSync(`${stamp}.${process.pid}`, stamp);
  progress(`test set-up: the Python clients' environment is ready (${Math.round((now() - started) / 1000)} s)`);
  return undefined;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The last lines of a failed command's output: what says why. */
function tail(output: string): string {
  return output.trimEnd().split('\n').slice(-20).join('\n');
}
