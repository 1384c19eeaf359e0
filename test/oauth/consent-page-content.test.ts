import { createServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type CallToolResult,
  ElicitRequestSchema,
  type ElicitRequestURLParams,
} from '@modelcontextprotocol/sdk/types.js';
import { type LocalGateway, startLocalGateway } from '../../dev/local-gateway';
import { ConsentBook } from '../../examples/targets/consent-book';
import { serveConsentPage } from '../../examples/targets/consent-page';
import { QUIET } from '../support/in-process';
import { listen } from '../support/loopback';
import { eventually } from '../support/mcp-http';

/**
 * What the consent page of a URL elicitation tells the person who opens it: who asks (the target, and
 * the gateway it serves), what, until when, and what each button leads to; it is laid out for a phone,
 * and an expired request can no longer be decided.
 */

describe('a consent page reached through the gateway', () => {
  let gateway: LocalGateway;
  let client: Client;
  const asked: ElicitRequestURLParams[] = [];

  beforeAll(async () => {
    gateway = await startLocalGateway({
      port: 0,
      logger: QUIET,
      startupReport: false,
      demoTargets: { demo: { port: 0 }, demoModern: { port: 0 } },
    });
    client = new Client({ name: 'consent-reader', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      if (request.params.mode === 'url') asked.push(request.params);
      return { action: 'accept' };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  });

  afterAll(async () => {
    await client?.close();
    await gateway?.close();
  });

  // The page names the server as it names itself (serverInfo), and the client it serves: the gateway.
  it.each([
    ['demo', 'demo-target'],
    ['demo-modern', 'modern-demo-target'],
  ])(
    '%s: names the target and the gateway, the question, the deadline and what happens next',
    async (target, serverName) => {
      const before = Date.now();
      const call = client.callTool({ name: `${target}___access_github_repo`, arguments: { repo: 'octo/hello' } });
      await eventually(() => expect(asked.length).toBeGreaterThan(0));
      const url = asked.shift()!.url;
      const html = await (await fetch(url)).text();

      expect(html).toContain(
        `The MCP server <strong>${serverName}</strong> asks through <strong>mcp-gateway 0.1.0</strong>, for a tool call you started in your MCP client:`,
      );
      expect(html).toContain('<p class="ask">Authorize access to octo/hello</p>');
      const deadline =
        /Decide by <time datetime="([^"]+)">(\d{4}-\d\d-\d\d \d\d:\d\d) UTC<\/time> \(in about 5 minutes\)/.exec(html);
      expect(deadline).not.toBeNull();
      // The default wait for the page is 5 minutes from when the target asked.
      const expiresAt = Date.parse(deadline![1]!);
      expect(expiresAt).toBeGreaterThanOrEqual(before + 5 * 60_000);
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + 5 * 60_000);
      expect(html).toContain('<h2>What happens next</h2>');
      expect(html).toContain(`<li><strong>Allow</strong>: <strong>${serverName}</strong> goes on with the tool call`);
      expect(html).toContain('<li><strong>Deny</strong>, or no decision by then: the tool call ends without access');
      expect(html).toContain('a form sent from another site is refused');
      // Laid out for a phone: the viewport follows the device, buttons wrap to full width.
      expect(html).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
      expect(html).toMatch(/button\{flex:1 1 10rem;min-height:3rem/);

      const allowed = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(url).origin },
        body: 'decision=allow',
      });
      expect(allowed.status).toBe(200);
      const result = (await call) as CallToolResult;
      expect(result.content).toEqual([{ type: 'text', text: 'accessed octo/hello' }]);
    },
    30_000,
  );
});

describe('an expired consent request (injected clock)', () => {
  let now = Date.parse('2026-12-03T10:00:00Z');
  const book = new ConsentBook('http://127.0.0.1', () => now);
  let server: { base: string; close(): Promise<void> };

  beforeAll(async () => {
    server = await listen(
      createServer((req, res) => void serveConsentPage(req, res, book, new Set([req.headers.host ?? '']), 'docs')),
    );
  });
  afterAll(() => server.close());

  it('shows its deadline while open, then refuses to be decided (410), and a wait ends at the deadline', async () => {
    const request = book.open('Authorize access to octo/hello', { expiresInMs: 120_000, via: 'mcp-gateway 0.1.0' });
    const url = `${server.base}/consent/${request.id}`;
    expect(await (await fetch(url)).text()).toContain(
      'Decide by <time datetime="2026-12-03T10:02:00.000Z">2026-12-03 10:02 UTC</time> (in about 2 minutes).',
    );
    now += 120_000;
    const page = await fetch(url);
    expect(page.status).toBe(410);
    expect(await page.text()).toContain('This request has expired and can no longer be decided');
    const post = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: server.base },
      body: 'decision=allow',
    });
    expect(post.status).toBe(410);
    expect(book.get(request.id)?.decision).toBeUndefined();
    await expect(book.wait(request.id, { timeoutMs: 60_000 })).resolves.toBe('timeout');
  });
});
