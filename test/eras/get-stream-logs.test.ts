import { createServer, request as httpRequest } from 'node:http';
import type { LocalGateway } from '../../lambda/local/local-gateway';
import { startGateway } from '../stateless/helpers';
import { listen } from '../support/loopback';
import { startV1PushServer, type V1PushServer } from '../support/servers/v1-push-server';
import { type ClientKind, connectClient } from './clients';

/**
 * Log messages a 2025 target sends on its session's GET stream just before its tool returns (the v1
 * SDK's `sendLoggingMessage` in the `long_task` tool of the era tests' v1 server), for back-to-back
 * calls. The gateway closes a call's GET stream when the call ends and opens one for the next call;
 * a target that has not yet noticed the close refuses the new one (409) and drops what it sends
 * meanwhile. Here the network is slow to tell: the target learns of a closed GET stream 30 ms late
 * (a proxy), as it does under load or across a real network.
 */

jest.setTimeout(60_000);

let target: V1PushServer;
let proxy: { base: string; close(): Promise<void> };
let gateway: LocalGateway;
let conflicts = 0;

beforeAll(async () => {
  target = await startV1PushServer();
  const upstream = new URL(target.url);
  proxy = await listen(
    createServer((req, res) => {
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: upstream.pathname,
          headers: req.headers,
        },
        (answer) => {
          if (answer.statusCode === 409) conflicts++;
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      res.on('close', () => setTimeout(() => forward.destroy(), req.method === 'GET' ? 30 : 0));
      req.pipe(forward);
    }),
  );
  gateway = await startGateway(
    { targets: [{ name: 'old', url: `${proxy.base}/mcp`, era: 'legacy' }] },
    { dynamodbEndpoint: 'embedded' },
  );
});
afterAll(async () => {
  await gateway?.close();
  await proxy?.close();
  await target?.close();
});

test.each(['v1', 'v2 pin 2026-07-28'] as ClientKind[])(
  '%s client: 30 back-to-back calls, each log message reaches the client',
  async (kind) => {
    const client = await connectClient(kind, gateway.url, 5000);
    try {
      const meta = kind === 'v1' ? undefined : { 'io.modelcontextprotocol/logLevel': 'warning' };
      if (kind === 'v1') await client.setLoggingLevel('warning');
      const conflictsBefore = conflicts;
      let arrivedWithResult = 0;
      for (let i = 0; i < 30; i++) {
        const seen = client.logs.length;
        await client.callTool('old___long_task', { steps: 1 }, { meta });
        if (client.logs.length > seen) arrivedWithResult++;
      }
      // The situation the test is about did arise: the target refused a GET stream it still thought open.
      expect(conflicts).toBeGreaterThan(conflictsBefore);
      expect(arrivedWithResult).toBe(30);
      expect(client.logs).toEqual(Array(30).fill({ level: 'warning', data: 'long_task finished 1' }));
    } finally {
      await client.close();
    }
  },
);
