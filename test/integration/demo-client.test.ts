import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type OAuthDemo, startOAuthDemo } from '../../dev/oauth-demo/demo';
import { runCli } from '../support/cli';

/**
 * The quickstart's last step: `npm start`, then `npm run demo:client`, the official SDK client whose
 * tool call asks a question the reader answers in the terminal (here: on stdin, as a pipe). It says
 * who asks (the target, or the gateway itself), lists the gateway's tools, refuses a mistyped one.
 */

jest.setTimeout(90_000);

const ROOT = join(__dirname, '../..');
let gateway: ReturnType<typeof runCli>;
let url: string;

beforeAll(async () => {
  // The gateway confirms calls of demo___echo itself (confirmTools); the demo's other tools ask as they do.
  const config = join(mkdtempSync(join(tmpdir(), 'demo-client-')), 'gateway.json');
  writeFileSync(config, JSON.stringify({ confirmTools: ['demo___echo'] }));
  gateway = runCli(['--port', '0', '--demo-port', '0', '--demo-modern-port', '0', '--config', config]);
  url = (await gateway.ready())!;
});

afterAll(async () => {
  gateway.child.kill('SIGTERM');
  await gateway.exited;
});

/** `npm run demo:client -- …` with `input` typed on stdin; its output and exit status. */
function demoClient(
  args: string[],
  input: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'dev/demo-client.ts', ...args], {
    cwd: ROOT,
    // Piped, the client prints links whole unless a test says otherwise.
    env: { ...process.env, FORCE_HYPERLINK: undefined, COLUMNS: undefined, ...env },
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
  // The gateway asks it on the 2026-07-28 target's behalf; the question is the target's.
  expect(run.stdout).toContain('\nthe target asks (form elicitation): Run `aws s3 ls`?\n');
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

it("says the gateway asks when it is the gateway's own confirmation, then calls the tool", async () => {
  const run = await demoClient(['--url', url, '--tool', 'demo___echo', '--arguments', '{"text":"hi"}'], 'y\n');
  expect(run).toMatchObject({ status: 0, stderr: '' });
  expect(run.stdout).toBe(
    [
      `connected to ${url} (mcp-gateway 0.1.0, MCP 2025-11-25)`,
      'calling demo___echo {"text":"hi"}',
      '',
      'the gateway asks (form elicitation): The MCP gateway asks you to confirm a tool call before it is forwarded.',
      '',
      'Tool: demo___echo (tool "echo" of target "demo")',
      'Arguments:',
      '{',
      '  "text": "hi"',
      '}',
      '  Run demo___echo? — Allow the gateway to forward this call to the target. [y/n]: y',
      'answered: accept {"confirm":true}',
      '',
      'result: echo: hi',
      '',
    ].join('\n'),
  );
});

it("--help lists the flags and the gateway's tools; --list lists the tools", async () => {
  const help = await demoClient(['--url', url, '--help'], '');
  expect(help).toMatchObject({ status: 0, stderr: '' });
  for (const flag of [
    '--url URL',
    '--tool NAME',
    '--arguments JSON',
    '--header',
    '--list',
    '--full-links',
    '-h, --help',
  ])
    expect(help.stdout).toContain(`\n  ${flag}`);
  expect(help.stdout).toContain(`\ntools at ${url}:\n`);
  expect(help.stdout).toMatch(
    /^ {2}demo___use_aws +Asks the user \(form elicitation\) before running an AWS CLI command\.$/m,
  );

  const list = await demoClient(['--url', url, '--list'], '');
  expect(list).toMatchObject({ status: 0, stderr: '' });
  const lines = list.stdout.trimEnd().split('\n');
  expect(lines[0]).toBe(`tools at ${url}:`);
  expect(lines).toContain('  demo-modern___echo                Echoes the text back.');
  expect(lines.filter((line) => /^ {2}demo(-modern)?___/.test(line))).toHaveLength(lines.length - 1);
});

it('--help without a gateway still lists the flags and says why no tools are listed', async () => {
  const help = await demoClient(['--url', 'http://127.0.0.1:9/mcp', '-h'], '');
  expect(help.status).toBe(0);
  expect(help.stdout).toContain('  --list ');
  expect(help.stdout).toContain('tools: none listed, no gateway answered at http://127.0.0.1:9/mcp');
});

it('a mistyped --tool is refused with the name meant, before anything is called (exit 2)', async () => {
  const typo = await demoClient(['--url', url, '--tool', 'demo___use_aw'], 'y\n');
  expect(typo).toEqual({
    status: 2,
    stdout: '',
    stderr: `demo client: no tool "demo___use_aw" at ${url}; did you mean "demo___use_aws"? (--list lists the tools); nothing was called\n`,
  });
  const unprefixed = await demoClient(['--url', url, '--tool', 'use_aws'], 'y\n');
  expect(unprefixed.status).toBe(2);
  expect(unprefixed.stderr).toContain('did you mean "demo___use_aws" or "demo-modern___use_aws"?');
});

it('a tool that takes other arguments than the default is refused with an example, not called with guesses', async () => {
  const run = await demoClient(['--url', url, '--tool', 'demo-modern___echo'], '');
  expect(run).toEqual({
    status: 2,
    stdout: '',
    stderr: `demo client: demo-modern___echo takes "text": give its arguments, e.g. --arguments '{"text":"…"}'\n`,
  });
  const notAnObject = await demoClient(['--url', url, '--arguments', '[]'], '');
  expect(notAnObject.status).toBe(2);
  expect(notAnObject.stderr).toContain('--arguments must be a JSON object');
});

describe("a per-user OAuth target: the gateway's connect question and its long link", () => {
  let demo: OAuthDemo;
  beforeAll(async () => {
    demo = await startOAuthDemo({ port: 0, logLevel: 'SILENT' });
  });
  afterAll(async () => {
    await demo?.close();
  });

  const connect = (env: NodeJS.ProcessEnv, extra: string[] = []) =>
    demoClient(['--url', demo.mcpUrl, '--tool', demo.target.tool, '--arguments', '{}', ...extra], 'n\n', env);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: OSC 8 is made of control characters.
  const OSC8 = /\u001b]8;;([^\u001b]*)\u001b\\([^\u001b]*)\u001b]8;;\u001b\\/;

  it('says the gateway asks; on a terminal that shows hyperlinks the link is a short text on the line, linked to the whole URL', async () => {
    const run = await connect({ FORCE_HYPERLINK: '1', COLUMNS: '80' });
    // Its tools are listed once connected: the name is called although it is not listed yet.
    expect(run.stdout).toContain(
      'protected___whoami is not listed yet: its target lists its tools once you have connected your account there\n',
    );
    expect(run.stdout).toContain(
      '\nthe gateway asks (URL elicitation): Connect your account at protected: sign in there to let this gateway call it for you.\n',
    );
    const line = run.stdout.split('\n').find((l) => l.startsWith('  open this page'))!;
    const [, whole, shown] = OSC8.exec(line)!;
    expect(whole!.startsWith(`${demo.gatewayUrl}/connect?link=`)).toBe(true);
    expect(whole!.length).toBeGreaterThan(300);
    expect(shown).toBe(`${new URL(demo.gatewayUrl).host}/connect?…`);
    expect(line.replace(OSC8, shown!).length).toBeLessThanOrEqual(80);
    expect(run.stdout).toContain('--full-links prints it whole');
    // Declined: the gateway says nothing was sent to the target.
    expect(run.stdout).toContain('answered: decline');
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('you did not connect your account there (decline); nothing was sent to it');
  });

  it('prints the whole URL with --full-links, and when the terminal is not known to show hyperlinks', async () => {
    for (const run of [await connect({ FORCE_HYPERLINK: '1' }, ['--full-links']), await connect({})]) {
      expect(run.stdout).not.toContain('\u001b');
      expect(run.stdout).toMatch(
        new RegExp(`\n {2}open this page in a browser and decide there: ${demo.gatewayUrl}/connect\\?link=\\S{300,}\n`),
      );
    }
  });
});
