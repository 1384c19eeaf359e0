import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { outputMatching } from './child-output';

/**
 * `npm start` in a child process, as a person runs it: `ready()` resolves with the printed URL (or
 * undefined if it exited first) once the whole ready block is out (the lines after the URL arrive in
 * later writes). Log level SILENT unless `env` says otherwise.
 */
export function runCli(args: string[], env: NodeJS.ProcessEnv = { GATEWAY_LOG_LEVEL: 'SILENT' }) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'dev/cli.ts', ...args], {
    cwd: join(__dirname, '../..'),
    env: { ...process.env, GATEWAY_LOG_LEVEL: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let lastOutput = Date.now();
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    lastOutput = Date.now();
  });
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const ready = async () => {
    const printed = await outputMatching(child, () => stdout, /MCP gateway ready: (\S+)/).catch(() => undefined);
    if (!printed) return undefined;
    // A duration, for the block has no last line of its own (its lines depend on the configuration):
    // it is out when stdout has been quiet for a moment (bounded).
    for (let i = 0; i < 50 && child.exitCode === null && Date.now() - lastOutput < 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    return /MCP gateway ready: (\S+)/.exec(stdout)?.[1];
  };
  return { child, exited, ready, output: () => ({ stdout, stderr }) };
}
