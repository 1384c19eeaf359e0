import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { discoverAuthorizationServerMetadata, registerClient } from '@modelcontextprotocol/sdk/client/auth.js';
import type { Browser } from 'playwright-core';
import { startLocalGateway } from '../../dev/local-gateway';
import { ConsentLinks } from '../../lambda/connections/consent-links';
import { SealedBox } from '../../lambda/crypto/sealed-box';
import { systemClock } from '../../lambda/scheduling/clock';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { aheadClock } from '../support/fake-clock';
import { type GatewayUnderTest, startGateway } from '../support/gateways';
import { forwardTo, freePort } from '../support/loopback';
import { type AuthorizationServer, startAuthorizationServer } from '../support/oauth/authorization-server';
import { browseAs, consentAs, startBrowser } from '../support/oauth/browser';
import {
  answerOf,
  caller,
  confirm,
  connectedTargets,
  consentLinkOf,
  sealedLinkOf,
} from '../support/oauth/consent-calls';
import { gatewayTokenFor, type McpClientApp, registerClientApp } from '../support/oauth/gateway-token';
import { type ProtectedTarget, startProtectedTarget } from '../support/oauth/protected-target';
import { authorizationServerStats, revokeGrantsOf } from '../support/oauth/test-endpoints';
import { chromium, describeNeeding } from '../support/prerequisites';

/**
 * What the per-user consent flow refuses, and what it keeps, with real parts only: oidc-provider as
 * the targets' authorization server (and as the identity provider of inbound JWT auth), official-SDK
 * MCP servers protected by it, gateway instances on one DynamoDB behind one public URL, raw 2025-11-25
 * calls that take no stream (a missing connection is the -32042 exception form), and people in
 * headless Chromium. Each case has its own target, so what one stores is no other's concern; every
 * caller of the gateway without inbound auth is the one principal `anonymous`.
 */

jest.setTimeout(60_000);

const withBrowser = describeNeeding(chromium);

/**
 * The short-lived tokens' lifetime (s): long enough for any call on a slow machine (the target checks
 * them on the real clock). The gateway instances that refresh them run on a clock ahead of the wall
 * clock, which the tests move past the lifetime instead of waiting it out.
 */
const SHORT_TTL_SECONDS = 60;

/** A loopback front on `port` sending each request to the instance `pick` names, as one public site. */
async function startFront(port: number, pick: (path: string) => GatewayUnderTest): Promise<() => Promise<void>> {
  const publicOrigin = `http://127.0.0.1:${port}`;
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    const instance = pick(path);
    // The browser's form posts carry the public origin, which the instance (under its own host) sees as its own.
    if (req.headers.origin === publicOrigin) req.headers.origin = new URL(instance.url).origin;
    req.pipe(forwardTo(new URL(path, instance.url), req, res));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
}

/** One character of a sealed value's ciphertext changed (the 4th dot-separated part: gw1.kid.iv.ciphertext). */
function tampered(sealed: string): string {
  const parts = sealed.split('.');
  const body = parts[3]!;
  const at = Math.floor(body.length / 2);
  parts[3] = `${body.slice(0, at)}${body[at] === 'A' ? 'B' : 'A'}${body.slice(at + 1)}`;
  return parts.join('.');
}

withBrowser('consent security: what the per-user consent flow refuses and keeps', () => {
  let dynamo: CountedDynamo;
  let browser: Browser;
  /** The targets' authorization server, also the identity provider of the JWT-authenticated gateway. */
  let as: AuthorizationServer;
  /** Access tokens of SHORT_TTL_SECONDS. */
  let shortAs: AuthorizationServer;
  /** Stopped before anything asked it anything. */
  let goneAs: AuthorizationServer;
  /** One target per case (what one case stores is no other's concern); `signedIn` is the JWT gateway's. */
  let targets: Record<
    'mine' | 'removable' | 'refreshing' | 'revoked' | 'registered' | 'unreachable' | 'signedIn',
    ProtectedTarget
  >;
  /** Two instances of one gateway (auth none) on one table: pages on the first, callbacks on the second. */
  const instances: GatewayUnderTest[] = [];
  /** How far the two instances' time runs ahead of the wall clock (one deployment: one time). */
  let offset = 0;
  /** Another gateway with `mine`, under a requestState key of its own. */
  let otherKey: GatewayUnderTest;
  /** Inbound JWT auth, the identity login at `as`. */
  let jwtGateway: GatewayUnderTest;
  let publicUrl: string;
  let jwtPublicUrl: string;
  /** alice's MCP client at `as`: a public client whose callback is a page of its own. */
  let app: McpClientApp;
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    const port = await freePort();
    let jwtPort = await freePort();
    while (jwtPort === port) jwtPort = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    jwtPublicUrl = `http://127.0.0.1:${jwtPort}`;
    [as, shortAs, goneAs] = await Promise.all([
      startAuthorizationServer({
        redirectUris: [
          ...['mine', 'removable'].map((target) => `${publicUrl}/connect/callback/${target}`),
          `${jwtPublicUrl}/connect/callback/mine`,
        ],
      }),
      startAuthorizationServer({
        redirectUris: ['refreshing', 'revoked'].map((target) => `${publicUrl}/connect/callback/${target}`),
        accessTokenTtlSeconds: SHORT_TTL_SECONDS,
      }),
      startAuthorizationServer({ redirectUris: [`${publicUrl}/connect/callback/unreachable`] }),
    ]);
    targets = {
      mine: await startProtectedTarget(as.issuer),
      removable: await startProtectedTarget(as.issuer),
      registered: await startProtectedTarget(as.issuer),
      signedIn: await startProtectedTarget(as.issuer),
      refreshing: await startProtectedTarget(shortAs.issuer),
      revoked: await startProtectedTarget(shortAs.issuer),
      unreachable: await startProtectedTarget(goneAs.issuer),
    };
    await goneAs.close();

    // Clients of `as` registered the way any client registers (RFC 7591): the gateway's identity login, alice's app.
    const metadata = await discoverAuthorizationServerMetadata(as.issuer);
    const identityClient = await registerClient(as.issuer, {
      metadata,
      clientMetadata: {
        client_name: 'gateway sign-in',
        redirect_uris: [`${jwtPublicUrl}/connect/identity`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    });
    app = await registerClientApp(as.issuer);
    closers.push(app.close);

    process.env.CONSENT_SECURITY_AS_SECRET = as.clientSecret;
    process.env.CONSENT_SECURITY_SHORT_AS_SECRET = shortAs.clientSecret;
    process.env.CONSENT_SECURITY_GONE_AS_SECRET = goneAs.clientSecret;
    process.env.CONSENT_SECURITY_IDENTITY_SECRET = identityClient.client_secret ?? '';
    const preRegistered = (server: AuthorizationServer, secretEnv: string) => ({
      clientId: server.clientId,
      clientSecret: { fromEnv: secretEnv },
      authorizationServer: server.issuer,
    });
    const perUserTargets = [
      { name: 'mine', url: targets.mine.url, userOAuth: preRegistered(as, 'CONSENT_SECURITY_AS_SECRET') },
      { name: 'removable', url: targets.removable.url, userOAuth: preRegistered(as, 'CONSENT_SECURITY_AS_SECRET') },
      // No client: the gateway registers itself at the authorization server (RFC 7591).
      { name: 'registered', url: targets.registered.url, userOAuth: {} },
      {
        name: 'refreshing',
        url: targets.refreshing.url,
        userOAuth: preRegistered(shortAs, 'CONSENT_SECURITY_SHORT_AS_SECRET'),
      },
      {
        name: 'revoked',
        url: targets.revoked.url,
        userOAuth: preRegistered(shortAs, 'CONSENT_SECURITY_SHORT_AS_SECRET'),
      },
      {
        name: 'unreachable',
        url: targets.unreachable.url,
        userOAuth: preRegistered(goneAs, 'CONSENT_SECURITY_GONE_AS_SECRET'),
      },
    ];
    const config = {
      targets: perUserTargets,
      // `registered` finds its authorization server through the target's metadata: on loopback, allowed by name.
      outbound: { allowedOrigins: [as.issuer] },
      connections: { publicUrl },
      logLevel: 'SILENT' as const,
      requestStateKeys: { current: 'consent-security-key-of-the-public-gateway-0123' },
    };
    for (let i = 0; i < 2; i++) {
      instances.push(
        await startLocalGateway({
          port: 0,
          config,
          dynamodbEndpoint: dynamo.endpoint,
          demo: false,
          startupReport: false,
          clock: aheadClock(() => offset),
        }),
      );
    }
    otherKey = await startGateway(
      'local server',
      {
        targets: perUserTargets.filter((t) => t.name === 'mine'),
        logLevel: 'SILENT',
        requestStateKeys: { current: 'another-gateway-with-a-key-of-its-own-4567' },
      },
      dynamo.endpoint,
    );
    jwtGateway = await startGateway(
      'local server',
      {
        auth: {
          type: 'jwt',
          discoveryUrl: `${as.issuer}/.well-known/openid-configuration`,
          allowedAudiences: [`${jwtPublicUrl}/mcp`],
        },
        targets: [
          { name: 'mine', url: targets.signedIn.url, userOAuth: preRegistered(as, 'CONSENT_SECURITY_AS_SECRET') },
        ],
        connections: {
          publicUrl: jwtPublicUrl,
          identityLogin: {
            clientId: identityClient.client_id,
            clientSecret: { fromEnv: 'CONSENT_SECURITY_IDENTITY_SECRET' },
          },
        },
        logLevel: 'SILENT',
        requestStateKeys: { current: 'consent-security-key-of-the-jwt-gateway-89ab' },
      },
      dynamo.endpoint,
    );
    closers.push(
      await startFront(port, (path) => (path.startsWith('/connect/callback') ? instances[1]! : instances[0]!)),
    );
    closers.push(await startFront(jwtPort, () => jwtGateway));
    browser = await startBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    for (const close of closers) await close();
    for (const gateway of [...instances, otherKey, jwtGateway]) await gateway?.close();
    for (const target of Object.values(targets ?? {})) await target.close();
    await Promise.all([as?.close(), shortAs?.close(), goneAs?.close()]);
    await dynamo?.close();
    for (const name of ['AS', 'SHORT_AS', 'GONE_AS', 'IDENTITY']) delete process.env[`CONSENT_SECURITY_${name}_SECRET`];
  });

  const callback = () => `${publicUrl}/connect/callback`;

  it('a forged callback (a random or an altered state) is refused 400, and nothing is stored', async () => {
    const call = await caller(`${publicUrl}/mcp`);
    const random = await fetch(`${callback()}?code=x&state=${randomBytes(64).toString('base64url')}`);
    expect(random.status).toBe(400);
    expect(await random.text()).toContain('This link is not valid');

    // A real state, as the authorization server would hand it back, with one character changed.
    const departed = await confirm(publicUrl, sealedLinkOf(consentLinkOf(await call('mine___whoami'))));
    expect(departed.status).toBe(303);
    const state = new URL(departed.headers.get('location')!).searchParams.get('state')!;
    const altered = await fetch(`${callback()}?code=x&state=${encodeURIComponent(tampered(state))}`);
    expect(altered.status).toBe(400);

    expect(await connectedTargets(publicUrl)).not.toContain('mine');
    consentLinkOf(await call('mine___whoami'));
    expect(targets.mine.stats().subjects).toEqual([]);
  });

  it('a consent link works once: confirming it again after the departure is refused 409', async () => {
    const call = await caller(`${publicUrl}/mcp`);
    const link = sealedLinkOf(consentLinkOf(await call('mine___whoami')));
    const first = await confirm(publicUrl, link);
    expect(first.status).toBe(303);
    expect(first.headers.get('location')!.startsWith(`${as.issuer}/`)).toBe(true);
    const again = await confirm(publicUrl, link);
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('This link was already used');
  });

  it("a link sealed by another gateway's key, a retired key of its own, or altered, is refused 400 (opened or confirmed), saying what to do; its page is never framed", async () => {
    const foreign = sealedLinkOf(consentLinkOf(await (await caller(otherKey.url))('mine___whoami')));
    const own = sealedLinkOf(consentLinkOf(await (await caller(`${publicUrl}/mcp`))('mine___whoami')));
    // A link this gateway made before its key was rotated out (or before a local gateway restarted).
    const retired = new ConsentLinks(
      SealedBox.fromSecrets({ current: 'consent-links:an-earlier-key-of-the-public-gateway-7777' }),
      600_000,
      systemClock,
    );
    const old = retired.seal(retired.create('anonymous', 'mine'));
    const newLink = 'Call the tool again from your MCP client to get a new link.';
    for (const [link, explanation] of [
      [foreign, newLink],
      [old, newLink],
      [tampered(own), 'part of it is missing or changed'],
    ] as const) {
      const opened = await fetch(`${publicUrl}/connect?link=${encodeURIComponent(link)}`);
      expect(opened.status).toBe(400);
      const page = await opened.text();
      expect(page).toContain('This link is not valid');
      expect(page).toContain(explanation);
      // It was not changed: the page must not tell the person to use it unchanged.
      expect(page).not.toContain('unchanged');
      const confirmed = await confirm(publicUrl, link);
      expect(confirmed.status).toBe(400);
      expect(await confirmed.text()).toContain(explanation);
    }
    // The unaltered link still opens: the refusals were for the key and the change. Its page is never
    // framed, cached or named to another site.
    const page = await fetch(`${publicUrl}/connect?link=${encodeURIComponent(own)}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('referrer-policy')).toBe('same-origin');
    await page.body?.cancel();
  });

  it('a replayed callback is refused 409 on any instance, and the stored connection stays as it was', async () => {
    const call = await caller(`${publicUrl}/mcp`);
    const page = await browseAs(browser, consentLinkOf(await call('mine___whoami')), 'alice', callback());
    const landed = page.url;
    expect(page.text).toContain('Connected to mine');
    expect(answerOf(await call('mine___whoami'))).toBe('alice');
    // (The target's earlier 401s were the gateway's discovery, which asks without a token.)
    const before = targets.mine.stats();
    const stored = before.tokenIds.at(-1);

    // Replayed by the same browser (its binding cookie with it): the one-time value is spent.
    const replayed = await fetch(landed, { headers: { cookie: page.cookie } });
    expect(replayed.status).toBe(409);
    // The one-time value is spent in the table: the instance that did not take the callback refuses it too.
    const { pathname, search } = new URL(landed);
    const elsewhere = await fetch(`${new URL(instances[0]!.url).origin}${pathname}${search}`, {
      headers: { cookie: page.cookie },
    });
    expect(elsewhere.status).toBe(409);
    // Replayed from anywhere else (no binding): refused before anything is looked at.
    expect((await fetch(landed)).status).toBe(403);

    expect(answerOf(await call('mine___whoami'))).toBe('alice');
    expect(await connectedTargets(publicUrl)).toContain('mine');
    const after = targets.mine.stats();
    // The same token as before the replays: nothing was exchanged or stored again.
    expect(new Set(after.tokenIds.slice(before.tokenIds.length))).toEqual(new Set([stored]));
    expect(new Set(after.subjects)).toEqual(new Set(['alice']));
    expect(after.refused).toBe(before.refused);
  });

  it('the user removes a connection: 204, revoked at the authorization server, asked again; a second removal is 404', async () => {
    const call = await caller(`${publicUrl}/mcp`);
    await consentAs(browser, consentLinkOf(await call('removable___whoami')), 'alice', callback());
    expect(answerOf(await call('removable___whoami'))).toBe('alice');
    const revokedBefore = (await authorizationServerStats(as.issuer)).revokedGrants;

    const removed = await fetch(`${publicUrl}/connections/removable`, { method: 'DELETE' });
    expect(removed.status).toBe(204);
    expect((await authorizationServerStats(as.issuer)).revokedGrants).toBe(revokedBefore + 1);
    consentLinkOf(await call('removable___whoami'));
    expect(await connectedTargets(publicUrl)).not.toContain('removable');
    expect((await fetch(`${publicUrl}/connections/removable`, { method: 'DELETE' })).status).toBe(404);
  });

  it('an expired access token is refreshed before the call: the same user, a new token, no new consent', async () => {
    const call = await caller(`${publicUrl}/mcp`);
    await consentAs(browser, consentLinkOf(await call('refreshing___whoami')), 'alice', callback());
    expect(answerOf(await call('refreshing___whoami'))).toBe('alice');
    // Every token issued until now has expired on the gateway's clock once it moved this far.
    offset += (SHORT_TTL_SECONDS + 1) * 1000;
    const refreshes = (await authorizationServerStats(shortAs.issuer)).refreshes;
    const before = targets.refreshing.stats();

    expect(answerOf(await call('refreshing___whoami'))).toBe('alice');
    const after = targets.refreshing.stats();
    const sent = after.tokenIds.slice(before.tokenIds.length);
    expect(sent.length).toBeGreaterThan(0);
    // Tokens the target had not seen, from a refresh (the same user's grant), and none sent expired first.
    for (const id of sent) expect(before.tokenIds).not.toContain(id);
    expect((await authorizationServerStats(shortAs.issuer)).refreshes).toBeGreaterThan(refreshes);
    expect(after.refused).toBe(before.refused);
    expect(new Set(after.subjects)).toEqual(new Set(['alice']));
    expect(await connectedTargets(publicUrl)).toContain('refreshing');
  });

  it('a refresh the authorization server refuses (grant revoked there) removes the connection: consent is asked again', async () => {
    const call = await caller(`${publicUrl}/mcp`);
    await consentAs(browser, consentLinkOf(await call('revoked___whoami')), 'bob', callback());
    expect(answerOf(await call('revoked___whoami'))).toBe('bob');
    expect(await revokeGrantsOf(shortAs.issuer, 'bob')).toBeGreaterThan(0);
    offset += (SHORT_TTL_SECONDS + 1) * 1000; // bob's token has expired on the gateway's clock
    const { refused, tokenIds } = targets.revoked.stats();

    consentLinkOf(await call('revoked___whoami'));
    expect(await connectedTargets(publicUrl)).not.toContain('revoked');
    // The expired token was never sent: the refusal came from the authorization server, before the target.
    expect(targets.revoked.stats().refused).toBe(refused);
    expect(targets.revoked.stats().tokenIds).toEqual(tokenIds);
    expect(new Set(targets.revoked.stats().subjects)).toEqual(new Set(['bob']));
  });

  it('without a configured client the gateway registers itself once (RFC 7591); the other instance uses that registration', async () => {
    const gatewayRegistrations = async () =>
      (await authorizationServerStats(as.issuer)).registrations.filter((name) => name === 'MCP gateway');
    expect(await gatewayRegistrations()).toEqual([]);
    const call = await caller(`${publicUrl}/mcp`);
    // The departure (registration) on the first instance, the code exchange on the second: the code is
    // bound to the client it was issued to, so the exchange works only with the same registration.
    const landed = await browseAs(browser, consentLinkOf(await call('registered___whoami')), 'carol', callback());
    expect(landed.url.startsWith(callback())).toBe(true);
    expect(landed.status).toBe(200);
    expect(landed.text).toContain('Connected to registered');
    expect(answerOf(await call('registered___whoami'))).toBe('carol');
    expect(await gatewayRegistrations()).toHaveLength(1);
  });

  it('an authorization server down before any discovery: confirming shows a 502 page, and nothing is stored', async () => {
    const call = await caller(`${publicUrl}/mcp`);
    const link = sealedLinkOf(consentLinkOf(await call('unreachable___whoami')));
    const page = await fetch(`${publicUrl}/connect?link=${encodeURIComponent(link)}`);
    expect(page.status).toBe(200);
    await page.body?.cancel();

    const confirmed = await confirm(publicUrl, link);
    expect(confirmed.status).toBe(502);
    expect(await confirmed.text()).toContain('unreachable cannot be connected right now');
    // "Try again later" holds: the link was not spent by a departure that could not happen.
    const retried = await confirm(publicUrl, link);
    expect(retried.status).toBe(502);
    await retried.body?.cancel();
    expect(await connectedTargets(publicUrl)).not.toContain('unreachable');
    consentLinkOf(await call('unreachable___whoami'));
    expect(targets.unreachable.stats().subjects).toEqual([]);
  });

  it('with inbound JWT auth, a link opened by another person is refused 403 and stays usable by its own', async () => {
    // alice's access token for the gateway, as her MCP client gets it.
    const alice = await gatewayTokenFor(browser, as.issuer, app, 'alice', `${jwtPublicUrl}/mcp`);
    const call = await caller(`${jwtPublicUrl}/mcp`, alice);
    expect((await fetch(`${jwtPublicUrl}/connections`)).status).toBe(401);

    const link = consentLinkOf(await call('mine___whoami'));
    const mallory = await browseAs(browser, link, 'mallory', `${jwtPublicUrl}/connect/callback`);
    expect(mallory.url.startsWith(`${jwtPublicUrl}/connect/identity`)).toBe(true);
    expect(mallory.status).toBe(403);
    expect(mallory.text).toContain('This link is not yours');
    expect(await connectedTargets(jwtPublicUrl, alice)).toEqual([]);
    consentLinkOf(await call('mine___whoami'));
    expect(targets.signedIn.stats().subjects).toEqual([]);

    // mallory's attempt spent nothing: the same link, opened by alice, connects her.
    const own = await browseAs(browser, link, 'alice', `${jwtPublicUrl}/connect/callback`);
    expect(own.status).toBe(200);
    expect(own.text).toContain('Connected to mine');
    expect(answerOf(await call('mine___whoami'))).toBe('alice');
    expect(await connectedTargets(jwtPublicUrl, alice)).toEqual(['mine']);
    expect(new Set(targets.signedIn.stats().subjects)).toEqual(new Set(['alice']));
  });
});
