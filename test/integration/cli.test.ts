import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildGatewayDeps } from '../../lambda/app/bootstrap';
import { reportTargetsAtStartup } from '../../lambda/app/startup-report';
import { parseConfig } from '../../lambda/config/schema';
import { startDemoTarget } from '../../lambda/local/demo-target';
import type { GatewayLogger } from '../../lambda/observability/logger';
import type { DynamoSessionStore } from '../../lambda/state/dynamo-store';
import { initSession, post, readMessage } from '../support/mcp-http';

/** `npm start` as a newcomer runs it: flags, the embedded defaults, a bad config, signals. */
function runCli(args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'lambda/local/cli.ts', ...args], {
    cwd: join(__dirname, '../..'),
    env: { ...process.env, GATEWAY_LOG_LEVEL: 'SILENT' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const ready = async () => {
    for (let i = 0; i < 300 && !/MCP gateway ready: (\S+)/.test(stdout); i++) {
      if (child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    return /MCP gateway ready: (\S+)/.exec(stdout)?.[1];
  };
  return { child, exited, ready, output: () => ({ stdout, stderr }) };
}

describe('npm start', () => {
  it('starts on its embedded defaults with the demo target, serves MCP, and exits cleanly on SIGTERM', async () => {
    const cli = runCli(['--port', '0']);
    const url = await cli.ready();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(cli.output().stdout).toContain('targets: demo → http://127.0.0.1:');
    const { headers } = await initSession(url!, {});
    const res = await post(url!, headers, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'demo___echo', arguments: { text: 'cli' } },
    });
    expect((await readMessage(res)).result.content[0].text).toBe('echo: cli');
    cli.child.kill('SIGTERM');
    expect(await cli.exited).toBe(0);
  }, 40_000);

  it('fails at start naming the offending field of an invalid config file', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cfg-')), 'bad.json');
    writeFileSync(
      file,
      JSON.stringify({ targets: [{ name: 'bad name', url: 'http://127.0.0.1:1/mcp' }], sessionTimeoutSeconds: 10 }),
    );
    const cli = runCli(['--port', '0', '--config', file, '--no-demo']);
    expect(await cli.exited).toBe(1);
    expect(cli.output().stderr).toContain('targets.0.name: letters, digits and hyphens only');
    expect(cli.output().stderr).toContain('sessionTimeoutSeconds');
  }, 40_000);

  it('refuses an unknown flag with the usage line', async () => {
    const cli = runCli(['--prot', '1']);
    expect(await cli.exited).toBe(1);
    expect(cli.output().stderr).toContain('usage: npm start --');
  }, 40_000);
});

describe('start-up report', () => {
  it('reports exposed names longer than 64 characters and unreachable targets', async () => {
    const demo = await startDemoTarget();
    const warnings: Array<[string, unknown]> = [];
    const logger: GatewayLogger = {
      debug: () => undefined,
      info: () => undefined,
      error: () => undefined,
      warn: ((message: string, extra: unknown) => warnings.push([message, extra])) as GatewayLogger['warn'],
    };
    try {
      const long = 'a-very-long-target-name-that-pushes-every-exposed-name-over-64';
      const config = parseConfig({
        targets: [
          { name: long, url: demo.url },
          { name: 'down', url: 'http://127.0.0.1:9/mcp' },
        ],
      });
      const report = await reportTargetsAtStartup(
        buildGatewayDeps(config, { logger, store: {} as DynamoSessionStore }),
      );
      expect(report.reachable).toEqual([long]);
      expect(report.longNames).toContain(`${long}___access_github_repo`);
      expect(warnings.map(([m]) => m)).toEqual(
        expect.arrayContaining([
          'target not reachable at start-up',
          'exposed names longer than 64 characters; some clients refuse them',
        ]),
      );
    } finally {
      await demo.close();
    }
  });
});
