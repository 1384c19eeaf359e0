import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The README's quickstart shows what `npm start` prints when it is ready and what `npm run demo:client`
 * prints when you answer `y`. This script runs both for real (on free ports, so it can run beside
 * another gateway) and writes their output into the README's two blocks, with the ports a default start
 * has. Log lines are not part of it (log level SILENT): they are not what the quickstart shows.
 *
 *   npx tsx scripts/quickstart-transcript.ts           # rewrite the README's two blocks
 *   npx tsx scripts/quickstart-transcript.ts --check   # exit 1 when the README differs from a real run
 */

const ROOT = join(__dirname, '..');
const README = join(ROOT, 'README.md');
/** How the README shows the addresses of a default start; the embedded DynamoDB's port is a free one. */
const SHOWN = {
  gateway: 'http://127.0.0.1:8080/mcp',
  secondGatewayPort: '8081',
  demo: 'http://127.0.0.1:3001/mcp',
  demoModern: 'http://127.0.0.1:3002/mcp',
  dynamodb: 'http://127.0.0.1:41235',
};
/** Bounds of a run: a gateway that never says it is ready, or a client that never ends, fails it. */
const READY_TIMEOUT_MS = 60_000;
const QUIET_MS = 300;
const CLIENT_TIMEOUT_MS = 60_000;

export interface Transcript {
  /** What `npm start` prints from its ready line on. */
  ready: string[];
  /** What `npm run demo:client` prints when the user types `y`. */
  demo: string[];
}

/** Runs `npm start` and `npm run demo:client` (answering `y`) and returns what they printed, as the README shows it. */
export async function recordQuickstart(): Promise<Transcript> {
  const gateway = spawnTsx(['dev/cli.ts', '--port', '0', '--demo-port', '0', '--demo-modern-port', '0']);
  try {
    const ready = await readyBlock(gateway);
    const url = /^MCP gateway ready: (\S+)/.exec(ready[0] ?? '')?.[1];
    if (!url) throw new Error(`npm start printed no ready line:\n${ready.join('\n')}`);
    const demo = await demoClient(url);
    return { ready: normalise(ready, url), demo: normalise(demo, url) };
  } finally {
    await stop(gateway);
  }
}

/** SIGTERM, as Ctrl-C's sibling: the gateway shuts down cleanly; SIGKILL if it has not within a few seconds. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(killer);
}

/** The README's two blocks as they are now. */
export function readmeTranscript(readme: string): Transcript {
  return { ready: block(readme, 'MCP gateway ready:').lines, demo: block(readme, 'connected to ').lines };
}

/** The README with its two blocks replaced by the transcript. */
export function withTranscript(readme: string, transcript: Transcript): string {
  let text = readme;
  for (const [first, lines] of [
    ['MCP gateway ready:', transcript.ready],
    ['connected to ', transcript.demo],
  ] as const) {
    const { start, end, indent } = block(text, first);
    const body = lines.map((line) => (line ? `${indent}${line}` : '')).join('\n');
    text = `${text.slice(0, start)}${body}\n${text.slice(end)}`;
  }
  return text;
}

/** The fenced block whose first line starts with `first`: where its lines are, and their indentation. */
function block(readme: string, first: string): { start: number; end: number; indent: string; lines: string[] } {
  const fence = new RegExp(`^( *)\`\`\`\\n(\\1${regexLiteral(first)}[\\s\\S]*?)^\\1\`\`\`$`, 'm').exec(readme);
  if (!fence?.[2]) throw new Error(`README.md has no fenced block starting with "${first}"`);
  const indent = fence[1] ?? '';
  const start = fence.index + indent.length + 4;
  const end = start + fence[2].length;
  const lines = fence[2]
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => line.slice(indent.length));
  return { start, end, indent, lines };
}

function regexLiteral(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** This run's addresses replaced by those of a default start (`npm start` with no flag). */
function normalise(lines: string[], url: string): string[] {
  const ready = lines.join('\n');
  const demo = /demo → (\S+?),/.exec(ready)?.[1];
  const demoModern = /demo-modern → (\S+)/.exec(ready)?.[1];
  const dynamodb = /DynamoDB: embedded \((\S+)\)/.exec(ready)?.[1];
  const port = Number(new URL(url).port);
  return lines.map((line) => {
    let shown = line.replaceAll(`npm run demo:client -- --url ${url}`, 'npm run demo:client');
    shown = shown.replaceAll(`--port ${port + 1} `, `--port ${SHOWN.secondGatewayPort} `);
    for (const [actual, replacement] of [
      [url, SHOWN.gateway],
      [demo, SHOWN.demo],
      [demoModern, SHOWN.demoModern],
      [dynamodb, SHOWN.dynamodb],
    ] as const) {
      if (actual) shown = shown.replaceAll(actual, replacement);
    }
    return shown.trimEnd();
  });
}

function spawnTsx(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, GATEWAY_LOG_LEVEL: 'SILENT', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** The lines from the ready line on, once stdout has been quiet for a moment after it. */
function readyBlock(gateway: ChildProcess): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    let quiet: NodeJS.Timeout | undefined;
    const done = (error?: Error) => {
      clearTimeout(timeout);
      clearTimeout(quiet);
      gateway.stdout?.removeAllListeners('data');
      if (error) reject(error);
      else resolve(stdout.slice(stdout.indexOf('MCP gateway ready:')).trimEnd().split('\n'));
    };
    const timeout = setTimeout(
      () => done(new Error(`npm start was not ready in ${READY_TIMEOUT_MS} ms:\n${stdout}${stderr}`)),
      READY_TIMEOUT_MS,
    );
    gateway.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    gateway.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (!stdout.includes('MCP gateway ready:')) return;
      clearTimeout(quiet);
      quiet = setTimeout(() => done(), QUIET_MS);
    });
    gateway.once('exit', (code) =>
      done(new Error(`npm start exited (${code}) before it was ready:\n${stdout}${stderr}`)),
    );
  });
}

/** `npm run demo:client -- --url URL` with `y` typed; its lines, or an error with what it printed. */
function demoClient(url: string): Promise<string[]> {
  const client = spawnTsx(['dev/demo-client.ts', '--url', url]);
  let stdout = '';
  let stderr = '';
  client.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  client.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  client.stdin?.end('y\n');
  return new Promise((resolve, reject) => {
    const timeout = setTimeout(() => client.kill('SIGKILL'), CLIENT_TIMEOUT_MS);
    client.once('exit', (code) => {
      clearTimeout(timeout);
      if (code === 0 && !stderr) resolve(stdout.trimEnd().split('\n'));
      else reject(new Error(`npm run demo:client exited (${code}):\n${stdout}${stderr}`));
    });
  });
}

async function main(check: boolean): Promise<number> {
  const readme = readFileSync(README, 'utf8');
  const updated = withTranscript(readme, await recordQuickstart());
  if (updated === readme) {
    console.log('README.md: the quickstart transcript is what a real run prints');
    return 0;
  }
  if (check) {
    console.error(
      'README.md: the quickstart transcript differs from a real run; npx tsx scripts/quickstart-transcript.ts rewrites it',
    );
    return 1;
  }
  writeFileSync(README, updated);
  console.log('README.md: the quickstart transcript rewritten from a real run');
  return 0;
}

if (require.main === module) {
  main(process.argv.includes('--check')).then(
    (status) => process.exit(status),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    },
  );
}
