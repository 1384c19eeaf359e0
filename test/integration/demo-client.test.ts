import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../support/cli';

/**
 * The quickstart's last step: `npm start`, then `npm run demo:client`, the official SDK client whose
 * tool call asks a question the reader answers in the terminal (here: on stdin, as a pipe).
 */

jest.setTimeout(90_000);

const ROOT = join(__dirname, '../..');
let gateway: ReturnType<typeof runCli>;
let url: string;

beforeAll(async () => {
  gateway = runCli(['--port', '0', '--demo-port', '0', '--demo-modern-port', '0']);
  url = (await gateway.ready())!;
});

afterAll(async () => {
  gateway.child.kill('SIGTERM');
  await gateway.exited;
});

/** `npm run demo:client -- …` with `input` typed on stdin; its output and exit status. */
function demoClient(args: string[], input: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'dev/demo-client.ts', ...args], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(input);
  return new Promise((resolve) => child.on('exit', (status) => resolve({ status, stdout, stderr })));
}

it("the README's first screen has the commands (start, try, test) and the quickstart", () => {
  const firstScreen = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').slice(0, 40).join('\n');
  expect(firstScreen).toMatch(/^npm ci && npm start {2,}# /m);
  expect(firstScreen).toMatch(/^npm run demo:client {2,}# /m);
  expect(firstScreen).toMatch(/^npm test {2,}# /m);
  expect(firstScreen).toContain('## Quickstart');
  expect(firstScreen).toContain('```mermaid');
});

it("npm start's ready screen says how to try it", () => {
  expect(gateway.output().stdout).toContain(
    `  try it: npm run demo:client -- --url ${url}   (a tool call whose elicitation you answer in the terminal)`,
  );
});

it('prints the elicitation, takes the answer typed in the terminal, and prints the tool result (as the README shows)', async () => {
  const run = await demoClient(['--url', url], 'y\n');
  expect(run).toMatchObject({ status: 0, stderr: '' });
  // The README's quickstart shows this transcript for the default URL.
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const shown = run.stdout
    .trim()
    .replaceAll(url, 'http://127.0.0.1:8080/mcp')
    .split('\n')
    .map((line) => `   ${line}`.trimEnd());
  expect(readme).toContain(shown.join('\n'));
  expect(run.stdout).toBe(
    [
      `connected to ${url} (mcp-gateway 0.1.0, MCP 2025-11-25)`,
      'calling demo___use_aws {"command":"aws s3 ls"}',
      '',
      'the target asks (form elicitation): Run `aws s3 ls`?',
      '  Confirm — Proceed? [y/n]: y',
      'answered: accept {"confirm":true}',
      '',
      'result: executed: aws s3 ls',
      '',
    ].join('\n'),
  );
});

it('a "no" reaches the tool as the user gave it (2026-07-28 target)', async () => {
  const run = await demoClient(['--url', url, '--tool', 'demo-modern___use_aws'], 'maybe\nn\n');
  expect(run.status).toBe(0);
  expect(run.stdout).toContain('  Confirm [y/n]: maybe\n  (not understood; try again)\n  Confirm [y/n]: n\n');
  expect(run.stdout).toContain('result: not executed (confirm false)');
});

it('shows a URL elicitation as a page to open; ending the input cancels it', async () => {
  const run = await demoClient(
    ['--url', url, '--tool', 'demo___access_github_repo', '--arguments', '{"repo":"octo/hello"}'],
    '',
  );
  expect(run.status).toBe(0);
  expect(run.stdout).toMatch(/open this page in a browser and decide there: http:\/\/127\.0\.0\.1:\d+\/consent\/\S+/);
  expect(run.stdout).toContain('answered: cancel');
  expect(run.stdout).toContain('result: access to octo/hello not granted (cancel)');
});

it('says what to do when no gateway listens', async () => {
  const run = await demoClient(['--url', 'http://127.0.0.1:9/mcp'], '');
  expect(run.status).toBe(1);
  expect(run.stderr).toContain('(is the gateway running? start it with npm start)');
});
