import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Child processes for the benchmark: each server gets its own event loop, as in a deployment. */
export interface Child {
  url: string;
  process: ChildProcess;
  /** Writes `line` to the child's stdin and resolves with the first later output line matching `pattern`. */
  ask(line: string, pattern: RegExp): Promise<RegExpExecArray>;
  stop(): Promise<void>;
}

const root = join(__dirname, '..');

export async function startChild(
  args: string[],
  readyPattern: RegExp,
  env: NodeJS.ProcessEnv = {},
  nodeArgs: string[] = [],
  node: string = process.execPath,
): Promise<Child> {
  // tsx as a loader in the same process (not its CLI, which adds a parent process): node flags such
  // as --cpu-prof apply to the server itself, and a kill reaches it.
  const argv = [...nodeArgs, '--import', 'tsx', ...args];
  const child = spawn(node, argv, {
    cwd: root,
    env: { ...process.env, GATEWAY_LOG_LEVEL: 'SILENT', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  const waiting: Array<{ pattern: RegExp; from: number; resolve: (m: RegExpExecArray) => void }> = [];
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const wait of [...waiting]) {
      const match = wait.pattern.exec(output.slice(wait.from));
      if (match) {
        waiting.splice(waiting.indexOf(wait), 1);
        wait.resolve(match);
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`did not start: ${args.join(' ')}\n${output}`)), 60_000);
    waiting.push({
      pattern: readyPattern,
      from: 0,
      resolve: (match) => {
        clearTimeout(timer);
        resolve(match[1]!);
      },
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${output}`)));
  });
  return {
    url,
    process: child,
    ask: (line, pattern) =>
      new Promise((resolve) => {
        waiting.push({ pattern, from: output.length, resolve });
        child.stdin!.write(`${line}\n`);
      }),
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

export function startTarget(kind: 'legacy' | 'modern' | 'dual' = 'legacy'): Promise<Child> {
  return startChild(['bench/serve-target.ts', kind], /ready (\S+)/);
}

/** A gateway process (bench/serve-gateway.ts) on the given DynamoDB API; `node`: another Node.js binary. */
export function startGatewayChild(
  config: object,
  dynamodbEndpoint: string,
  nodeArgs: string[] = [],
  node?: string,
): Promise<Child> {
  const file = join(mkdtempSync(join(tmpdir(), 'bench-')), 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return startChild(['bench/serve-gateway.ts', file, dynamodbEndpoint], /MCP gateway ready: (\S+)/, {}, nodeArgs, node);
}

/** CPU time (user + system, ms) the process has used so far, as its own `process.cpuUsage()` says. */
export async function cpuMs(child: Child): Promise<number> {
  const [, user, system] = await child.ask('cpu', /cpu (\d+) (\d+)/);
  return (Number(user) + Number(system)) / 1000;
}

/** DynamoDB requests by operation so far (bench/serve-dynamo.ts). */
export async function dynamoCounts(
  dynamo: Child,
): Promise<Record<string, { requests: number; responseBytes: number }>> {
  const [, json] = await dynamo.ask('counts', /counts (\{.*\})\n/);
  return JSON.parse(json!);
}
