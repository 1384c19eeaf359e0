import { createServer } from 'node:http';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitationCompleteNotificationSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Browser } from 'playwright-core';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { type GatewayUnderTest, startGateway } from '../support/gateways';
import { forwardTo, freePort } from '../support/loopback';
import { initSession, type Json } from '../support/mcp-http';
import { type AuthorizationServer, startAuthorizationServer } from '../support/oauth/authorization-server';
import { consentAs, startBrowser } from '../support/oauth/browser';
import { type ProtectedModernTarget, startProtectedModernTarget } from '../support/oauth/protected-modern-target';
import { type ProtectedTarget, startProtectedTarget } from '../support/oauth/protected-target';
import { chromium, describeNeeding } from '../support/prerequisites';

/**
 * Per-user OAuth to a target, end to end with real parts: an official-SDK MCP server protected by a
 * real authorization server (oidc-provider), three gateway instances on one DynamoDB behind one public
 * URL, the official v1 client, and a person in headless Chromium. The call's consent link is opened on
 * one instance, the authorization server's callback lands on another, and the retried call on a third
 * is made with the person's own token.
 */

jest.setTimeout(90_000);

const withBrowser = describeNeeding(chromium);

withBrowser('per-user OAuth through the gateway', () => {
  let dynamo: CountedDynamo;
  let as: AuthorizationServer;
  let target: ProtectedTarget;
  let modernTarget: ProtectedModernTarget;
  let browser: Browser;
  const instances: GatewayUnderTest[] = [];
  let front: { base: string; log: Array<{ path: string; to: string }>; close(): Promise<void> };
  /** Where the MCP endpoint goes now. */
  let mcpTo = 0;

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    const frontPort = await freePort();
    const publicUrl = `http://127.0.0.1:${frontPort}`;
    as = await startAuthorizationServer({
      redirectUris: [`${publicUrl}/connect/callback/mine`, `${publicUrl}/connect/callback/modern`],
    });
    target = await startProtectedTarget(as.issuer);
    modernTarget = await startProtectedModernTarget(as.issuer);
    process.env.PER_USER_TEST_CLIENT_SECRET = as.clientSecret;
    const config = {
      targets: [
        {
          name: 'mine',
          url: target.url,
          userOAuth: {
            clientId: as.clientId,
            clientSecret: { fromEnv: 'PER_USER_TEST_CLIENT_SECRET' },
            authorizationServer: as.issuer,
          },
        },
        {
          name: 'modern',
          url: modernTarget.url,
          userOAuth: {
            clientId: as.clientId,
            clientSecret: { fromEnv: 'PER_USER_TEST_CLIENT_SECRET' },
            authorizationServer: as.issuer,
          },
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
    await modernTarget?.close();
    await as?.close();
    await dynamo?.close();
    delete process.env.PER_USER_TEST_CLIENT_SECRET;
  });

  /** The official v1 client, declaring URL elicitation; `onUrl` is the person's part. */
  async function connectClient(onUrl: (url: string, elicitationId: string) => Promise<void>) {
    const client = new Client(
      { name: 'url-elicitation-client', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } } },
    );
    const completed: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      if (request.params.mode !== 'url') return { action: 'decline' };
      await onUrl(request.params.url, request.params.elicitationId);
      return { action: 'accept' };
    });
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) => {
      completed.push(notification.params.elicitationId);
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${front.base}/mcp`)));
    return { client, completed };
  }

  async function disconnect(target: string): Promise<number> {
    return (await fetch(`${front.base}/connections/${target}`, { method: 'DELETE' })).status;
  }

  const connectHops = () =>
    front.log
      .filter((l) => l.path.startsWith('/connect'))
      .map((l) => [l.path, instances.findIndex((i) => i.url === l.to)] as const);

  it('a 2025 call asks for the connection on its stream (URL mode), waits for it, and goes on as the user', async () => {
    mcpTo = 0;
    front.log.length = 0;
    const asked: Array<{ url: string; elicitationId: string }> = [];
    let consent: Promise<string> | undefined;
    // As many clients do: accept at once (the browser opens), while the person signs in.
    const { client, completed } = await connectClient(async (url, elicitationId) => {
      asked.push({ url, elicitationId });
      consent = consentAs(browser, url, 'alice', `${front.base}/connect/callback`);
    });
    const result = await client.callTool({ name: 'mine___whoami', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'alice' }]);
    await consent;
    expect(asked).toHaveLength(1);
    expect(asked[0]!.url.startsWith(`${front.base}/connect?link=`)).toBe(true);
    // The user's token reached the target only after the consent, and only alice's.
    expect(target.stats().subjects).toEqual(expect.arrayContaining(['alice']));
    expect(new Set(target.stats().subjects)).toEqual(new Set(['alice']));
    expect(completed).toEqual([asked[0]!.elicitationId]);
    // The page on one instance, the callback on another, the call held on a third.
    expect(connectHops()).toEqual([
      ['/connect', 1],
      ['/connect', 1],
      ['/connect/callback/mine', 2],
    ]);
    // Connected: the next call asks nothing.
    expect((await client.callTool({ name: 'mine___whoami', arguments: {} })).content).toEqual([
      { type: 'text', text: 'alice' },
    ]);
    expect(asked).toHaveLength(1);
    await client.close();
    expect(await disconnect('mine')).toBe(204);
  });

  it('a request that takes no stream gets -32042 (exception form), and the call retried on another instance succeeds', async () => {
    mcpTo = 0;
    front.log.length = 0;
    const { headers } = await initSession(`${front.base}/mcp`, { capabilities: { elicitation: { url: {} } } });
    const call = (id: number) =>
      fetch(`${front.base}/mcp`, {
        method: 'POST',
        headers: { ...headers, accept: 'application/json', 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'mine___whoami', arguments: {} },
        }),
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as Json }));
    const first = await call(1);
    expect(first.status).toBe(200);
    expect(first.body.error.code).toBe(-32042);
    const [elicitation] = first.body.error.data.elicitations;
    expect(elicitation).toMatchObject({ mode: 'url', elicitationId: expect.any(String), message: expect.any(String) });
    await consentAs(browser, elicitation.url, 'alice', `${front.base}/connect/callback`);
    mcpTo = 2;
    const retried = await call(2);
    expect(retried.body.result.content).toEqual([{ type: 'text', text: 'alice' }]);
    expect(connectHops()).toEqual([
      ['/connect', 1],
      ['/connect', 1],
      ['/connect/callback/mine', 2],
    ]);
    expect(await disconnect('mine')).toBe(204);
  });

  it.each([
    ['v2 default', undefined],
    ['v2 pinned to 2026-07-28', { pin: '2026-07-28' as const }],
  ] as const)(
    'the official v2 client (%s): the URL round is answered after the sign-in, its retry answers as the user',
    async (_name, pin) => {
      mcpTo = 0;
      const asked: string[] = [];
      const client = new V2Client(
        { name: 'v2-url-client', version: '1.0.0' },
        { capabilities: { elicitation: { url: {} } }, ...(pin ? { versionNegotiation: { mode: pin } } : {}) },
      );
      client.setRequestHandler('elicitation/create', async (request) => {
        const params = request.params as { mode?: string; url?: string };
        if (params.mode !== 'url' || !params.url) return { action: 'decline' as const };
        asked.push(params.url);
        await consentAs(browser, params.url, 'alice', `${front.base}/connect/callback`);
        return { action: 'accept' as const };
      });
      await client.connect(new V2Transport(new URL(`${front.base}/mcp`)));
      const result = await client.callTool({ name: 'mine___whoami', arguments: {} });
      expect(result.content).toEqual([{ type: 'text', text: 'alice' }]);
      expect(asked).toHaveLength(1);
      expect(asked[0]!.startsWith(`${front.base}/connect?link=`)).toBe(true);
      await client.close();
      expect(await disconnect('mine')).toBe(204);
    },
  );

  it('lists a connect tool in place of the tools of a target not connected to, and its own tools once connected', async () => {
    mcpTo = 0;
    const { client } = await connectClient(async (url) => {
      await consentAs(browser, url, 'alice', `${front.base}/connect/callback`);
    });
    const before = (await client.listTools()).tools.map((t) => t.name);
    expect(before).toEqual(['mine___connect_account', 'modern___connect_account']);
    const connected = await client.callTool({ name: 'mine___connect_account', arguments: {} });
    expect((connected.content as Array<{ text: string }>)[0]!.text).toMatch(/connected/);
    const after = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(after).toEqual(['mine___access_github_repo', 'mine___whoami', 'modern___connect_account']);
    await client.close();
    expect(await disconnect('mine')).toBe(204);
  });

  it.each([
    ['the v1 client (2025-11-25, bridged to the target)', 'v1'],
    ['the v2 client pinned to 2026-07-28', 'v2'],
  ] as const)(
    'a 2026-07-28 target protected by the v2 SDK, called by %s, is called as the user',
    async (_name, kind) => {
      mcpTo = 0;
      const signIn = (url: string) => consentAs(browser, url, 'alice', `${front.base}/connect/callback`);
      let text: unknown;
      if (kind === 'v1') {
        const { client, completed } = await connectClient(async (url) => {
          await signIn(url);
        });
        text = (await client.callTool({ name: 'modern___whoami', arguments: {} })).content;
        expect(completed).toHaveLength(1);
        await client.close();
      } else {
        const client = new V2Client(
          { name: 'v2-url-client', version: '1.0.0' },
          { capabilities: { elicitation: { url: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
        );
        client.setRequestHandler('elicitation/create', async (request) => {
          const params = request.params as { mode?: string; url?: string };
          if (params.mode !== 'url' || !params.url) return { action: 'decline' as const };
          await signIn(params.url);
          return { action: 'accept' as const };
        });
        await client.connect(new V2Transport(new URL(`${front.base}/mcp`)));
        text = (await client.callTool({ name: 'modern___whoami', arguments: {} })).content;
        await client.close();
      }
      expect(text).toEqual([{ type: 'text', text: 'alice' }]);
      expect(new Set(modernTarget.stats().subjects)).toEqual(new Set(['alice']));
      expect(await disconnect('modern')).toBe(204);
    },
  );

  it('a 2025 client without URL elicitation is told what it lacks, and no link is made', async () => {
    mcpTo = 0;
    const { headers } = await initSession(`${front.base}/mcp`, { capabilities: { elicitation: { form: {} } } });
    const res = await fetch(`${front.base}/mcp`, {
      method: 'POST',
      headers: { ...headers, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'mine___whoami', arguments: {} },
      }),
    });
    const text = await res.text();
    const body = JSON.parse(text.includes('data:') ? text.split('data: ').pop()!.trim() : text) as Json;
    expect(body.error.code).toBe(-32600);
    expect(body.error.message).toMatch(/elicitation\.url/);
    expect(body.error.data.requiredCapabilities).toEqual({ elicitation: { url: {} } });
  });
});
