import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import type { Browser } from 'playwright-core';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { type GatewayUnderTest, startGateway } from '../support/gateways';
import { forwardTo, freePort } from '../support/loopback';
import { type AuthorizationServer, startAuthorizationServer } from '../support/oauth/authorization-server';
import { consentAs, startBrowser } from '../support/oauth/browser';
import { type ProtectedTarget, startProtectedTarget } from '../support/oauth/protected-target';

/**
 * Per-user OAuth to a target, end to end with real parts: an official-SDK MCP server protected by a
 * real authorization server (oidc-provider), three gateway instances on one DynamoDB behind one public
 * URL, the official v1 client, and a person in headless Chromium. The call's consent link is opened on
 * one instance, the authorization server's callback lands on another, and the retried call on a third
 * is made with the person's own token.
 */

jest.setTimeout(90_000);

const withBrowser =
  existsSync(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium') || process.env.CI ? describe : describe.skip;

withBrowser('per-user OAuth through the gateway', () => {
  let dynamo: CountedDynamo;
  let as: AuthorizationServer;
  let target: ProtectedTarget;
  let browser: Browser;
  const instances: GatewayUnderTest[] = [];
  let front: { base: string; log: Array<{ path: string; to: string }>; close(): Promise<void> };
  /** Where the MCP endpoint goes now. */
  let mcpTo = 0;

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    const frontPort = await freePort();
    const publicUrl = `http://127.0.0.1:${frontPort}`;
    as = await startAuthorizationServer({ redirectUris: [`${publicUrl}/connect/callback`] });
    target = await startProtectedTarget(as.issuer);
    process.env.PER_USER_TEST_CLIENT_SECRET = as.clientSecret;
    const config = {
      targets: [
        {
          name: 'mine',
          url: target.url,
          userOAuth: { clientId: as.clientId, clientSecret: { fromEnv: 'PER_USER_TEST_CLIENT_SECRET' } },
        },
      ],
      connections: { publicUrl },
      logLevel: 'SILENT' as const,
      requestStateKeys: { current: 'a-shared-key-for-all-three-instances-0123' },
    };
    for (let i = 0; i < 3; i++) instances.push(await startGateway('local server', config, dynamo.endpoint));
    browser = await startBrowser();
    // The front listens on the port the configuration names.
    const server = createServer((req, res) => {
      const path = req.url ?? '/';
      const instance = path.startsWith('/connect/callback')
        ? instances[2]!
        : path.startsWith('/connect')
          ? instances[1]!
          : instances[mcpTo]!;
      front.log.push({ path: path.split('?')[0]!, to: instance.url });
      // One site to the browser: its own pages' form posts carry the public origin, which the
      // instance (behind this front, under its own host) sees as its own.
      if (req.headers.origin === publicUrl) req.headers.origin = new URL(instance.url).origin;
      req.pipe(forwardTo(new URL(path, instance.url), req, res));
    });
    await new Promise<void>((resolve) => server.listen(frontPort, '127.0.0.1', () => resolve()));
    front = {
      base: publicUrl,
      log: [],
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    };
  });
  afterAll(async () => {
    await browser?.close();
    await front?.close();
    for (const instance of instances) await instance.close();
    await target?.close();
    await as?.close();
    await dynamo?.close();
    delete process.env.PER_USER_TEST_CLIENT_SECRET;
  });

  async function connectClient(): Promise<Client> {
    const client = new Client(
      { name: 'url-elicitation-client', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } } },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(`${front.base}/mcp`)));
    return client;
  }

  it('asks for the connection by URL elicitation, stores the tokens after consent, and calls as the user', async () => {
    mcpTo = 0;
    const client = await connectClient();
    const error = await client.callTool({ name: 'mine___whoami', arguments: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32042);
    const [elicitation] = (error as UrlElicitationRequiredError).elicitations as Array<{
      mode: string;
      url: string;
      elicitationId: string;
    }>;
    expect(elicitation).toMatchObject({ mode: 'url' });
    expect(elicitation!.url.startsWith(`${front.base}/connect?link=`)).toBe(true);
    expect(target.stats().subjects).toEqual([]);

    const landed = await consentAs(browser, elicitation!.url, 'alice', `${front.base}/connect/callback`);
    expect(landed).toContain('/connect/callback');

    mcpTo = 2;
    const retried = await client.callTool({ name: 'mine___whoami', arguments: {} });
    expect(retried.content).toEqual([{ type: 'text', text: 'alice' }]);
    expect(
      front.log
        .filter((l) => l.path.startsWith('/connect'))
        .map((l) => [l.path, instances.findIndex((i) => i.url === l.to)]),
    ).toEqual([
      ['/connect', 1],
      ['/connect', 1],
      ['/connect/callback', 2],
    ]);
    await client.close();
  });
});
