import { createServer } from 'node:http';
import type { LocalGateway } from '../../dev/local-gateway';
import { connectClient, type EraClient } from '../eras/clients';
import { modernCall, startGateway } from '../modern/helpers';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy';
import { forwardTo, listen } from '../support/loopback';
import { eventually } from '../support/mcp-http';
import { startV1PushServer, type V1PushServer } from '../support/servers/v1-push-server';

/**
 * A target that misbehaves around its sessions and its era: what the client gets is the documented
 * error, never "Internal error", and one request going away never fails another.
 */

jest.setTimeout(30_000);

let target: V1PushServer;
beforeAll(async () => {
  target = await startV1PushServer();
});
afterAll(async () => target?.close());

describe('a target that forgets its session again right after the gateway re-initialized it', () => {
  let proxy: FaultProxy;
  let gateway: LocalGateway;
  let client: EraClient | undefined;

  beforeAll(async () => {
    proxy = await startFaultProxy(target.url);
    gateway = await startGateway(
      { targets: [{ name: 'legacy', url: proxy.url, era: 'legacy' }] },
      { dynamodbEndpoint: 'embedded' },
    );
  });
  afterEach(async () => {
    proxy.rule = () => 'pass';
    await client?.close();
    client = undefined;
  });
  afterAll(async () => {
    await gateway?.close();
    await proxy?.close();
  });

  // Every tools/call on a session is answered 404 ("session not found"), however often it is re-opened.
  const forgetful = () => {
    proxy.rule = (request) =>
      request.body?.method === 'tools/call' && request.headers['mcp-session-id'] ? { status: 404 } : 'pass';
  };

  test('2025 session: DependencyFailedException naming the target, after exactly one re-initialize', async () => {
    client = await connectClient('v1', gateway.url, 5000);
    await client.callTool('legacy___long_task', { steps: 1 }); // the target session exists
    forgetful();
    const before = target.stats().initializeCount;
    const error = await client.callTool('legacy___long_task', { steps: 1 }).then(
      () => undefined,
      (e: { code?: number; message?: string }) => e,
    );
    expect(error?.code).toBe(-32603);
    expect(error?.message).toMatch(/DependencyFailedException: target legacy: session not found again/);
    expect(target.stats().initializeCount - before).toBe(1);
  });

  test('2026-07-28 request: DependencyFailedException (retryable), not "Internal error"', async () => {
    forgetful();
    const res = await modernCall(
      gateway.url,
      'tools/call',
      { name: 'legacy___long_task', arguments: { steps: 1 } },
      'f1',
    );
    expect(res.body.error).toMatchObject({
      code: -32603,
      message: expect.stringMatching(/^DependencyFailedException: target legacy: session not found again/),
      data: expect.objectContaining({ retryable: true }),
    });
  });
});

describe('a shared era probe', () => {
  test('the request that started it going away does not fail the others waiting for it', async () => {
    // server/discover is held until released, so both requests wait for the same probe.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let discovers = 0;
    const upstream = new URL(target.url);
    const slow = await listen(
      createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', async () => {
          const body = Buffer.concat(chunks);
          if (body.includes('"server/discover"')) {
            discovers++;
            await held;
          }
          forwardTo(upstream, req, res).end(body);
        });
      }),
    );
    const gateway = await startGateway({ targets: [{ name: 'legacy', url: `${slow.base}/mcp` }] });
    // Who asks for the target's era verdict, with the request's signal (the shared probe is joined there).
    const verdicts = jest.spyOn(gateway.deps.targets.eras, 'modernVerdict');
    try {
      const impatient = new AbortController();
      const first = fetch(gateway.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/list',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'gone',
          method: 'tools/list',
          params: {
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientInfo': { name: 'impatient', version: '1' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
        signal: impatient.signal,
      }).catch(() => undefined);
      await eventually(() => expect(discovers).toBe(1));
      const [, firstSignal] = verdicts.mock.calls[0]!;
      const asked = verdicts.mock.calls.length;
      const second = modernCall(gateway.url, 'tools/list', {}, 'patient');
      // The second request has reached the gateway and waits on the same probe.
      await eventually(() => expect(verdicts.mock.calls.length).toBeGreaterThan(asked));
      impatient.abort();
      await first;
      // The gateway has seen the first client leave (its socket closed) before the probe ends.
      await eventually(() => expect(firstSignal?.aborted).toBe(true));
      release();
      const listed = await second;
      expect(listed.body.result?.tools?.map((t: { name: string }) => t.name)).toContain('legacy___deploy');
      expect(discovers).toBe(1);
    } finally {
      release();
      await gateway.close();
      await slow.close();
    }
  });
});
