import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Browser } from 'playwright-core';
import {
  type DynamoProcess,
  type GatewayProcess,
  startDynamoProcess,
  startGatewayProcess,
} from '../support/gateway-process';
import { freePort } from '../support/loopback';
import { type AuthorizationServer, startAuthorizationServer } from '../support/oauth/authorization-server';
import { consentAs, startBrowser } from '../support/oauth/browser';
import { type ProtectedTarget, startProtectedTarget } from '../support/oauth/protected-target';
import { chromium, describeNeeding } from '../support/prerequisites';

/**
 * What the gateway writes while a user connects and is called as, at its most talkative (DEBUG): never
 * a token, an authorization code or a client secret. The gateway is its own process (`npm start`), so
 * everything it prints is read; the authorization server issues JWT access tokens (they start `eyJ`),
 * the code is in the callback URL the browser landed on, and the client secret is the configured one.
 */

jest.setTimeout(90_000);

const withBrowser = describeNeeding(chromium);

withBrowser('secrets in the logs of a connection', () => {
  let dynamo: DynamoProcess;
  let as: AuthorizationServer;
  let target: ProtectedTarget;
  let gateway: GatewayProcess;
  let browser: Browser;

  beforeAll(async () => {
    dynamo = await startDynamoProcess();
    const port = await freePort();
    as = await startAuthorizationServer({
      clientId: 'gateway-logs',
      redirectUris: [`http://127.0.0.1:${port}/connect/callback/mine`],
      accessTokenTtlSeconds: 2,
    });
    target = await startProtectedTarget(as.issuer);
    gateway = await startGatewayProcess(
      {
        targets: [
          {
            name: 'mine',
            url: target.url,
            userOAuth: {
              clientId: 'gateway-logs',
              clientSecret: { fromEnv: 'LOGS_TEST_CLIENT_SECRET' },
              authorizationServer: as.issuer,
            },
          },
        ],
        logLevel: 'DEBUG',
      },
      dynamo.endpoint,
      { env: { GATEWAY_LOG_LEVEL: 'DEBUG', LOGS_TEST_CLIENT_SECRET: as.clientSecret }, port },
    );
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await gateway?.stop();
    await target?.close();
    await as?.close();
    await dynamo?.close();
  });

  it('connects, calls, refreshes and disconnects without a token, code or secret in its output', async () => {
    const origin = new URL(gateway.url).origin;
    const landed: string[] = [];
    const client = new Client({ name: 'logs', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      if (request.params.mode !== 'url') return { action: 'decline' };
      landed.push(await consentAs(browser, request.params.url, 'erin', `${origin}/connect/callback`));
      return { action: 'accept' };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    expect((await client.callTool({ name: 'mine___whoami', arguments: {} })).content).toEqual([
      { type: 'text', text: 'erin' },
    ]);
    // A duration: the token's expiry on the real clock (a running gateway and authorization server) is the scenario.
    // When the gateway refreshes is its own process's decision (a quarter of the lifetime early), which
    // nothing outside it shows before a call, and that call is the refresh under test.
    await new Promise((resolve) => setTimeout(resolve, 2500)); // past the 2 s access token: refreshed next
    expect((await client.callTool({ name: 'mine___whoami', arguments: {} })).content).toEqual([
      { type: 'text', text: 'erin' },
    ]);
    await client.close();
    expect((await fetch(`${origin}/connections/mine`, { method: 'DELETE' })).status).toBe(204);

    const output = gateway.output();
    expect(output).toMatch(/"message":"connection stored"/); // the log is there, and verbose
    const code = new URL(landed[0]!).searchParams.get('code');
    expect(code).toBeTruthy();
    expect(output).not.toContain(code);
    expect(output).not.toMatch(/eyJ[\w-]+\.[\w-]+/); // no JWT (the access tokens)
    expect(output).not.toMatch(/bearer /i);
    expect(output).not.toContain(as.clientSecret);
  });
});
