import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { outputMatching } from './child-output';

/** The last line of the local server's ready block, whatever the configuration. */
const LAST_READY_LINE = /^ {2}Ctrl-C stops it; npm start -- --help lists the flags$/m;

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
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  // The --lambda and --web-function forms print their block in one write, with the URL line
  // (dev/deployment-cli.ts); the local server's block ends with this line (dev/ready-lines.ts).
  const oneWrite = args.includes('--lambda') || args.includes('--web-function');
  const ready = async () => {
    const printed = await outputMatching(child, () => stdout, /MCP gateway ready: (\S+)/).catch(() => undefined);
    if (!printed) return undefined;
    if (!oneWrite) await outputMatching(child, () => stdout, LAST_READY_LINE).catch(() => undefined);
    return printed[1];
  };
  return { child, exited, ready, output: () => ({ stdout, stderr }) };
}
