import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { outputMatching } from './child-output';

/**
 * `npm start` in a pseudo-terminal, as a person sees it: util-linux `script` gives the process a
 * terminal for stdin, stdout and stderr, and passes on what it writes (both streams, in order).
 * Ctrl-C is typed as the byte 0x03, so the terminal sends SIGINT as a person's Ctrl-C does.
 */
export interface TerminalRun {
  child: ChildProcessWithoutNullStreams;
  exited: Promise<number | null>;
  /** Everything the terminal showed so far, with `\r\n` as `\n`. */
  screen(): string;
  /** Resolves once the screen matches `pattern` (bounded). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  interrupt(): void;
}

const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;

export function runInTerminal(args: string[], env: NodeJS.ProcessEnv = {}): TerminalRun {
  // `exec`: `script` runs the command through $SHELL, and a shell that stays as the parent (dash, the
  // `sh` of a CI run without SHELL) is itself killed by the Ctrl-C, ending the run with 130.
  const command = `exec ${[process.execPath, '--import', 'tsx', 'dev/cli.ts', ...args].map(quote).join(' ')}`;
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: join(__dirname, '../..'),
    // A person's terminal, not CI's: Node reads `CI` (set in CI runs) as a terminal of two colours.
    env: {
      ...process.env,
      GATEWAY_LOG_LEVEL: undefined,
      NO_COLOR: undefined,
      CI: undefined,
      TERM: 'xterm-256color',
      ...env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let screen = '';
  child.stdout.on('data', (chunk: Buffer) => (screen += chunk.toString().replaceAll('\r\n', '\n')));
  child.stderr.on('data', (chunk: Buffer) => (screen += chunk.toString().replaceAll('\r\n', '\n')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const waitFor = (pattern: RegExp, timeoutMs = 30_000) => outputMatching(child, () => screen, pattern, timeoutMs);
  return { child, exited, screen: () => screen, waitFor, interrupt: () => child.stdin.write('\u0003') };
}
