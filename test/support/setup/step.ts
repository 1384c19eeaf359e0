import { join } from 'node:path';
import { ensureRuntimeImage } from '../../../tools/lambda-emulator/runtime-image';
import { PRIVILEGED, pythonClients } from '../prerequisites';
import { withFileLock } from './lock';
import { notRunLine } from './not-run';
import { type Missing, missingOf, requireAll } from './prerequisite';
import { type CommandRunner, type PythonEnvironment, preparePythonEnvironment, runCommand } from './python-environment';
import type { Selection } from './selection';

export interface SetUpOptions {
  /** The repository's root: the lock file is kept there. */
  root: string;
  env: NodeJS.ProcessEnv;
  /** The test files the run selects: only those are named, and only those fail a run that requires all. */
  selected: Selection;
  /** Where the run's lines go (the first line, progress, failures). */
  write: (line: string) => void;
  run?: CommandRunner;
  python?: PythonEnvironment;
  /** A local package index for pip (python-environment.ts). */
  mirror?: string;
  /** Installs the Lambda runtime image if it is not (tools/lambda-emulator/runtime-image.ts). */
  runtimeImage?: (progress: (line: string) => void) => Promise<unknown>;
  /** Whether the run is root's (its install command then needs no sudo). */
  asRoot?: boolean;
}

export interface SetUpResult {
  /** False when the run must stop: a prerequisite missing in a run that requires all, or a failed preparation. */
  ok: boolean;
  /** What is missing, for the run's last line. */
  missing: Missing[];
}

const LOCK_FILE = '.test-setup.lock';
const REQUIRED = 'test set-up: the run requires every test (--require-all or CI): it fails rather than skip them';

/**
 * The test set-up, which `npm test` (scripts/test.ts), `npm run test:setup` and CI run before the
 * tests: first what needs root (Chromium, openssl) is checked, and what is missing is said in one
 * line with the command that installs it; then what needs no root is prepared once and kept (the
 * Python clients' environment, the Lambda runtime image), with a line of progress while it is. When
 * everything is ready it reads a few files. Two runs at once take turns (a lock file at the root).
 */
export async function setUpTests(options: SetUpOptions): Promise<SetUpResult> {
  const { root, env, selected, write, asRoot = process.getuid?.() === 0 } = options;
  const strict = requireAll(env);
  const privileged = missingOf(PRIVILEGED, env);
  const first = notRunLine(privileged, selected, asRoot);
  if (first) write(first);
  if (strict && first) {
    write(REQUIRED);
    return { ok: false, missing: privileged };
  }
  // The runtime image's own lines after its first ("ready in 3 s") say what they are about here.
  const imageProgress = (line: string) =>
    write(`test set-up: ${/Lambda runtime image/.test(line) ? '' : 'Lambda runtime image: '}${line.trim()}`);
  try {
    const python = await withFileLock(
      join(root, LOCK_FILE),
      async () => {
        const shortfall = await preparePythonEnvironment({
          env,
          run: options.run ?? runCommand,
          progress: write,
          ...(options.python && { at: options.python }),
          ...(options.mirror && { mirror: options.mirror }),
        });
        await (options.runtimeImage ?? ((report) => ensureRuntimeImage(report, env)))(imageProgress);
        return shortfall;
      },
      { waiting: (pid) => write(`test set-up: waiting for the set-up of another run (pid ${pid}) …`) },
    );
    if (!python) return { ok: true, missing: privileged };
    const missing = [...privileged, { prerequisite: pythonClients, ...python }];
    const line = notRunLine([missing.at(-1)!], selected, asRoot);
    if (line) write(line);
    if (strict && line) {
      write(REQUIRED);
      return { ok: false, missing };
    }
    return { ok: true, missing };
  } catch (error) {
    write(`test set-up failed: ${(error as Error).message}`);
    return { ok: false, missing: privileged };
  }
}
