import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitationCompleteNotificationSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Browser } from 'playwright-core';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { type GatewayUnderTest, startGateway } from '../support/gateways';
import { type InstanceRouter, startInstanceRouter } from '../support/instance-router';
import { eventually } from '../support/mcp-http';
import { type AuthorizationServer, startAuthorizationServer } from '../support/oauth/authorization-server';
import { consentAs, startBrowser } from '../support/oauth/browser';
import { type ProtectedTarget, startProtectedTarget } from '../support/oauth/protected-target';
import { chromium, describeNeeding } from '../support/prerequisites';

/**
 * A 2025 call waiting for its user to connect is a waiting call like any other: released while the
 * person signs in (a client that resumes, `streamRelease: "always"`), taken over by the client's
 * reconnect on another instance, which finds the answer and then the stored connection, tells the
 * client the elicitation is complete and calls the target as the user. The official v1 client
 * reconnects by itself (GET + Last-Event-ID).
 */

jest.setTimeout(90_000);

const withBrowser = describeNeeding(chromium);

withBrowser('a call released while its user connects', () => {
  let dynamo: CountedDynamo;
  let as: AuthorizationServer;
  let target: ProtectedTarget;
  let browser: Browser;
  let a: GatewayUnderTest;
  let b: GatewayUnderTest;
  let router: InstanceRouter;

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    as = await startAuthorizationServer({ redirectUris: [] });
    target = await startProtectedTarget(as.issuer);
    const config = {
      targets: [{ name: 'mine', url: target.url, userOAuth: {} }],
      outbound: { allowedOrigins: [as.issuer] },
      logLevel: 'SILENT' as const,
      streamRelease: 'always' as const,
      streamReleaseAfterSeconds: 0.5,
      streamReleaseRetryMs: 300,
      requestStateKeys: { current: 'a-shared-key-for-both-instances-0123456789' },
    };
    a = await startGateway('local server', config, dynamo.endpoint);
    b = await startGateway('local server', config, dynamo.endpoint);
    router = await startInstanceRouter(a.url, b.url);
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await router?.close();
    await a?.close();
    await b?.close();
    await target?.close();
    await as?.close();
    await dynamo?.close();
  });

  it('is taken over by the reconnect, and answers as the user once the sign-in is done', async () => {
    const completed: string[] = [];
    let signIn: Promise<string> | undefined;
    const client = new Client({ name: 'resumes', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      if (request.params.mode !== 'url') return { action: 'decline' };
      const { url } = request.params;
      // The person signs in once the call was released meanwhile: its stream ended and the client
      // resumed it (a GET with Last-Event-ID, which the router sends to the second instance).
      const askedAt = router.log.length;
      const resumed = () =>
        router.log.slice(askedAt).some((entry) => entry.method === 'GET' && entry.lastEventId !== undefined);
      signIn = eventually(() => expect(resumed()).toBe(true), 30_000).then(() =>
        consentAs(
          browser,
          url.replace(new URL(url).origin, new URL(b.url).origin),
          'alice',
          `${new URL(b.url).origin}/connect/callback`,
        ),
      );
      return { action: 'accept' };
    });
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
      completed.push(n.params.elicitationId);
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(router.url)));
    const result = await client.callTool({ name: 'mine___whoami', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'alice' }]);
    await signIn;
    expect(completed).toHaveLength(1);
    // The answer and the reconnect reached the second instance: the call went on there.
    expect(router.log.filter((entry) => entry.method === 'GET' && entry.lastEventId).length).toBeGreaterThan(0);
    expect(new Set(target.stats().subjects)).toEqual(new Set(['alice']));
    await client.close();
  });
});
