import {
  discoverOAuthServerInfo,
  extractResourceMetadataUrl,
  type OAuthClientProvider,
  selectResourceURL,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { ConfigError, type GatewayConfigInput, parseConfig } from '../../lambda/config/schema';
import type { CountedDynamo } from '../support/dynamo';
import { aheadClock } from '../support/fake-clock';
import type { GatewayKind } from '../support/gateways';
import { eventually, type Json, post, readMessage, sessionItems } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';
import { AUDIENCE, CLIENT, capturingLogger, startIssuer, type TestIssuer } from './support';

/**
 * auth.type "jwt" against an OpenID issuer served on loopback with keys made in the test: every way a
 * token is refused (status, WWW-Authenticate), the protected resource metadata, key rotation, an
 * unreachable issuer, and that no token ever reaches the logs.
 */

jest.setTimeout(30_000);

const INIT = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'auth-test', version: '1.0.0' } },
};

function jwtConfig(issuer: TestIssuer, demo: DemoTarget, extra: Partial<GatewayConfigInput> = {}): GatewayConfigInput {
  return {
    targets: [{ name: 'demo', url: demo.url }],
    auth: {
      type: 'jwt',
      discoveryUrl: issuer.discoveryUrl,
      allowedAudiences: [AUDIENCE],
      allowedClients: [CLIENT],
      allowedScopes: ['mcp:tools'],
    },
    logLevel: 'SILENT',
    ...extra,
  };
}

async function initialize(url: string, token?: string, scheme = 'Bearer'): Promise<{ res: Response; body: Json }> {
  const res = await post(url, token === undefined ? {} : { authorization: `${scheme} ${token}` }, INIT);
  return { res, body: await readMessage(res) };
}

/** Parses `Bearer a="x", b="y"` into its parameters. */
function challenge(res: Response): Record<string, string> {
  const header = res.headers.get('www-authenticate') ?? '';
  expect(header).toMatch(/^Bearer /);
  return Object.fromEntries([...header.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
}

const origin = (url: string) => new URL(url).origin;

let issuer: TestIssuer;
/** Every token this file makes, so the last test can check none was logged. */
const tokens: string[] = [];
const sign = async (...args: Parameters<TestIssuer['sign']>) => {
  const token = await issuer.sign(...args);
  tokens.push(token);
  return token;
};
const logger = capturingLogger();

beforeAll(async () => {
  issuer = await startIssuer();
});
afterAll(async () => {
  await issuer?.close();
});

// The function-URL handler runs in the Lambda runtime (the real one, locally); in-process alone it would add nothing.
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];

describe.each(kinds)('JWT auth through the %s', (kind) => {
  // The local server logs to the capturing logger; the Lambda kinds log as configured (SILENT).
  const gw = withGateway((targets) => jwtConfig(issuer, targets.demo), {
    kind,
    targets: { demo: () => startDemoTarget() },
    localServer: { logger },
  });
  let dynamo: CountedDynamo;
  let url: string;
  beforeAll(() => {
    ({ dynamo, url } = gw);
  });

  test('no token → 401 with WWW-Authenticate naming the resource metadata (and the scope)', async () => {
    const { res, body } = await initialize(url);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${origin(url)}/.well-known/oauth-protected-resource", scope="mcp:tools"`,
    );
    expect(body.error.message).toMatch(/^Unauthorized/);
    // Every method and every protocol era is behind the same check.
    const del = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': 'x' } });
    expect(del.status).toBe(401);
    const modern = await post(
      url,
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    );
    expect(modern.status).toBe(401);
    await modern.body?.cancel();
  });

  test('another scheme (Basic) counts as no token', async () => {
    const { res } = await initialize(url, Buffer.from('a:b').toString('base64'), 'Basic');
    expect(res.status).toBe(401);
    expect(challenge(res).error).toBeUndefined();
  });

  test('a valid token → the session belongs to <iss>#<sub>', async () => {
    const { res, body } = await initialize(url, await sign());
    expect(res.status).toBe(200);
    expect(body.result.serverInfo.name).toBe('mcp-gateway');
    const sessionId = res.headers.get('mcp-session-id')!;
    const items = await sessionItems(dynamo.endpoint, sessionId);
    expect(items.find((item) => item.sk === 'SESSION')!.principal).toBe(`${issuer.issuer}#alice`);
  });

  test('a bad signature → 401 invalid_token', async () => {
    const { res } = await initialize(url, await sign({}, { key: 'foreign' }));
    expect(res.status).toBe(401);
    const params = challenge(res);
    expect(params.error).toBe('invalid_token');
    expect(params.resource_metadata).toBe(`${origin(url)}/.well-known/oauth-protected-resource`);
    expect(params.error_description).toMatch(/signature/);
  });

  test('a tampered payload → 401 invalid_token', async () => {
    const [header, payload, signature] = (await sign()).split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = [
      header,
      Buffer.from(JSON.stringify({ ...claims, sub: 'mallory' })).toString('base64url'),
      signature,
    ].join('.');
    tokens.push(forged);
    const { res } = await initialize(url, forged);
    expect(res.status).toBe(401);
    expect(challenge(res).error).toBe('invalid_token');
  });

  test('a wrong audience → 401 invalid_token (the token was issued for another resource)', async () => {
    const { res } = await initialize(url, await sign({ aud: 'https://other.example/api' }));
    expect(res.status).toBe(401);
    expect(challenge(res)).toMatchObject({
      error: 'invalid_token',
      error_description: 'the aud claim of the token is not acceptable',
    });
  });

  test('an expired token → 401 invalid_token', async () => {
    const { res } = await initialize(url, await sign({}, { expiresIn: Math.floor(Date.now() / 1000) - 120 }));
    expect(res.status).toBe(401);
    expect(challenge(res)).toMatchObject({ error: 'invalid_token', error_description: 'the token has expired' });
  });

  test('another issuer, no sub, no exp → 401 invalid_token', async () => {
    for (const token of [
      await sign({ iss: 'https://evil.example' }),
      await sign({}, { omit: ['sub'] }),
      await sign({}, { omit: ['exp'] }),
    ]) {
      const { res } = await initialize(url, token);
      expect(res.status).toBe(401);
      expect(challenge(res).error).toBe('invalid_token');
    }
  });

  test('a client not allowed → 403 (a new token of the same client would not help)', async () => {
    const { res, body } = await initialize(url, await sign({ client_id: 'someone-else' }));
    expect(res.status).toBe(403);
    const params = challenge(res);
    expect(params.error).toBeUndefined();
    expect(params.resource_metadata).toBe(`${origin(url)}/.well-known/oauth-protected-resource`);
    expect(body.error.message).toMatch(/client/);
    // azp stands in for client_id (OpenID tokens).
    const azp = await initialize(url, await sign({ azp: CLIENT }, { omit: ['client_id'] }));
    expect(azp.res.status).toBe(200);
  });

  test('no allowed scope → 403 insufficient_scope naming the scope', async () => {
    const { res } = await initialize(url, await sign({ scope: 'openid profile' }));
    expect(res.status).toBe(403);
    expect(challenge(res)).toMatchObject({
      error: 'insufficient_scope',
      scope: 'mcp:tools',
      resource_metadata: `${origin(url)}/.well-known/oauth-protected-resource`,
    });
    // `scp` as an array (Okta, Entra) is read too.
    const scp = await initialize(url, await sign({ scp: ['mcp:tools'] }, { omit: ['scope'] }));
    expect(scp.res.status).toBe(200);
  });

  test('protected resource metadata is served without a token, at the root and the /mcp-suffixed path', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const res = await fetch(`${origin(url)}${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        resource: `${origin(url)}/mcp`,
        authorization_servers: [issuer.issuer],
        scopes_supported: ['mcp:tools'],
        bearer_methods_supported: ['header'],
      });
    }
    expect((await fetch(`${origin(url)}/.well-known/other`)).status).toBe(404);
  });

  test("the official SDK's discovery follows the 401 to the metadata and on to the issuer", async () => {
    const { res } = await initialize(url);
    const resourceMetadataUrl = extractResourceMetadataUrl(res);
    expect(resourceMetadataUrl?.href).toBe(`${origin(url)}/.well-known/oauth-protected-resource`);
    const info = await discoverOAuthServerInfo(url, { resourceMetadataUrl });
    expect(info.authorizationServerUrl).toBe(issuer.issuer);
    expect(info.resourceMetadata?.resource).toBe(url);
    expect(info.authorizationServerMetadata?.token_endpoint).toBe(`${issuer.issuer}/token`);
    // The resource the SDK would ask tokens for is this gateway's endpoint.
    const resource = await selectResourceURL(url, {} as OAuthClientProvider, info.resourceMetadata);
    expect(resource?.href).toBe(url);
  });
});

describe('JWT keys and issuer (local server)', () => {
  // Each test starts its gateway with its own inbound auth settings.
  const gw = withGateway((targets) => jwtConfig(issuer, targets.demo), {
    targets: { demo: () => startDemoTarget() },
    instances: 0,
  });

  test('key rotation: a new kid is fetched once the cooldown allows, and random kids cannot hammer the issuer', async () => {
    // Long enough that no machine is slow enough to let it pass unmoved: the test moves the gateway's
    // time past it (`offset`: how far that time runs ahead of the wall clock).
    const COOLDOWN_MS = 30_000;
    let offset = 0;
    const gateway = await gw.start(
      {},
      {
        localServer: {
          logger,
          auth: { inbound: { jwt: { jwksCooldownMs: COOLDOWN_MS } } },
          clock: aheadClock(() => offset),
        },
      },
    );
    try {
      expect((await initialize(gateway.url, await sign())).res.status).toBe(200);
      const fetched = issuer.jwksRequests();
      const kid = await issuer.rotate();
      // Right after a fetch the cached set is trusted: an unknown kid is refused without a refetch.
      expect((await initialize(gateway.url, await sign({}, { kid }))).res.status).toBe(401);
      expect(issuer.jwksRequests()).toBe(fetched);
      offset += COOLDOWN_MS; // the cooldown has passed on the gateway's clock
      expect((await initialize(gateway.url, await sign({}, { kid }))).res.status).toBe(200);
      expect(issuer.jwksRequests()).toBe(fetched + 1);
      // Old keys stay valid while published.
      expect((await initialize(gateway.url, await sign({}, { kid: 'key-1' }))).res.status).toBe(200);
      // A burst of made-up kids: refused, and at most one more JWKS request.
      const burst = await Promise.all(
        Array.from(
          { length: 8 },
          async (_, i) => (await initialize(gateway.url, await sign({}, { kid: `made-up-${i}` }))).res.status,
        ),
      );
      expect(burst.every((status) => status === 401)).toBe(true);
      expect(issuer.jwksRequests()).toBeLessThanOrEqual(fetched + 2);
    } finally {
      await gateway.close();
    }
  });

  test('an unreachable issuer → 503 with Retry-After (the token may be fine), then recovery', async () => {
    const fresh = await startIssuer();
    const gateway = await gw.start(jwtConfig(fresh, gw.targets.demo), {
      localServer: { logger, auth: { inbound: { jwt: { discoveryRetryMs: 200 } } } },
    });
    try {
      const token = await fresh.sign();
      tokens.push(token);
      fresh.setDown(true);
      const { res, body } = await initialize(gateway.url, token);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(body.error.data).toMatchObject({ type: 'ServiceUnavailable', retryable: true });
      fresh.setDown(false);
      // Recovery once the failed discovery may be retried (discoveryRetryMs), without a fixed sleep.
      await eventually(async () => expect((await initialize(gateway.url, token)).res.status).toBe(200));
    } finally {
      await gateway.close();
      await fresh.close();
    }
  });

  test('no token was ever written to the logs', () => {
    expect(logger.lines.length).toBeGreaterThan(0);
    const text = logger.text();
    expect(tokens.length).toBeGreaterThan(10);
    for (const token of tokens) {
      expect(text).not.toContain(token);
      // Nor its signature alone.
      expect(text).not.toContain(token.split('.')[2]);
    }
  });
});

describe('JWT configuration', () => {
  const base = { discoveryUrl: 'https://idp.example.com/.well-known/openid-configuration' };

  test('http discovery URLs only on loopback hosts', () => {
    for (const discoveryUrl of [
      'http://127.0.0.1:9000/.well-known/openid-configuration',
      'http://localhost/x',
      'http://[::1]:8/x',
      base.discoveryUrl,
    ]) {
      expect(parseConfig({ auth: { type: 'jwt', discoveryUrl } }).auth).toEqual({ type: 'jwt', discoveryUrl });
    }
    expect(() =>
      parseConfig({ auth: { type: 'jwt', discoveryUrl: 'http://idp.example.com/.well-known/openid-configuration' } }),
    ).toThrow(/auth\.discoveryUrl: must be https \(http is accepted only for a loopback host/);
    expect(() => parseConfig({ auth: { type: 'jwt', discoveryUrl: 'ftp://127.0.0.1/x' } })).toThrow(ConfigError);
  });

  test('unknown fields and types are refused, naming the field', () => {
    expect(() => parseConfig({ auth: { type: 'jwt', ...base, allowedAudience: ['x'] } })).toThrow(
      /auth\.allowedAudience/,
    );
    expect(() => parseConfig({ auth: { type: 'jwt' } })).toThrow(/auth\.discoveryUrl/);
    expect(() => parseConfig({ auth: { type: 'cognito' } })).toThrow(/auth\.type/);
    expect(parseConfig({ auth: { type: 'iam' } }).auth).toEqual({ type: 'iam' });
  });
});
