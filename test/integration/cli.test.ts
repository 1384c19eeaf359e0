import { mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FLAGS } from '../../dev/cli-flags';
import { reportTargetsAtStartup } from '../../dev/startup-report';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { buildGatewayDeps } from '../../lambda/app/bootstrap';
import { parseConfig } from '../../lambda/config/schema';
import type { GatewayLogger } from '../../lambda/observability/logger';
import type { DynamoSessionStore } from '../../lambda/state/dynamo-store';
import { runCli } from '../support/cli';
import { initSession, post, readMessage } from '../support/mcp-http';

/** `npm start` as a newcomer runs it: flags, the embedded defaults, a bad config, signals. */
// Free ports: the fixed defaults (8080, 3001, 3002) may be taken on a shared machine.
const FREE_PORTS = ['--port', '0', '--demo-port', '0', '--demo-modern-port', '0'];

describe('npm start', () => {
  it('starts with no WARN, serves both demo targets over MCP, and exits cleanly on SIGTERM', async () => {
    const cli = runCli(FREE_PORTS, {}); // the default log level (INFO), output piped: JSON lines
    try {
      const url = await cli.ready();
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const { stdout: ready, stderr: early } = cli.output();
      expect(ready).toMatch(
        /targets: demo → http:\/\/127\.0\.0\.1:\d+\/mcp, demo-modern → http:\/\/127\.0\.0\.1:\d+\/mcp/,
      );
      // What it generated is said with the rest of the start report, not as a log line before it.
      expect(ready.startsWith('MCP gateway ready: ')).toBe(true);
      expect(ready).toContain(
        '\n  requestState key: a random one for this process (set requestStateKeys in a --config file to share one across processes)\n',
      );
      expect(early).toBe('');
      const { headers } = await initSession(url!, {});
      const echo = async (tool: string) => {
        const res = await post(url!, headers, {
          jsonrpc: '2.0',
          id: tool,
          method: 'tools/call',
          params: { name: tool, arguments: { text: 'cli' } },
        });
        return (await readMessage(res)).result.content[0].text;
      };
      expect(await echo('demo___echo')).toBe('echo: cli');
      expect(await echo('demo-modern___echo')).toBe('echo: cli');
      // Nothing on a default start and its first calls is a WARN (or worse); the calls are logged at INFO.
      const { stdout, stderr } = cli.output();
      const logLevels = `${stdout}${stderr}`
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => (JSON.parse(line) as { level: string; message: string }).level);
      expect(logLevels.length).toBeGreaterThan(0);
      expect(logLevels.filter((level) => level !== 'INFO' && level !== 'DEBUG')).toEqual([]);
      expect(stderr).toBe('');
    } finally {
      cli.child.kill('SIGTERM');
    }
    expect(await cli.exited).toBe(0);
  }, 40_000);

  it('fails at start listing every problem of an invalid config file with its line and column', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cfg-')), 'bad.json');
    writeFileSync(
      file,
      JSON.stringify({ targets: [{ name: 'bad name', url: 'http://127.0.0.1:1/mcp' }], sessionTimeoutSeconds: 10 }),
    );
    const cli = runCli(['--port', '0', '--config', file, '--no-demo']);
    expect(await cli.exited).toBe(1);
    expect(cli.output().stderr).toBe(
      [
        'invalid configuration, 2 problems:',
        `${file}:1:14 targets[0].name: letters, digits and hyphens only`,
        `${file}:1:65 sessionTimeoutSeconds: Too small: expected number to be >=900`,
        '',
      ].join('\n'),
    );
  }, 40_000);

  it('refuses an unknown flag and a bad value with one line and exit status 2', async () => {
    const unknown = runCli(['--prot', '1']);
    const badValue = runCli(['--demo-port', 'x']);
    expect(await unknown.exited).toBe(2);
    expect(unknown.output()).toEqual({
      stdout: '',
      stderr: 'unknown flag --prot (did you mean --port?); npm start -- --help lists the flags\n',
    });
    expect(await badValue.exited).toBe(2);
    expect(badValue.output().stderr).toBe(
      '--demo-port: not a port number: x (0–65535); npm start -- --help lists the flags\n',
    );
  }, 40_000);

  it('--help lists every flag and exits 0', async () => {
    const cli = runCli(['--help']);
    expect(await cli.exited).toBe(0);
    const { stdout } = cli.output();
    expect(stdout).toMatch(/^Usage: npm start -- \[flags\]/);
    for (const name of Object.keys(FLAGS)) expect(stdout).toContain(`--${name}`);
  }, 40_000);

  it('names the flag whose chosen port is in use (exit 1), without starting anything', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const { port } = busy.address() as AddressInfo;
    try {
      const cli = runCli(['--port', '0', '--demo-port', String(port), '--demo-modern-port', '0']);
      expect(await cli.exited).toBe(1);
      expect(cli.output().stderr).toBe(
        `--demo-port ${port}: in use by another process; choose another port with --demo-port N (0 picks a free one)\n`,
      );
      expect(cli.output().stdout).not.toContain('MCP gateway ready');
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  }, 40_000);

  it('--lambda shares the flag rules (a bad value is a one-line error, exit 2); the mode itself: test/lambda-runtime', async () => {
    const cli = runCli(['--lambda', '--port', 'x']);
    expect(await cli.exited).toBe(2);
    expect(cli.output().stderr).toMatch(/^--port: not a port number: x/);
  }, 40_000);
});

describe('start-up report', () => {
  it('reports exposed names longer than 64 characters and unreachable targets; a 2026-07-28-only target is reachable', async () => {
    const demo = await startDemoTarget();
    const modern = await startModernDemoTarget();
    const warnings: Array<[string, unknown]> = [];
    const logger: GatewayLogger = {
      debug: () => undefined,
      info: () => undefined,
      error: () => undefined,
      warn: ((message: string, extra: unknown) => warnings.push([message, extra])) as GatewayLogger['warn'],
    };
    try {
      const long = 'a-very-long-target-name-that-pushes-every-exposed-name-over-64';
      const longModern = 'a-modern-only-target-whose-name-pushes-exposed-names-over-64';
      const config = parseConfig({
        targets: [
          { name: long, url: demo.url },
          { name: longModern, url: modern.url },
          { name: 'down', url: 'http://127.0.0.1:9/mcp' },
        ],
      });
      const report = await reportTargetsAtStartup(
        buildGatewayDeps(config, { logger, store: {} as DynamoSessionStore }),
      );
      expect([...report.reachable].sort()).toEqual([long, longModern].sort());
      expect(report.longNames).toContain(`${long}___access_github_repo`);
      expect(report.longNames).toContain(`${longModern}___confirm_stateless`);
      expect(warnings.map(([m]) => m)).toEqual(
        expect.arrayContaining([
          'target not reachable at start-up',
          'exposed names longer than 64 characters; some clients refuse them',
        ]),
      );
      const unreachable = warnings.filter(([m]) => m === 'target not reachable at start-up');
      expect(unreachable.map(([, extra]) => (extra as { target: string }).target)).toEqual(['down']);
    } finally {
      await demo.close();
      await modern.close();
    }
  });
});
