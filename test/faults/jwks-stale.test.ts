import { startLocalGateway } from '../../dev/local-gateway';
import { AUDIENCE, startIssuer, type TestIssuer } from '../auth/support';
import { startCountedDynamo } from '../support/dynamo';
import { aheadClock } from '../support/fake-clock';
import { post } from '../support/mcp-http';

/**
 * JWKS serve-stale-on-error: an issuer outage longer than the key cache does not
 * lock out valid tokens — the last key set fetched still verifies them for `jwksStaleMs` — and after
 * that bound the gateway answers 503 (the token may be fine), as it does for a key it never saw. The
 * gateway runs in this process on a clock ahead of the wall clock: the test moves its time past the
 * cache's age and the stale window instead of waiting for them.
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
  const MAX_AGE_MS = 200;
  const COOLDOWN_MS = 100;
  /** How far the gateway's time runs ahead of the wall clock. */
  let offset = 0;
  const gateway = await startLocalGateway({
    port: 0,
    config: {
      logLevel: 'SILENT',
      auth: { type: 'jwt', discoveryUrl: issuer.discoveryUrl, allowedAudiences: [AUDIENCE] },
    },
    dynamodbEndpoint: dynamo.endpoint,
    demo: false,
    startupReport: false,
    auth: { inbound: { jwt: { jwksMaxAgeMs: MAX_AGE_MS, jwksCooldownMs: COOLDOWN_MS, jwksStaleMs: STALE_MS } } },
    clock: aheadClock(() => offset),
  });
  try {
    const token = await issuer.sign();
    expect((await initialize(gateway.url, token)).status).toBe(200);
    issuer.setDown(true);
    offset += MAX_AGE_MS; // past the cache: the JWKS is fetched again, and fails
    expect((await initialize(gateway.url, token)).status).toBe(200);
    // A kid the old set does not know may be a new key: 503, not 401.
    const unknown = await initialize(gateway.url, await issuer.sign({}, { kid: 'key-new' }));
    expect(unknown.status).toBe(503);
    offset += STALE_MS; // past jwksStaleMs since the keys were last good (before the first move)
    const late = await initialize(gateway.url, token);
    expect(late.status).toBe(503);
    expect(late.headers.get('retry-after')).toBe('5');
    issuer.setDown(false);
    offset += COOLDOWN_MS; // past the cooldown between fetches too
    expect((await initialize(gateway.url, token)).status).toBe(200);
  } finally {
    await gateway.close();
  }
}, 20_000);
