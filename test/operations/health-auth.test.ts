import { type LocalGateway, startLocalGateway } from '../../dev/local-gateway';
import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { AUDIENCE, capturingLogger, startIssuer, type TestIssuer } from '../auth/support';

/** `/health` with JWT inbound auth: liveness for anyone, target status only for an accepted token. */

let issuer: TestIssuer;
let demo: DemoTarget;
let gateway: LocalGateway;

beforeAll(async () => {
  issuer = await startIssuer();
  demo = await startDemoTarget();
  gateway = await startLocalGateway({
    port: 0,
    demo: false,
    startupReport: false,
    logger: capturingLogger(),
    config: {
      auth: { type: 'jwt', discoveryUrl: issuer.discoveryUrl, allowedAudiences: [AUDIENCE] },
      targets: [{ name: 'docs', url: demo.url }],
    },
  });
});

afterAll(async () => {
  await gateway?.close();
  await demo?.close();
  await issuer?.close();
});

const health = (query = '', token?: string) =>
  fetch(new URL(`/health${query}`, gateway.url), { headers: token ? { authorization: `Bearer ${token}` } : {} });

test('GET /health needs no token and says only ok', async () => {
  const res = await health();
  expect(res.status).toBe(200);
  expect(await res.text()).toBe('{"status":"ok"}');
});

test('GET /health?targets=1 without a valid token is refused like /mcp, naming no target', async () => {
  for (const token of [undefined, await issuer.sign({ aud: 'https://other.example/mcp' })]) {
    const res = await health('?targets=1', token);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(await res.text()).not.toContain('docs');
  }
});

test('GET /health?targets=1 with an accepted token lists the targets', async () => {
  const res = await health('?targets=1', await issuer.sign());
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({
    status: 'ok',
    targets: [
      {
        name: 'docs',
        era: 'legacy',
        reachable: true,
        latencyMs: expect.any(Number),
        tools: expect.any(Number),
        lastError: null,
      },
    ],
  });
});
