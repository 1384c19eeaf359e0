import { startLocalGateway } from '../../dev/local-gateway';
import { AUDIENCE, startIssuer, type TestIssuer } from '../auth/support';
import { startCountedDynamo } from '../support/dynamo';
import { post } from '../support/mcp-http';

/**
 * JWKS serve-stale-on-error: an issuer outage longer than the key cache does not
 * lock out valid tokens — the last key set fetched still verifies them for `jwksStaleMs` — and after
 * that bound the gateway answers 503 (the token may be fine), as it does for a key it never saw.
 */
let issuer: TestIssuer;
let dynamo: Awaited<ReturnType<typeof startCountedDynamo>>;
beforeAll(async () => {
  issuer = await startIssuer();
  dynamo = await startCountedDynamo();
});
afterAll(async () => {
  await issuer?.close();
  await dynamo?.close();
});

const initialize = async (url: string, token: string) =>
  post(
    url,
    { authorization: `Bearer ${token}` },
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    },
  );

test('keys keep verifying while the issuer is down, for jwksStaleMs after they were last good, then 503', async () => {
  const STALE_MS = 2000;
  const gateway = await startLocalGateway({
    port: 0,
    config: {
      logLevel: 'SILENT',
      auth: { type: 'jwt', discoveryUrl: issuer.discoveryUrl, allowedAudiences: [AUDIENCE] },
    },
    dynamodbEndpoint: dynamo.endpoint,
    demo: false,
    startupReport: false,
    auth: { inbound: { jwt: { jwksMaxAgeMs: 200, jwksCooldownMs: 100, jwksStaleMs: STALE_MS } } },
  });
  try {
    const token = await issuer.sign();
    expect((await initialize(gateway.url, token)).status).toBe(200);
    const lastGood = Date.now();
    issuer.setDown(true);
    // Durations below: the cache's age, the stale window and the cooldown passing are the scenario
    // (a running gateway process, on the real clock).
    await new Promise((resolve) => setTimeout(resolve, 400)); // past the cache: the JWKS is fetched again, and fails
    expect((await initialize(gateway.url, token)).status).toBe(200);
    // A kid the old set does not know may be a new key: 503, not 401.
    const unknown = await initialize(gateway.url, await issuer.sign({}, { kid: 'key-new' }));
    expect(unknown.status).toBe(503);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, lastGood + STALE_MS + 300 - Date.now()))); // past jwksStaleMs
    const late = await initialize(gateway.url, token);
    expect(late.status).toBe(503);
    expect(late.headers.get('retry-after')).toBe('5');
    issuer.setDown(false);
    await new Promise((resolve) => setTimeout(resolve, 150)); // the cooldown between fetches
    expect((await initialize(gateway.url, token)).status).toBe(200);
  } finally {
    await gateway.close();
  }
}, 20_000);
