import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../support/cli';
import { eventually, initSession, type Json, post, readMessage } from '../support/mcp-http';

/**
 * The access log, /health and CORS through `npm start` as a person runs it (tool
 * filtering needs the targets' URLs in the file: test/operations/operations.test.ts).
 */

const ORIGIN = 'http://localhost:6274';

it('npm start: an access line on stdout per tools/call, /health, CORS for the Inspector origin', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-ops-'));
  const config = join(dir, 'gateway.json');
  writeFileSync(config, JSON.stringify({ cors: { allowedOrigins: [ORIGIN] } }));
  const cli = runCli(['--port', '0', '--demo-port', '0', '--demo-modern-port', '0', '--config', config], {});
  try {
    const url = await cli.ready();
    expect(url).toBeDefined();
    const mcp = url as string;
    const origin = new URL(mcp).origin;

    // 1. the access log: one JSON line on stdout with the method, the tool, the target, status and duration.
    const { headers } = await initSession(mcp);
    const res = await post(mcp, headers, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'demo___echo', arguments: { text: 'acceptance' } },
    });
    expect((await readMessage(res)).result.content[0].text).toBe('echo: acceptance');
    let calls: Json[] = [];
    await eventually(() => {
      calls = cli
        .output()
        .stdout.split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Json)
        .filter((line) => line.message === 'mcp request' && line.method === 'tools/call');
      expect(calls.length).toBeGreaterThan(0);
    });
    expect(calls).toEqual([
      expect.objectContaining({
        level: 'INFO',
        method: 'tools/call',
        tool: 'echo',
        target: 'demo',
        status: 200,
        durationMs: expect.any(Number),
      }),
    ]);
    expect(cli.output().stdout).not.toContain('acceptance"'); // the arguments are not logged

    // 3. health without a token.
    const health = await fetch(`${origin}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });

    // 4. CORS for the configured origin: the preflight, then a POST from that origin.
    const preflight = await fetch(mcp, {
      method: 'OPTIONS',
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const fromBrowser = await post(mcp, { ...headers, origin: ORIGIN }, { jsonrpc: '2.0', id: 2, method: 'ping' });
    expect(fromBrowser.status).toBe(200);
    expect(fromBrowser.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(fromBrowser.headers.get('access-control-expose-headers')).toBe('mcp-session-id');
  } finally {
    cli.child.kill('SIGTERM');
  }
  expect(await cli.exited).toBe(0);
}, 60_000);
