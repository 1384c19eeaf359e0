import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../support/cli';
import { initSession, post, readMessage } from '../support/mcp-http';
import { describeNeeding, terminal } from '../support/prerequisites';
import { runInTerminal } from '../support/terminal';

/**
 * What `npm start` shows a person at a terminal (a pseudo-terminal from util-linux `script`): the ready
 * lines, then one short line per log entry; JSON lines when its output is piped or with
 * `--log-format json`; `--log-level` on the command line.
 */

jest.setTimeout(60_000);

const FREE_PORTS = ['--port', '0', '--demo-port', '0', '--demo-modern-port', '0'];

/** A configuration with a target nobody serves (port 1 on the loopback): a WARN at start-up. */
function unreachableTargetConfig(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'console-')), 'gateway.json');
  writeFileSync(file, JSON.stringify({ targets: [{ name: 'gone', url: 'http://127.0.0.1:1/mcp' }] }));
  return file;
}

/** What changes from run to run: times, ports, durations, session ids. */
function normalised(screen: string): string {
  return screen
    .replace(/\^C/g, '')
    .replace(/\d\d:\d\d:\d\d\.\d{3}/g, 'hh:mm:ss.mmm')
    .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:PORT')
    .replace(/--port \d+/g, '--port N')
    .replace(/\b\d+ ms\b/g, 'N ms')
    .replace(/holdMs=\d+/g, 'holdMs=N')
    .replace(/session=\S{8}…/g, 'session=SESSION…');
}

const withTerminal = describeNeeding(terminal);

withTerminal('npm start at a terminal', () => {
  it('prints the ready lines (the requestState key among them), then a short line per entry; Ctrl-C stops it', async () => {
    const run = runInTerminal([...FREE_PORTS, '--config', unreachableTargetConfig()], { NO_COLOR: '1', TZ: 'UTC' });
    try {
      const [, url] = await run.waitFor(/MCP gateway ready: (\S+)\n[\s\S]*Ctrl-C stops it[^\n]*\n/);
      const { headers } = await initSession(url!, { clientInfo: { name: 'console-test', version: '1.0.0' } });
      const res = await post(url!, headers, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'demo___echo', arguments: { text: 'terminal' } },
      });
      expect((await readMessage(res)).result.content[0].text).toBe('echo: terminal');
      await run.waitFor(/mcp request {2}POST tools\/call[^\n]*\n/);
      run.interrupt();
      expect(await run.exited).toBe(0);
      expect(normalised(run.screen())).toMatchSnapshot();
    } finally {
      run.child.kill('SIGKILL');
    }
  });

  it('colours the level on a terminal that has colours (NO_COLOR unset)', async () => {
    const run = runInTerminal(['--port', '0', '--no-demo', '--config', unreachableTargetConfig()]);
    try {
      await run.waitFor(/Ctrl-C stops it/);
      expect(run.screen()).toContain('\u001b[33mWARN \u001b[0m target not reachable at start-up');
      run.interrupt();
      expect(await run.exited).toBe(0);
    } finally {
      run.child.kill('SIGKILL');
    }
  });

  it('writes JSON lines at a terminal with --log-format json', async () => {
    const run = runInTerminal([
      '--port',
      '0',
      '--no-demo',
      '--config',
      unreachableTargetConfig(),
      '--log-format',
      'json',
    ]);
    try {
      await run.waitFor(/Ctrl-C stops it/);
      const [first] = run.screen().split('\n');
      expect(JSON.parse(first ?? '')).toMatchObject({ level: 'WARN', message: 'target not reachable at start-up' });
      run.interrupt();
      expect(await run.exited).toBe(0);
    } finally {
      run.child.kill('SIGKILL');
    }
  });
});

describe('npm start with its output piped', () => {
  it('writes JSON lines, and --log-level leaves out what is below it', async () => {
    const config = unreachableTargetConfig();
    for (const [level, expected] of [
      ['WARN', ['WARN target not reachable at start-up', 'WARN target skipped in an aggregated list']],
      ['ERROR', []],
    ] as const) {
      const cli = runCli(['--port', '0', '--no-demo', '--config', config, '--log-level', level], {});
      try {
        const url = await cli.ready();
        const { headers } = await initSession(url!);
        await readMessage(await post(url!, headers, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }));
      } finally {
        cli.child.kill('SIGTERM');
      }
      expect(await cli.exited).toBe(0);
      const { stdout, stderr } = cli.output();
      const entries = `${stdout}${stderr}`
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: string; message: string });
      expect(entries.map((entry) => `${entry.level} ${entry.message}`)).toEqual(expected);
    }
  });
});
