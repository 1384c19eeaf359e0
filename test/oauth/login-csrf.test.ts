import { createServer, type Server } from 'node:http';
import { discoverAuthorizationServerMetadata, registerClient } from '@modelcontextprotocol/sdk/client/auth.js';
import type { Browser } from 'playwright-core';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { type GatewayKind, type GatewayUnderTest, startGateway } from '../support/gateways';
import { freePort } from '../support/loopback';
import { type AuthorizationServer, startAuthorizationServer } from '../support/oauth/authorization-server';
import { browseAs, startBrowser } from '../support/oauth/browser';
import { caller, confirm, connectedTargets, consentLinkOf, sealedLinkOf } from '../support/oauth/consent-calls';
import { gatewayTokenFor, type McpClientApp, registerClientApp } from '../support/oauth/gateway-token';
import { type ProtectedTarget, startProtectedTarget } from '../support/oauth/protected-target';
import { chromium, describeNeeding } from '../support/prerequisites';

/**
 * Login CSRF on the consent (RFC 9700 §4.7): mallory starts a consent of her own, stops where the
 * gateway sends her browser to the target's authorization server, and sends alice that URL — a
 * genuine page of the real server. Alice signs in and consents. The callback must not store alice's
 * tokens under mallory's principal: the consent is bound to the browser that started it, and alice's
 * browser has no such binding. With inbound auth `none` (every caller is `anonymous`: the forward also
 * skips the warning page) and with inbound JWT auth and the identity sign-in (mallory passes it as
 * herself), in each form the gateway runs in. Real parts: oidc-provider (the targets' authorization
 * server and the JWT gateway's identity provider), official-SDK protected targets, Chromium.
 */

jest.setTimeout(90_000);

const withBrowser = describeNeeding(chromium);

/** A server on a given loopback port (the hostile page's origin is configured before it runs). */
async function listenOn(port: number, server: Server): Promise<{ base: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return {
    base: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Each form with a target name of its own: one table holds them all, and a principal's connections are by target. */
const FORMS: Array<{ form: GatewayKind; name: string }> = [
  { form: 'local server', name: 'local' },
  { form: 'lambda runtime', name: 'lambda' },
  { form: 'web function', name: 'web' },
];

withBrowser("a consent forwarded to another person's browser stores nothing", () => {
  let dynamo: CountedDynamo;
  let browser: Browser;
  let as: AuthorizationServer;
  let app: McpClientApp;

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    as = await startAuthorizationServer({ redirectUris: [] });
    app = await registerClientApp(as.issuer);
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await as?.close();
    await dynamo?.close();
  });

  /** Alice's browser, handed the authorization server's URL mallory stopped at: she signs in and consents there. */
  const aliceFollows = (url: string, base: string) => browseAs(browser, url, 'alice', `${base}/connect/callback`);

  describe.each(FORMS)('through the $form', ({ form, name }) => {
    const tool = `${name}___whoami`;
    let target: ProtectedTarget;
    let jwtTarget: ProtectedTarget;
    let open: GatewayUnderTest;
    let signedIn: GatewayUnderTest;
    let openBase: string;
    let jwtBase: string;
    /** Where the hostile page is served: an origin the operator let call the MCP endpoint (CORS), as the Inspector's is. */
    let pagePort: number;

    beforeAll(async () => {
      [target, jwtTarget] = await Promise.all([startProtectedTarget(as.issuer), startProtectedTarget(as.issuer)]);
      // The JWT gateway's address must be known to register its identity sign-in's callback first.
      const jwtPort = await freePort();
      jwtBase = `http://127.0.0.1:${jwtPort}`;
      const identity = await registerClient(as.issuer, {
        metadata: await discoverAuthorizationServerMetadata(as.issuer),
        clientMetadata: {
          client_name: 'gateway sign-in',
          redirect_uris: [`${jwtBase}/connect/identity`],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        },
      });
      const common = {
        // The gateway registers itself at the targets' authorization server (RFC 7591), on loopback here.
        outbound: { allowedOrigins: [as.issuer] },
        logLevel: 'SILENT' as const,
      };
      pagePort = await freePort();
      open = await startGateway(
        form,
        {
          ...common,
          cors: { allowedOrigins: [`http://127.0.0.1:${pagePort}`] },
          targets: [{ name, url: target.url, userOAuth: {} }],
          requestStateKeys: { current: `login-csrf-open-${form.replace(' ', '-')}-gateway-key-0123` },
        },
        dynamo.endpoint,
        { timeoutMs: 60_000 },
      );
      signedIn = await startGateway(
        form,
        {
          ...common,
          auth: {
            type: 'jwt',
            discoveryUrl: `${as.issuer}/.well-known/openid-configuration`,
            allowedAudiences: [`${jwtBase}/mcp`],
          },
          targets: [{ name, url: jwtTarget.url, userOAuth: {} }],
          connections: { identityLogin: { clientId: identity.client_id } },
          requestStateKeys: { current: `login-csrf-jwt-${form.replace(' ', '-')}-gateway-key-4567` },
        },
        dynamo.endpoint,
        { timeoutMs: 60_000, port: jwtPort },
      );
      openBase = new URL(open.url).origin;
    });
    afterAll(async () => {
      await open?.close();
      await signedIn?.close();
      await target?.close();
      await jwtTarget?.close();
    });

    it('inbound auth none: the departure forwarded to alice is refused at the callback, and nothing is stored', async () => {
      const call = await caller(open.url);
      // Mallory confirms her own link and keeps the redirect instead of following it.
      const departed = await confirm(openBase, sealedLinkOf(consentLinkOf(await call(tool))));
      expect(departed.status).toBe(303);
      const authorizeUrl = departed.headers.get('location')!;
      expect(authorizeUrl.startsWith(`${as.issuer}/`)).toBe(true);

      const landed = await aliceFollows(authorizeUrl, openBase);
      expect(landed.url.startsWith(`${openBase}/connect/callback/${name}`)).toBe(true);
      expect(landed.status).toBe(403);
      expect(landed.text).toContain('This sign-in did not start in this browser');
      expect(await connectedTargets(openBase)).not.toContain(name);
      consentLinkOf(await call(tool));
      expect(target.stats().subjects).toEqual([]);
    });

    it("a hostile web page posts the confirmation of mallory's link from alice's browser: refused, nothing departs, the link stays usable", async () => {
      const call = await caller(open.url);
      const link = sealedLinkOf(consentLinkOf(await call(tool)));
      // The page auto-submits the gateway's own confirmation form, with mallory's link, from another origin.
      const page = await listenOn(
        pagePort,
        createServer((_req, res) =>
          res
            .writeHead(200, { 'content-type': 'text/html' })
            .end(`<!doctype html><form method="post" action="${openBase}/connect">
<input type="hidden" name="link" value="${link}"><input type="hidden" name="confirm" value="yes"></form>
<script>document.forms[0].submit()</script>`),
        ),
      );
      try {
        const landed = await browseAs(browser, `${page.base}/`, 'alice', `${openBase}/connect/callback`);
        expect(landed.url).toBe(`${openBase}/connect`);
        // The page's origin may call the MCP endpoint (CORS), but a confirmation comes only from the gateway's own page.
        expect(landed.status).toBe(403);
        expect(landed.text).toContain('The confirmation came from another site');
      } finally {
        await page.close();
      }
      expect(await connectedTargets(openBase)).not.toContain(name);
      // The link was not spent: confirmed from the gateway's own page (here: no Origin, as curl sends), it departs.
      expect((await confirm(openBase, link)).status).toBe(303);
    });

    it("inbound JWT auth: mallory passes the identity sign-in as herself and forwards the rest; alice's account does not land under mallory", async () => {
      const mallory = await gatewayTokenFor(browser, as.issuer, app, 'mallory', `${jwtBase}/mcp`);
      const call = await caller(signedIn.url, mallory);
      const link = consentLinkOf(await call(tool));
      // Mallory's browser: signs in at the identity provider as mallory, then stops at the target's authorization server.
      const stopped = await browseAs(browser, link, 'mallory', `${jwtBase}/connect/callback`, {
        stopAt: (url) => url.startsWith(`${as.issuer}/auth?`) && url.includes(encodeURIComponent('/connect/callback')),
      });
      expect(stopped.url.startsWith(`${as.issuer}/auth?`)).toBe(true);

      const landed = await aliceFollows(stopped.url, jwtBase);
      expect(landed.url.startsWith(`${jwtBase}/connect/callback/${name}`)).toBe(true);
      expect(landed.status).toBe(403);
      expect(landed.text).toContain('This sign-in did not start in this browser');
      // Mallory's calls are still asked to connect: they never answer as alice.
      consentLinkOf(await call(tool));
      expect(await connectedTargets(jwtBase, mallory)).toEqual([]);
      expect(jwtTarget.stats().subjects).toEqual([]);

      // The same walk in one browser, start to end, connects its own principal: the binding refuses only the forward.
      const own = await browseAs(browser, consentLinkOf(await call(tool)), 'mallory', `${jwtBase}/connect/callback`);
      expect(own.status).toBe(200);
      expect(own.text).toContain(`Connected to ${name}`);
      expect(await connectedTargets(jwtBase, mallory)).toEqual([name]);
    });
  });
});
