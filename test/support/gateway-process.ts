import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GatewayConfigInput } from '../../lambda/config/schema';

/**
 * A gateway as its own process — `npm start` (`--no-demo --port 0 --log-format json --config F --dynamodb-endpoint URL`),
 * optionally `--lambda` or `--web-function`, optionally under node flags (a heap cap) — that a fault test can stop
 * gracefully (SIGTERM) or kill outright (SIGKILL), as an instance of a deployment dies. Also dynalite
 * as its own process, to pause (SIGSTOP) as a DynamoDB that stops answering.
 */
export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Sends `signal` and resolves with the exit code (or signal name) once the process is gone. */
  stop(signal?: NodeJS.Signals): Promise<number | string | null>;
}

export async function startGatewayProcess(
  config: GatewayConfigInput,
  dynamodbEndpoint: string,
  options: {
    /** `npm start -- --lambda`: the deployment bundle in the Lambda emulator. */
    lambda?: boolean;
    /** `npm start -- --web-function`: the Web Function bundle in its emulator. */
    webFunction?: boolean;
    env?: Record<string, string>;
    port?: number;
    /** Flags for node itself, before the script (e.g. `--max-old-space-size=256`: a memory cap). */
    nodeFlags?: string[];
  } = {},
): Promise<GatewayProcess> {
  const file = join(mkdtempSync(join(tmpdir(), 'gw-fault-')), 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const form = [...(options.lambda ? ['--lambda'] : []), ...(options.webFunction ? ['--web-function'] : [])];
  const args = [...(options.nodeFlags ?? []), '--import', 'tsx', 'dev/cli.ts', ...form];
  args.push(
    '--port',
    String(options.port ?? 0),
    // The JSON lines, which tests parse (also the default when the output is a pipe, as here).
    '--log-format',
    'json',
    '--no-demo',
    '--config',
    file,
    '--dynamodb-endpoint',
    dynamodbEndpoint,
  );
  const child = spawn(process.execPath, args, {
    cwd: join(__dirname, '../..'),
    env: { ...process.env, GATEWAY_LOG_LEVEL: 'SILENT', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return { child, ...(await readyLine(child, /MCP gateway ready: (\S+)/)), stop: (signal) => stop(child, signal) };
}

export interface DynamoProcess {
  endpoint: string;
  child: ChildProcess;
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

/** dynalite in a process of its own (bench/serve-dynamo.ts), so that it can be paused. */
export async function startDynamoProcess(): Promise<DynamoProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/serve-dynamo.ts'], {
    cwd: join(__dirname, '../..'),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { url } = await readyLine(child, /ready (\S+)/);
  return {
    endpoint: url,
    child,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    close: async () => {
      child.kill('SIGCONT'); // a stopped process is resumed before it is terminated
      await stop(child, 'SIGTERM');
    },
  };
}

async function readyLine(child: ChildProcess, pattern: RegExp): Promise<{ url: string; output(): string }> {
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line: ${output}`)), 60_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = pattern.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}: ${output}`));
    });
  });
  return { url, output: () => output };
}

function stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | string | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode ?? child.signalCode);
    child.once('exit', (code, received) => resolve(code ?? received));
    child.kill(signal);
  });
}
