import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';
import type { LocalGateway } from '../../dev/local-gateway';
import { connectClient, type EraClient } from '../eras/clients';
import { modernCall, startGateway } from '../modern/helpers';
import { type GatewayUnderTest, startGatewayProcess } from '../support/gateways';
import { eventually, initSession, post, readMessage } from '../support/mcp-http';
import { startV1PushServer, type V1PushServer } from '../support/servers/v1-push-server';

/**
 * Which calls share a target session. A 2025-only target (the v1 SDK server of the era tests) sends
 * its requests on the session's standalone GET stream, where a request names no call: whoever shares
 * the session could be shown it. So a 2026-07-28 call that can be asked holds a pooled target session
 * of its own while it runs; everything else that needs a session shares one per gateway session (2025)
 * or per principal and capabilities (2026-07-28), opened once however many requests arrive at once,
 * and every session the gateway opens is either kept or ended at the target.
 */

// 50 and 20 rounds of calls that each ask: on a loaded machine (beside a second copy of the suite) a
// round took more than a second. What is asserted is who sees what, never how fast.
jest.setTimeout(180_000);

const CALL_TIMEOUT_MS = 20_000;
const NO_INPUT = {}; // a 2026-07-28 client that declares nothing: it cannot be asked, so it never listens

let target: V1PushServer;
let dynamo: { endpoint: string; close(): Promise<void> };
let gateway: LocalGateway;
/** A second instance on the same DynamoDB, in a process of its own (nothing in memory shared). */
let other: GatewayUnderTest;
const clients: EraClient[] = [];

beforeAll(async () => {
  target = await startV1PushServer();
  dynamo = await startEmbeddedDynamo();
  const config = { targets: [{ name: 'legacy', url: target.url, era: 'legacy' as const }] };
  gateway = await startGateway(config, { dynamodbEndpoint: dynamo.endpoint });
  other = await startGatewayProcess(config, dynamo.endpoint);
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await gateway?.close();
  await other?.close();
  await target?.close();
  await dynamo?.close();
});

async function client(kind: Parameters<typeof connectClient>[0]): Promise<EraClient> {
  const connected = await connectClient(kind, gateway.url, CALL_TIMEOUT_MS);
  clients.push(connected);
  return connected;
}

const messages = (c: EraClient) => c.asked.map((a) => a.params.message);

describe('2026-07-28 calls of a tool that asks on the target’s GET stream', () => {
  test('two clients at once each see and answer only their own question, 50 times in a row', async () => {
    const [x, y] = await Promise.all([client('v2 pin 2026-07-28'), client('v2 pin 2026-07-28')]);
    for (let i = 0; i < 50; i++) {
      x.asked.length = 0;
      y.asked.length = 0;
      const results = await Promise.all([
        x.callTool('legacy___deploy', { env: `x${i}` }),
        y.callTool('legacy___deploy', { env: `y${i}` }),
      ]);
      expect({ i, results: results.map((r) => r.text), x: messages(x), y: messages(y) }).toEqual({
        i,
        results: [`deployed to x${i}`, `deployed to y${i}`],
        x: [`Deploy to x${i}?`],
        y: [`Deploy to y${i}?`],
      });
    }
  });

  test("one client's three parallel calls all complete, 20 times in a row", async () => {
    const x = await client('v2 pin 2026-07-28');
    for (let i = 0; i < 20; i++) {
      x.asked.length = 0;
      const envs = ['a', 'b', 'c'].map((e) => `${e}${i}`);
      const results = await Promise.all(envs.map((env) => x.callTool('legacy___deploy', { env })));
      expect({ i, results: results.map((r) => r.text), asked: messages(x).sort() }).toEqual({
        i,
        results: envs.map((env) => `deployed to ${env}`),
        asked: envs.map((env) => `Deploy to ${env}?`),
      });
    }
  });
});

describe('one target session where callers are one', () => {
  test('parallel requests of one 2025 session open one target session', async () => {
    const { headers } = await initSession(gateway.url); // declares nothing: its calls never listen
    const before = target.stats();
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        post(gateway.url, headers, {
          jsonrpc: '2.0',
          id: `s${i}`,
          method: 'tools/call',
          params: { name: 'legacy___long_task', arguments: { steps: 1 } },
        }).then(readMessage),
      ),
    );
    expect(responses.map((r) => r.result?.content?.[0]?.text)).toEqual(Array(6).fill('finished 1 steps'));
    const after = target.stats();
    expect(after.initializeCount - before.initializeCount).toBe(1);
    expect(after.liveSessions - before.liveSessions).toBe(1);
  });

  test('parallel requests of one 2025 session on two instances: one target session kept, the other opener ends its own', async () => {
    const { headers } = await initSession(gateway.url);
    const before = target.stats();
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        post(i % 2 ? other.url : gateway.url, headers, {
          jsonrpc: '2.0',
          id: `t${i}`,
          method: 'tools/call',
          params: { name: 'legacy___long_task', arguments: { steps: 1 } },
        }).then(readMessage),
      ),
    );
    expect(responses.map((r) => r.result?.content?.[0]?.text)).toEqual(Array(6).fill('finished 1 steps'));
    await eventually(() => expect(target.stats().liveSessions - before.liveSessions).toBe(1));
    const after = target.stats();
    expect(after.initializeCount - before.initializeCount).toBeLessThanOrEqual(2); // one per instance at most
    expect(after.initializeCount - before.initializeCount - (after.deleteCount - before.deleteCount)).toBe(1);
  });

  test('parallel calls of one 2025 session that listen: one kept target session; a call that found it in use ends its own', async () => {
    const x = await client('v1');
    const before = target.stats();
    const results = await Promise.all(Array.from({ length: 6 }, () => x.callTool('legacy___long_task', { steps: 1 })));
    expect(results.map((r) => r.text)).toEqual(Array(6).fill('finished 1 steps'));
    await eventually(() => expect(target.stats().liveSessions - before.liveSessions).toBe(1));
    const after = target.stats();
    expect(after.initializeCount - before.initializeCount - (after.deleteCount - before.deleteCount)).toBe(1);
  });

  test('parallel 2026-07-28 requests that cannot be asked share one pooled target session', async () => {
    const before = target.stats();
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        modernCall(
          gateway.url,
          'tools/call',
          { name: 'legacy___long_task', arguments: { steps: 1 } },
          `n${i}`,
          NO_INPUT,
        ),
      ),
    );
    expect(responses.map((r) => r.body.result?.content?.[0]?.text)).toEqual(Array(6).fill('finished 1 steps'));
    const after = target.stats();
    expect(after.initializeCount - before.initializeCount).toBe(1);
    expect(after.liveSessions - before.liveSessions).toBe(1);
  });

  test('parallel 2026-07-28 calls that can be asked each hold a session; afterwards none is left orphaned at the target', async () => {
    const before = target.stats();
    const pooledBefore = gateway.deps.legacySessions.size;
    const responses = await Promise.all(
      Array.from({ length: 7 }, (_, i) =>
        modernCall(gateway.url, 'tools/call', { name: 'legacy___wait', arguments: { ms: 150 } }, `w${i}`),
      ),
    );
    expect(responses.map((r) => r.body.result?.content?.[0]?.text)).toEqual(Array(7).fill('waited 150'));
    // Every session the gateway opened is in its pool or was ended (DELETE) at the target.
    await eventually(() => {
      const after = target.stats();
      const opened = after.initializeCount - before.initializeCount;
      const ended = after.deleteCount - before.deleteCount;
      expect(opened).toBeGreaterThan(1);
      expect(opened - ended).toBe(gateway.deps.legacySessions.size - pooledBefore);
      expect(after.liveSessions - before.liveSessions).toBe(opened - ended);
    });
    // And the pool keeps a bounded number of idle sessions per caller.
    expect(gateway.deps.legacySessions.size - pooledBefore).toBeLessThanOrEqual(4);
  });
});
