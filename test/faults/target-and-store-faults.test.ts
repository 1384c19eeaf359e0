import { createServer, type Server } from 'node:http';
import { startDemoTarget } from '../../examples/targets/demo-target';
import type { CountedDynamo } from '../support/dynamo';
import type { GatewayUnderTest } from '../support/gateways';
import { listen } from '../support/loopback';
import { initSession, type Json, post, readMessage, sseEvents } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * Faults (benchmarks-and-failures issue): misbehaving targets and a failing DynamoDB endpoint give
 * clear JSON-RPC errors, never a crash or a hang, and the gateway keeps serving afterwards.
 */

type Behaviour = (body: Json, res: import('node:http').ServerResponse) => void;

/** A deliberately broken "target": answers initialize properly, then misbehaves on every call. */
async function startBrokenTarget(behaviour: Behaviour): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : {};
      if (body.method === 'initialize') {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'broken-1' });
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: body.id,
            result: {
              protocolVersion: '2025-11-25',
              capabilities: { tools: {} },
              serverInfo: { name: 'broken', version: '0' },
            },
          }),
        );
        return;
      }
      if (!('id' in body)) {
        res.writeHead(202).end();
        return;
      }
      behaviour(body, res);
    });
  });
  const started = await listen(server);
  return { url: `${started.base}/mcp`, close: started.close };
}

const behaviours: Record<string, Behaviour> = {
  'HTTP 500': (_b, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('boom'),
  'garbage JSON': (_b, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc": "2.0", "id": '),
  'JSON that is not JSON-RPC': (_b, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"hello":"world"}'),
  'an SSE stream of garbage that ends': (_b, res) =>
    res.writeHead(200, { 'content-type': 'text/event-stream' }).end('data: {not json\n\ndata: [1,2]\n\n'),
  'an SSE stream that breaks mid-event': (_b, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(
      'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n\ndata: {"jsonrp',
    );
    setTimeout(() => res.destroy(), 20);
  },
  'a 202 to a request': (_b, res) => res.writeHead(202).end(),
  'an HTML error page': (_b, res) =>
    res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>'),
};

describe('misbehaving targets', () => {
  const names = Object.keys(behaviours).map((_, i) => `broken-${i}`);
  const gw = withGateway(
    { logLevel: 'SILENT' },
    {
      targets: {
        demo: () => startDemoTarget(),
        ...Object.fromEntries(
          Object.values(behaviours).map((behaviour, i) => [names[i], () => startBrokenTarget(behaviour)]),
        ),
      },
    },
  );
  let gateway: GatewayUnderTest;
  beforeAll(() => {
    gateway = gw.instances[0];
  });

  it.each(Object.keys(behaviours).map((label, i) => [label, i] as const))(
    'a target answering %s gives DependencyFailedException naming it',
    async (_label, i) => {
      const { headers } = await initSession(gateway.url);
      const res = await post(gateway.url, headers, {
        jsonrpc: '2.0',
        id: 'c',
        method: 'tools/call',
        params: { name: `${names[i]}___x`, arguments: {} },
      });
      const messages: Json[] = [];
      for await (const event of sseEvents(res)) if (event.message) messages.push(event.message);
      const message = messages[messages.length - 1];
      expect(message.id).toBe('c');
      expect(message.error.data).toMatchObject({ type: 'DependencyFailedException', target: names[i] });
      const healthy = await readMessage(
        await post(gateway.url, headers, {
          jsonrpc: '2.0',
          id: 'd',
          method: 'tools/call',
          params: { name: 'demo___echo', arguments: { text: 'ok' } },
        }),
      );
      expect(healthy.result.content[0].text).toBe('echo: ok');
    },
  );

  it('still lists the healthy target’s tools when the others are broken', async () => {
    const { headers } = await initSession(gateway.url);
    const { result } = await readMessage(
      await post(gateway.url, headers, { jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    );
    expect(result.tools.map((t: Json) => t.name)).toContain('demo___echo');
  });
});

describe('a failing DynamoDB endpoint', () => {
  const gw = withGateway({ logLevel: 'SILENT' }, { targets: { demo: () => startDemoTarget() } });
  let dynamo: CountedDynamo;
  let gateway: GatewayUnderTest;
  beforeAll(() => {
    dynamo = gw.dynamo;
    gateway = gw.instances[0];
  });
  afterEach(() => {
    dynamo.mode = 'ok';
  });

  it.each(['down', 'throttle'] as const)(
    'answers 503 with a retry hint when the endpoint is %s, and recovers',
    async (mode) => {
      const { headers } = await initSession(gateway.url);
      dynamo.mode = mode;
      const failedInit = await post(
        gateway.url,
        {},
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
        },
      );
      expect(failedInit.status).toBe(503);
      expect(failedInit.headers.get('retry-after')).toBe('1');
      expect(await failedInit.json()).toMatchObject({ id: 1, error: { code: -32603, data: { retryable: true } } });
      const failedCall = await post(gateway.url, headers, {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'demo___echo', arguments: { text: 'x' } },
      });
      expect(failedCall.status).toBe(503);
      expect((await failedCall.json()).error.data.retryable).toBe(true);
      dynamo.mode = 'ok';
      const recovered = await readMessage(
        await post(gateway.url, headers, {
          jsonrpc: '2.0',
          id: 3,
          method: 'tools/call',
          params: { name: 'demo___echo', arguments: { text: 'back' } },
        }),
      );
      expect(recovered.result.content[0].text).toBe('echo: back');
    },
  );

  it('answers an elicitation round with a retryable error when the pending record cannot be written', async () => {
    const { headers } = await initSession(gateway.url, { capabilities: { elicitation: { form: {} } } });
    await readMessage(
      await post(gateway.url, headers, {
        jsonrpc: '2.0',
        id: 0,
        method: 'tools/call',
        params: { name: 'demo___echo', arguments: { text: 'warm' } },
      }),
    );
    const res = await post(gateway.url, headers, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'demo___use_aws', arguments: { command: 'x' } },
    });
    dynamo.mode = 'down'; // after the session was loaded, before the pending record is written
    const message = await readMessage(res);
    // The target was refused the elicitation (it could not be recorded) and fell back.
    expect(message.id).toBe(1);
    expect(message.result.content[0].text).toBe(
      'elicitation unavailable: MCP error -32603: Gateway could not relay the request; retry later',
    );
  });
});
