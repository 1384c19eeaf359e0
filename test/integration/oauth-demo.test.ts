import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Browser } from 'playwright-core';
import { CLIENT_SECRET_ENV, DEMO_TARGET, demoLines, type OAuthDemo, startOAuthDemo } from '../../dev/oauth-demo/demo';
import { runConnections } from '../../scripts/connections';
import { outputMatching } from '../support/child-output';
import { eventually, initSession, type Json } from '../support/mcp-http';
import { consentAs, startBrowser } from '../support/oauth/browser';
import { chromium, describeNeeding } from '../support/prerequisites';

/**
 * `npm run oauth:demo` (dev/oauth-demo/): what a newcomer does with it, with the demo's own start
 * function and real parts only: the official v1 client, a person in headless Chromium at the
 * authorization server's sign-in page, the operator's `npm run connections`. And Ctrl-C stops every
 * process it started.
 */

jest.setTimeout(90_000);

// In CI the browser is installed (.ci/run): a missing one fails there rather than skipping.
const withBrowser = describeNeeding(chromium);

/** Whether a process of this id is still there. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

withBrowser('npm run oauth:demo, as a newcomer uses it', () => {
  let demo: OAuthDemo;
  let browser: Browser;

  beforeAll(async () => {
    demo = await startOAuthDemo({ port: 0, logLevel: 'SILENT' });
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await demo?.close();
  });

  const callback = () => `${demo.gatewayUrl}/connect/callback`;
  const connections = async () => ((await (await fetch(`${demo.gatewayUrl}/connections`)).json()) as Json).connections;

  it('prints where to connect, the tool to call, and that any user name signs in', () => {
    const printed = demoLines(demo).join('\n');
    expect(printed).toContain(demo.mcpUrl);
    expect(printed).toContain('protected___whoami');
    expect(printed).toContain('any user name');
    expect(printed).toContain(`--endpoint ${demo.dynamodbEndpoint}`);
    expect(demo.mcpUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(new URL(demo.authorizationServer.issuer).hostname).toBe('127.0.0.1');
    expect(new URL(demo.target.url).hostname).toBe('127.0.0.1');
  });

  it('a request without a stream gets -32042 with the link; after consent the call again answers the user name', async () => {
    const session = await initSession(demo.mcpUrl, { capabilities: { elicitation: { url: {} } } });
    // Accepting JSON only: the answer cannot be a stream, so the link comes back as the error.
    const headers = { ...session.headers, 'content-type': 'application/json', accept: 'application/json' };
    const call = async (id: number) =>
      (await (
        await fetch(demo.mcpUrl, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            jsonrpc: '2.0',
            id,
            method: 'tools/call',
            params: { name: demo.target.tool, arguments: {} },
          }),
        })
      ).json()) as Json;
    const first = await call(1);
    expect(first.error.code).toBe(-32042);
    const [elicitation] = first.error.data.elicitations;
    expect(elicitation.mode).toBe('url');
    expect(elicitation.url.startsWith(`${demo.gatewayUrl}/connect?link=`)).toBe(true);

    await consentAs(browser, elicitation.url, 'newcomer', callback());
    expect((await call(2)).result.content).toEqual([{ type: 'text', text: 'newcomer' }]);
    expect(await connections()).toEqual([{ target: 'protected' }]);
    // The user disconnects (with the same inbound credentials: none here).
    expect((await fetch(`${demo.gatewayUrl}/connections/protected`, { method: 'DELETE' })).status).toBe(204);
    expect(await connections()).toEqual([]);
  });

  it('the official v1 client is shown the link on the call, the call answers as the user; the operator removes it', async () => {
    const asked: string[] = [];
    let consent: Promise<string> | undefined;
    const client = new Client(
      { name: 'newcomer-client', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } } },
    );
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      if (request.params.mode !== 'url') return { action: 'decline' };
      asked.push(request.params.url);
      // The first time the person opens the link and signs in; after that they decline.
      if (asked.length > 1) return { action: 'decline' };
      consent = consentAs(browser, request.params.url, 'second-user', callback());
      return { action: 'accept' };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(demo.mcpUrl)));
    try {
      const result = await client.callTool({ name: demo.target.tool, arguments: {} }, undefined, { timeout: 60_000 });
      await consent;
      expect(result.content).toEqual([{ type: 'text', text: 'second-user' }]);
      expect(asked).toHaveLength(1);
      expect(asked[0]!.startsWith(`${demo.gatewayUrl}/connect?link=`)).toBe(true);

      // The operator's view and removal, with the command the demo prints (against its DynamoDB).
      const out: string[] = [];
      const where = ['--principal', demo.principal, '--endpoint', demo.dynamodbEndpoint, '--table', demo.tableName];
      expect(await runConnections(['list', ...where, '--json'], (line) => out.push(line))).toBe(0);
      expect(JSON.parse(out.pop()!).connections.map((c: Json) => c.target)).toEqual(['protected']);
      expect(await runConnections(['remove', ...where, '--json'], (line) => out.push(line))).toBe(0);
      expect(JSON.parse(out.pop()!).removed).toEqual(['protected']);

      // Removed at once, on every instance: the next call asks again (declined here).
      const again = await client
        .callTool({ name: demo.target.tool, arguments: {} }, undefined, { timeout: 60_000 })
        .catch((error: unknown) => error);
      expect(again).toBeInstanceOf(McpError);
      expect(asked).toHaveLength(2);
    } finally {
      await client.close();
    }
  });

  it('close stops the authorization server’s process and every server', async () => {
    const { pid } = demo.authorizationServer;
    expect(alive(pid)).toBe(true);
    await demo.close();
    expect(alive(pid)).toBe(false);
    for (const url of [demo.mcpUrl, demo.target.url, demo.authorizationServer.issuer]) {
      await expect(fetch(url)).rejects.toThrow();
    }
  });
});

it('the recipe of docs/per-user-oauth.md names what the demo runs', () => {
  const section = readFileSync(join(__dirname, '../../docs/per-user-oauth.md'), 'utf8');
  expect(readFileSync(join(__dirname, '../../README.md'), 'utf8')).toContain('npm run oauth:demo');
  expect(section).toContain('npm run oauth:demo');
  expect(section).toContain(`${DEMO_TARGET}___whoami`);
  expect(section).toContain(`"fromEnv": "${CLIENT_SECRET_ENV}"`);
  expect(section).toContain('npm run connections -- remove');
});

describe('npm run oauth:demo, stopped with Ctrl-C', () => {
  it('exits 0 and leaves no process of its group behind', async () => {
    // A process group of its own, as a terminal's foreground job: Ctrl-C signals every process in it.
    const child = spawn(process.execPath, ['--import', 'tsx', 'dev/oauth-demo/cli.ts', '--port', '0'], {
      cwd: join(__dirname, '../..'),
      env: { ...process.env, GATEWAY_LOG_LEVEL: 'SILENT' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const group = child.pid!;
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await outputMatching(child, () => stdout, /Ctrl-C stops it all/, 60_000).catch(() => undefined);
      expect({ stdout, stderr }).toEqual({ stdout: expect.stringContaining('Ctrl-C stops it all'), stderr: '' });
      const mcpUrl = /per-user OAuth demo ready: (\S+)/.exec(stdout)![1]!;
      const issuer = /authorization server: (\S+)/.exec(stdout)![1]!;
      expect((await fetch(`${issuer}/.well-known/openid-configuration`)).status).toBe(200);

      process.kill(-group, 'SIGINT');
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        exited,
        new Promise<string>((resolve) => {
          timer = setTimeout(() => resolve('still running after 30 s'), 30_000);
        }),
      ]);
      clearTimeout(timer);
      expect(code).toBe(0);
      // No process of the group is left (the authorization server's included).
      await eventually(() => expect(alive(-group)).toBe(false));
      for (const url of [mcpUrl, issuer]) await expect(fetch(url)).rejects.toThrow();
    } finally {
      if (alive(-group)) process.kill(-group, 'SIGKILL');
    }
  });
});
