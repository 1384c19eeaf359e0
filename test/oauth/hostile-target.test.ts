import { discoverAuthorizationServerMetadata, registerClient } from '@modelcontextprotocol/sdk/client/auth.js';
import type { Browser } from 'playwright-core';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { type GatewayKind, type GatewayUnderTest, startGateway } from '../support/gateways';
import { initSession } from '../support/mcp-http';
import { type AuthorizationServer, startAuthorizationServer } from '../support/oauth/authorization-server';
import { browseAs, startBrowser } from '../support/oauth/browser';
import { caller, confirm, connectedTargets, consentLinkOf, sealedLinkOf } from '../support/oauth/consent-calls';
import {
  type HostileAuthorizationServer,
  startHostileAuthorizationServer,
} from '../support/oauth/hostile-authorization-server';
import { type HostileTarget, type Recorder, startHostileTarget, startRecorder } from '../support/oauth/hostile-target';
import { chromium, describeNeeding } from '../support/prerequisites';

/**
 * What a hostile target, or the authorization server it names, cannot make the gateway do — in each
 * form the gateway runs in (the local server, the deployment bundle in frozen-between-invocations
 * Lambda environments, the Web Function bundle). Real parts: oidc-provider as the honest
 * authorization server, a hostile authorization server in a process of its own
 * (../support/oauth/serve-hostile-authorization-server.ts), loopback recorders that must never be
 * reached, the person in headless Chromium.
 *
 * In these tests loopback stands for two things: the places a hostile URL must not reach (the
 * recorders, the Runtime API) and the public internet (the hostile authorization server, which the
 * configuration names in `outbound.allowedOrigins` as an operator would trust a public one; everything
 * it names elsewhere must pass the policy on its own).
 */

jest.setTimeout(90_000);

const withBrowser = describeNeeding(chromium);

const FORMS: GatewayKind[] = ['local server', 'lambda runtime', 'web function'];

/** The honest target whose token the mix-up is after (the hostile server asks the honest one for it). */
const HONEST_RESOURCE = 'https://bank.example/mcp';

withBrowser('a hostile target or authorization server cannot steer the gateway', () => {
  let dynamo: CountedDynamo;
  let browser: Browser;
  let honest: AuthorizationServer;
  let hostile: HostileAuthorizationServer;
  /** Where nothing may arrive: every URL a hostile party names off the allowed origins points here. */
  let recorder: Recorder;
  const targets: Record<string, HostileTarget> = {};
  /** The gateway under test now (the Runtime API target reads its environments). */
  let current: GatewayUnderTest | undefined;

  beforeAll(async () => {
    [dynamo, recorder] = await Promise.all([startCountedDynamo(), startRecorder()]);
    honest = await startAuthorizationServer({ redirectUris: [] });
    hostile = await startHostileAuthorizationServer(honest.issuer, recorder.base);
    const loopbackName = recorder.base.replace('127.0.0.1', 'localhost');
    const specs: Record<string, Parameters<typeof startHostileTarget>[0]> = {
      // Authorization-server mix-up: its server bounces the user to the honest one and takes the code.
      mixup: { authorizationServers: () => [hostile.issuer('mixup')] },
      // Its 401 names metadata on a loopback address, and by a name that resolves to one.
      'meta-address': { resourceMetadata: () => `${recorder.base}/prm` },
      'meta-name': { resourceMetadata: () => `${loopbackName}/prm` },
      // Its metadata names an authorization server on a loopback address.
      'as-address': { authorizationServers: () => [recorder.base] },
      // Its authorization server's metadata claims to be the honest server (RFC 8414 §3.3).
      liar: { authorizationServers: () => [hostile.issuer('liar')] },
      // Its authorization server names token and registration endpoints on a loopback address.
      steer: { authorizationServers: () => [hostile.issuer('steer')] },
      // Its authorization server's authorize endpoint is an application's URL scheme.
      scheme: { authorizationServers: () => [hostile.issuer('scheme')] },
      // Its authorization server's metadata redirects to a loopback address.
      bounce: { authorizationServers: () => [hostile.issuer('bounce')] },
      // Its 401 names the Lambda Runtime API of the environment serving the request (elsewhere: a recorder).
      runtime: {
        resourceMetadata: () => {
          const busy = current?.stats?.().detail.find((environment) => environment.state === 'busy');
          return busy ? `http://${busy.runtimeApi}/2018-06-01/runtime/invocation/next` : `${recorder.base}/runtime`;
        },
      },
    };
    for (const [name, spec] of Object.entries(specs)) targets[name] = await startHostileTarget(spec);
    browser = await startBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    for (const target of Object.values(targets)) await target.close();
    await Promise.all([hostile?.close(), honest?.close(), recorder?.close()]);
    await dynamo?.close();
  });

  it("an issuer not on the operator's list (outbound.authorizationServers) is never used, though the target names it", async () => {
    const gateway = await startGateway(
      'local server',
      {
        targets: [{ name: 'mixup', url: targets.mixup!.url, userOAuth: {} }],
        outbound: { allowedOrigins: [hostile.base], authorizationServers: [honest.issuer] },
        logLevel: 'SILENT',
      },
      dynamo.endpoint,
    );
    try {
      const base = new URL(gateway.url).origin;
      const before = await hostile.record();
      const call = await caller(gateway.url);
      const confirmed = await confirm(base, sealedLinkOf(consentLinkOf(await call('mixup___connect_account'))));
      expect(confirmed.status).toBe(502);
      expect(confirmed.headers.get('location')).toBeNull();
      await confirmed.body?.cancel();
      expect((await hostile.record()).authorizeRequests).toBe(before.authorizeRequests);
    } finally {
      await gateway.close();
    }
  });

  describe.each(FORMS)('through the %s', (form) => {
    let gateway: GatewayUnderTest;
    let base: string;

    beforeAll(async () => {
      gateway = await startGateway(
        form,
        {
          targets: Object.entries(targets).map(([name, target]) => ({ name, url: target.url, userOAuth: {} })),
          outbound: { allowedOrigins: [hostile.base] },
          logLevel: 'SILENT',
          requestStateKeys: { current: `hostile-target-test-key-of-the-${form.replace(' ', '-')}-gateway` },
        },
        dynamo.endpoint,
        { timeoutMs: 60_000 },
      );
      current = gateway;
      base = new URL(gateway.url).origin;
      // The attacker's own client at the honest server, registered with this gateway's callbacks (open
      // dynamic registration lets anyone do that), for the mix-up's bounce.
      const metadata = await discoverAuthorizationServerMetadata(honest.issuer);
      const own = await registerClient(honest.issuer, {
        metadata,
        clientMetadata: {
          client_name: 'MCP gateway',
          redirect_uris: [`${base}/connect/callback/mixup`, `${base}/connect/callback`],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        },
      });
      await hostile.configure(own.client_id, HONEST_RESOURCE);
    });
    afterAll(async () => {
      current = undefined;
      await gateway?.close();
    });

    /** Opens the consent link of `target` (its page), then confirms it: what the gateway did meanwhile is the test. */
    async function tryToConnect(target: string): Promise<{ page: number; confirmed: Response }> {
      const call = await caller(gateway.url);
      const link = consentLinkOf(await call(`${target}___connect_account`));
      const page = await fetch(link);
      await page.body?.cancel();
      return { page: page.status, confirmed: await confirm(base, sealedLinkOf(link)) };
    }

    it('a mix-up: the honest server answers a consent meant for the hostile one; the code and verifier stay with the gateway', async () => {
      const before = await hostile.record();
      const call = await caller(gateway.url);
      const link = consentLinkOf(await call('mixup___connect_account'));
      // The person signs in at the honest server's real pages (the hostile one bounced them there).
      const landed = await browseAs(browser, link, 'alice', `${base}/connect/callback`);
      expect(landed.url.startsWith(`${base}/connect/callback`)).toBe(true);
      expect(landed.status).toBe(400);
      expect(landed.text).toContain('did not come from the authorization server');

      const after = await hostile.record();
      expect(after.authorizeRequests).toBe(before.authorizeRequests + 1);
      // Nothing reached the hostile token endpoint: no code, no PKCE verifier, nothing redeemed as alice.
      expect(after.tokenRequests).toEqual(before.tokenRequests);
      expect(after.redeemed).toEqual(before.redeemed);
      expect(await connectedTargets(base)).not.toContain('mixup');
    });

    it.each([
      ['meta-address', "its 401's resource_metadata on a loopback address"],
      ['meta-name', "its 401's resource_metadata by a name that resolves to loopback"],
      ['as-address', 'its metadata names an authorization server on a loopback address'],
      ['steer', "its authorization server's registration and token endpoints on a loopback address"],
      ['bounce', "its authorization server's metadata redirects to a loopback address"],
      ['runtime', 'its 401 names the Lambda Runtime API'],
    ])('%s: %s is never requested, and the consent fails with a page saying so', async (target) => {
      const seen = recorder.requests.length;
      const { page, confirmed } = await tryToConnect(target);
      expect(page).toBe(200);
      expect(confirmed.status).toBe(502);
      expect(await confirmed.text()).toContain(`${target} cannot be connected right now`);
      expect(recorder.requests.slice(seen)).toEqual([]);
      expect(await connectedTargets(base)).not.toContain(target);
      // In Lambda environments the Runtime API itself was named (a request there would take an invocation).
      if (target === 'runtime' && form === 'lambda runtime')
        expect(targets.runtime!.named.at(-1)).toMatch(
          /^http:\/\/127\.0\.0\.1:\d+\/2018-06-01\/runtime\/invocation\/next$/,
        );
      // The gateway goes on serving: the next caller's initialize is answered (no invocation was consumed).
      const next = await initSession(gateway.url);
      expect(next.headers['mcp-session-id']).toEqual(expect.any(String));
    });

    it('liar: an authorization server whose metadata names another issuer is refused (RFC 8414 §3.3): the browser is not sent there', async () => {
      const { confirmed } = await tryToConnect('liar');
      expect(confirmed.status).toBe(502);
      expect(confirmed.headers.get('location')).toBeNull();
      await confirmed.body?.cancel();
    });

    it('scheme: an authorization endpoint of another scheme (ms-msdt:) is never where the browser is sent', async () => {
      const { confirmed } = await tryToConnect('scheme');
      expect(confirmed.status).toBe(502);
      expect(confirmed.headers.get('location')).toBeNull();
      await confirmed.body?.cancel();
    });

    it('/connections: malformed percent-encoding is a 400, never a 500; nothing of it is cached', async () => {
      const malformed = await fetch(`${base}/connections/%E0%A4%A`, { method: 'DELETE' });
      expect(malformed.status).toBe(400);
      expect(malformed.headers.get('cache-control')).toBe('no-store');
      expect(((await malformed.json()) as { error: { message: string } }).error.message).toMatch(/percent-encoding/);
      const list = await fetch(`${base}/connections`);
      expect(list.status).toBe(200);
      expect(list.headers.get('cache-control')).toBe('no-store');
      await list.body?.cancel();
    });
  });
});
