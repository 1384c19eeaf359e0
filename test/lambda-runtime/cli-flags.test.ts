import { runCli } from '../support/cli';
import { freePort } from '../support/loopback';
import { initSession, post, readMessage } from '../support/mcp-http';

/**
 * `npm start -- --lambda` takes the flags `npm start` takes: the embedded DynamoDB's port, both demo
 * targets on chosen ports or at given URLs; it says what it prepares before it is ready.
 */

jest.setTimeout(120_000);

it('honours --dynamodb-port and the demo ports, starts both demo targets, and reports its preparation', async () => {
  const [dynamodbPort, demoPort, modernPort] = [await freePort(), await freePort(), await freePort()];
  const cli = runCli(
    [
      '--lambda',
      '--port',
      '0',
      '--dynamodb-port',
      String(dynamodbPort),
      '--demo-port',
      String(demoPort),
      '--demo-modern-port',
      String(modernPort),
    ],
    { GATEWAY_LOG_LEVEL: 'SILENT' },
  );
  try {
    const url = await cli.ready();
    const { stdout } = cli.output();
    expect(url).toBeDefined();
    expect(stdout).toMatch(
      /^deployment bundle: (dist\/lambda\/index\.mjs is up to date|building dist\/lambda\/index\.mjs)/m,
    );
    expect(stdout).toContain(
      `  targets: demo → http://127.0.0.1:${demoPort}/mcp, demo-modern → http://127.0.0.1:${modernPort}/mcp`,
    );
    expect(stdout).toContain('  demo (2025-11-25) and demo-modern (2026-07-28) run in this process');
    expect(stdout).toContain(`  DynamoDB: embedded (http://127.0.0.1:${dynamodbPort}), table mcp-gateway`);
    expect(stdout).toContain(`  try it: npm run demo:client -- --url ${url}`);

    const { headers } = await initSession(url!, {});
    const res = await post(url!, headers, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'demo-modern___echo', arguments: { text: 'lambda' } },
    });
    expect((await readMessage(res)).result.content[0].text).toBe('echo: lambda');
  } finally {
    cli.child.kill('SIGTERM');
    await cli.exited;
  }
});

it('uses demo targets given by URL instead of starting them', async () => {
  const cli = runCli([
    '--lambda',
    '--port',
    '0',
    '--demo-url',
    'http://127.0.0.1:1/mcp',
    '--demo-modern-url',
    'http://127.0.0.1:2/mcp',
  ]);
  try {
    await cli.ready();
    const { stdout } = cli.output();
    expect(stdout).toContain('  targets: demo → http://127.0.0.1:1/mcp, demo-modern → http://127.0.0.1:2/mcp');
    expect(stdout).not.toContain('run in this process');
  } finally {
    cli.child.kill('SIGTERM');
    await cli.exited;
  }
});

it('refuses a flag that has no meaning with --lambda in one line (exit 2)', async () => {
  const cli = runCli(['--lambda', '--check-config', 'gateway.json']);
  expect(await cli.exited).toBe(2);
  expect(cli.output().stderr).toBe(
    '--check-config and --lambda cannot be combined: --check-config only checks a file and starts nothing; npm start -- --help lists the flags\n',
  );
});
