import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Child processes for the benchmark: each server gets its own event loop, as in a deployment. */
export interface Child {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

const root = join(__dirname, '..');

export async function startChild(
  args: string[],
  readyPattern: RegExp,
  env: NodeJS.ProcessEnv = {},
  nodeArgs: string[] = [],
): Promise<Child> {
  // tsx as a loader in the same process (not its CLI, which adds a parent process): node flags such
  // as --cpu-prof apply to the server itself, and a kill reaches it.
  const argv = [...nodeArgs, '--import', 'tsx', ...args];
  const child = spawn(process.execPath, argv, {
    cwd: root,
    env: { ...process.env, GATEWAY_LOG_LEVEL: 'SILENT', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`did not start: ${args.join(' ')}\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = readyPattern.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${output}`)));
  });
  return {
    url,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const force = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(force);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

export function startTarget(kind: 'legacy' | 'modern' = 'legacy'): Promise<Child> {
  return startChild(['bench/serve-target.ts', kind], /ready (\S+)/);
}

export function startGatewayChild(config: object, dynamodbEndpoint: string): Promise<Child> {
  const file = join(mkdtempSync(join(tmpdir(), 'bench-')), 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return startChild(
    ['lambda/local/cli.ts', '--port', '0', '--no-demo', '--config', file, '--dynamodb-endpoint', dynamodbEndpoint],
    /MCP gateway ready: (\S+)/,
  );
}
