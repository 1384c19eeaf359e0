import { createServer, type Server } from 'node:net';
import { startDemoTargets } from '../../dev/demo-targets';
import { startLocalGateway } from '../../dev/local-gateway';
import { readyLines } from '../../dev/ready-lines';
import type { GatewayLogger } from '../../lambda/observability/logger';

/** `npm start`'s demo targets: pinned ports, the default port taken by someone else, shared targets. */

const SILENT: GatewayLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

let busy: Server;
let busyPort: number;
beforeAll(async () => {
  busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  busyPort = (busy.address() as { port: number }).port;
});
afterAll(() => new Promise((resolve) => busy.close(resolve)));

/** The demo targets answer /consent/<unknown> with 404: proof that it is a demo target listening there. */
const isDemoTarget = async (url: string) => (await fetch(new URL('/consent/x', url))).status === 404;

it('a default port in use: a free one is taken, and the ready lines say so', async () => {
  const gateway = await startLocalGateway({
    port: 0,
    logger: SILENT,
    startupReport: false,
    demoTargets: { demo: { port: busyPort, fallbackToFreePort: true }, demoModern: { port: 0 } },
  });
  try {
    const [demo, modern] = gateway.demo?.running ?? [];
    expect(demo).toMatchObject({ name: 'demo', era: '2025-11-25', startedHere: true, movedFrom: busyPort });
    expect(modern).toMatchObject({ name: 'demo-modern', era: '2026-07-28', startedHere: true });
    expect(modern?.movedFrom).toBeUndefined();
    const moved = new URL(demo!.url).port;
    expect(moved).not.toBe(String(busyPort));
    expect(await isDemoTarget(demo!.url)).toBe(true);
    expect(await isDemoTarget(modern!.url)).toBe(true);
    expect(gateway.config.targets).toEqual([
      expect.objectContaining({ name: 'demo', url: demo!.url }),
      expect.objectContaining({ name: 'demo-modern', url: modern!.url }),
    ]);
    const lines = readyLines(gateway);
    expect(lines).toContain(`  demo: port ${busyPort} is in use, so it listens on ${moved}`);
    expect(lines).toContain(
      `    npm start -- --port ${Number(new URL(gateway.url).port) + 1} --dynamodb-endpoint ${gateway.dynamodbEndpoint} --demo-url ${demo!.url} --demo-modern-url ${modern!.url}`,
    );
  } finally {
    await gateway.close();
  }
});

it('a chosen port in use fails with EADDRINUSE naming the port', async () => {
  await expect(startDemoTargets({ demo: { port: 0 }, demoModern: { port: busyPort } })).rejects.toMatchObject({
    code: 'EADDRINUSE',
    port: busyPort,
  });
});

it('targets given by URL are used as they are, nothing is started, and no second-process hint is printed', async () => {
  const gateway = await startLocalGateway({
    port: 0,
    logger: SILENT,
    startupReport: false,
    dynamodbEndpoint: 'http://127.0.0.1:9', // not reached: nothing here needs DynamoDB
    demoTargets: { demo: { url: 'http://127.0.0.1:1/mcp' }, demoModern: { url: 'http://127.0.0.1:2/mcp' } },
  });
  try {
    expect(gateway.demo?.running.map((d) => d.startedHere)).toEqual([false, false]);
    expect(gateway.config.targets.map((t) => [t.name, t.url])).toEqual([
      ['demo', 'http://127.0.0.1:1/mcp'],
      ['demo-modern', 'http://127.0.0.1:2/mcp'],
    ]);
    const lines = readyLines(gateway);
    expect(lines).toContain('  DynamoDB: http://127.0.0.1:9, table mcp-gateway');
    expect(lines.join('\n')).not.toContain('second gateway process');
    expect(lines.join('\n')).not.toContain('run in this process');
  } finally {
    await gateway.close();
  }
});
