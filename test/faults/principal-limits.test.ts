import { aheadClock } from '../support/fake-clock';
import type { GatewayKind, GatewayUnderTest } from '../support/gateways';
import { initSession, type Json, post } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * A principal's sessions are bounded: at most `maxSessionsPerPrincipal` live and
 * `initializeRatePerMinute` initializes a minute, counted in DynamoDB across instances (two gateways on
 * one dynalite here, as two Lambda environments). Beyond either: 429 with Retry-After and a data.type a
 * client can switch on; nothing is stored for the refused initialize.
 */
// The function-URL handler runs in the Lambda runtime (the real one, locally); in-process alone it would add nothing.
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];

const INIT = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'limits', version: '1' } },
};

/**
 * A fixed-window count must not straddle a minute: wait for the next one when this one is nearly over
 * (a duration: the window is the Lambda runtime's minute, on its process's real clock).
 */
async function freshMinute(): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 50));
}

describe.each(kinds)('per-principal limits through the %s', (kind) => {
  const gw = withGateway({ logLevel: 'SILENT' }, { kind, instances: 0 });

  it('a principal holds at most maxSessionsPerPrincipal live sessions across instances; DELETE makes room', async () => {
    const limits = { maxSessionsPerPrincipal: 3, tableName: 'limits-live' };
    const a: GatewayUnderTest = await gw.start(limits);
    const b: GatewayUnderTest = await gw.start(limits);
    const first = await initSession(a.url);
    await initSession(b.url);
    await initSession(a.url);
    const refused = await post(b.url, {}, INIT);
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('mcp-session-id')).toBeNull();
    const body = (await refused.json()) as Json;
    expect(body).toEqual({
      jsonrpc: '2.0',
      id: 'init',
      error: {
        code: -32000,
        message:
          'Too many sessions: at most 3 live sessions for one principal (maxSessionsPerPrincipal); end one with DELETE or retry later',
        data: { type: 'TooManySessions', limit: 3, retryable: true, retryAfterSeconds: retryAfter },
      },
    });
    const deleted = await fetch(a.url, { method: 'DELETE', headers: first.headers });
    expect(deleted.status).toBe(200);
    const admitted = await post(b.url, {}, INIT);
    expect(admitted.status).toBe(200);
    expect(admitted.headers.get('mcp-session-id')).toBeTruthy();
  });

  it('at most initializeRatePerMinute initializes a minute across instances, then 429 until the minute ends', async () => {
    const limits = { initializeRatePerMinute: 4, tableName: 'limits-rate' };
    // The local servers' time starts at the start of a minute (it runs that far ahead of the wall
    // clock), and the test ends long before that minute does (jest's 30 s timeout).
    const offset = 60_000 - (Date.now() % 60_000);
    const options = { localServer: { clock: aheadClock(() => offset) } };
    const a = await gw.start(limits, options);
    const b = await gw.start(limits, options);
    if (kind !== 'local server') await freshMinute();
    const open = await initSession(a.url);
    const statuses: number[] = [];
    for (const gateway of [b, a, b]) statuses.push((await post(gateway.url, {}, INIT)).status);
    expect(statuses).toEqual([200, 200, 200]);
    const refused = await post(a.url, {}, INIT);
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(((await refused.json()) as Json).error).toMatchObject({
      code: -32000,
      data: { type: 'RateLimited', limit: 4, retryable: true },
    });
    expect((await post(b.url, {}, INIT)).status).toBe(429);
    // Sessions already open are not affected.
    const ping = await post(b.url, open.headers, { jsonrpc: '2.0', id: 'p', method: 'ping' });
    expect(ping.status).toBe(200);
  });
});
