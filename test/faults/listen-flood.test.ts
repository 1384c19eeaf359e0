import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process';
import { type OpenedListen, openListen } from '../support/listen-client';
import { startV2ResourcesServer, type V2ResourcesServer } from '../support/servers/v2-resources-server';

/**
 * A flood of resource URIs in one `subscriptions/listen` (2026-07-28) against an `npm start` gateway
 * process whose heap is capped at 256 MB (`node --max-old-space-size=256`): before the listen's caps,
 * each URI started a live listing of every target at once, and 20,000 URIs (a 470 KB body) ran the
 * process out of heap, ending every request in flight with it. Now the listen is refused with -32602
 * before any target is asked, and the same process goes on serving listens. The deployment forms
 * (`--lambda`, `--web-function`) refuse the same flood: ../modern/listen-bounds.test.ts.
 */

jest.setTimeout(120_000);

const KEY = 'test-key-A-0123456789abcdefghijklmnopqrstuvwxyz';

/** The listen's answer, or how it failed (the process gone: a reset, a refused connection). */
async function attempt(url: string, id: string, uris: string[]): Promise<OpenedListen | { failed: string }> {
  try {
    const opened = await openListen(url, id, { resourceSubscriptions: uris }, AbortSignal.timeout(90_000));
    opened.close();
    return opened;
  } catch (error) {
    return { failed: String((error as Error).cause ?? error) };
  }
}

describe('a listen flood against an `npm start` gateway process with a 256 MB heap', () => {
  let dynamo: CountedDynamo;
  let target: V2ResourcesServer;
  let gateway: GatewayProcess;

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    target = await startV2ResourcesServer({ scheme: 'demo', count: 100 });
    gateway = await startGatewayProcess(
      {
        logLevel: 'SILENT',
        requestStateKeys: { current: KEY },
        targets: [{ name: 'demo', url: target.url, era: 'modern' }],
      },
      dynamo.endpoint,
      { nodeFlags: ['--max-old-space-size=256'] },
    );
  }, 90_000);

  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await target?.close();
    await dynamo?.close();
  });

  it.each([20_000, 5_000])(
    '%i resource URIs: refused with -32602 naming the limit, nothing reaches the target; the process still serves a listen',
    async (count) => {
      const before = target.stats().modern.requestsByMethod['resources/list'] ?? 0;
      const uris = Array.from({ length: count }, (_, i) => `demo://item/${i}`);
      const flood = await attempt(gateway.url, `flood-${count}`, uris);
      // Then an ordinary listen, to the same process.
      const ordinary = await attempt(gateway.url, `after-${count}`, [target.uri(0), target.uri(1), target.uri(2)]);

      expect(flood).toMatchObject({
        contentType: expect.stringContaining('application/json'),
        first: {
          error: { code: -32602, message: expect.stringContaining('maxResourceSubscriptionsPerListen') },
        },
      });
      expect(target.stats().modern.requestsByMethod['resources/list'] ?? 0).toBeLessThanOrEqual(before + 1);
      expect(ordinary).toMatchObject({
        first: {
          method: 'notifications/subscriptions/acknowledged',
          params: { notifications: { resourceSubscriptions: [target.uri(0), target.uri(1), target.uri(2)] } },
        },
      });
      expect(gateway.child.exitCode).toBeNull();
    },
  );
});
