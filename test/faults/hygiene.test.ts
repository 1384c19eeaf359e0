import { createServer, request as httpRequest, type Server } from 'node:http';
import { startDemoTarget } from '../../examples/targets/demo-target';
import type { GatewayKind } from '../support/gateways';
import { listen } from '../support/loopback';
import { initSession, type Json, post, readMessage } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * Bounds and hygiene: deeply nested JSON is refused where it enters (never a stack
 * overflow, a 500 or "target unreachable"), every HTTP method the endpoint does not serve is 405 (TRACE
 * too, which fetch's Request cannot even carry), and a protocol version header that is not a version
 * gets each era path's documented error.
 */
// The function-URL handler runs in the Lambda runtime (the real one, locally); in-process alone it would add nothing.
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];
const DEPTH = 5000;
/** Built as text: JSON.stringify itself overflows at this depth. */
const deep = `${'{"a":'.repeat(DEPTH)}1${'}'.repeat(DEPTH)}`;
const META = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`;

/** A 2025 target that answers every tools/call with a result nested DEPTH levels deep. */
async function startDeepTarget(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : {};
      if (!('id' in body)) return void res.writeHead(202).end();
      const result =
        body.method === 'initialize'
          ? JSON.stringify({
              protocolVersion: '2025-11-25',
              capabilities: { tools: {} },
              serverInfo: { name: 'deep', version: '0' },
            })
          : body.method === 'tools/list'
            ? JSON.stringify({ tools: [{ name: 'deep', inputSchema: { type: 'object' } }] })
            : `{"content":[],"structuredContent":${deep}}`;
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'deep-1' });
      res.end(`{"jsonrpc":"2.0","id":${JSON.stringify(body.id)},"result":${result}}`);
    });
  });
  const started = await listen(server);
  return { url: `${started.base}/mcp`, close: started.close };
}

/** node:http, because fetch refuses to send TRACE. */
function rawRequest(url: string, method: string): Promise<{ status: number; allow?: string; body: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: target.hostname, port: target.port, path: target.pathname, method, headers: { host: target.host } },
      (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe.each(kinds)('bounds and hygiene through the %s', (kind) => {
  const gw = withGateway(
    { logLevel: 'SILENT' },
    { kind, targets: { demo: () => startDemoTarget(), deep: () => startDeepTarget() } },
  );
  const echo = {
    jsonrpc: '2.0',
    id: 'ok',
    method: 'tools/call',
    params: { name: 'demo___echo', arguments: { text: 'still here' } },
  };

  it(`refuses a ${DEPTH}-deep argument with -32602 (400), in both eras, and keeps serving`, async () => {
    const { headers } = await initSession(gw.url);
    const legacy = await post(
      gw.url,
      headers,
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo___echo","arguments":{"text":"x","deep":${deep}}}}`,
    );
    expect(legacy.status).toBe(400);
    expect(await legacy.json()).toMatchObject({
      id: 1,
      error: { code: -32602, message: expect.stringMatching(/nested deeper than 128/) },
    });
    const modern = await post(
      gw.url,
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'demo___echo' },
      `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo___echo","arguments":{"deep":${deep}},${META}}}`,
    );
    expect(modern.status).toBe(400);
    expect((await modern.json()).error.code).toBe(-32602);
    const answer = await post(gw.url, headers, `{"jsonrpc":"2.0","id":"gw-x","result":${deep}}`);
    expect(answer.status).toBe(400);
    expect((await answer.json()).error.code).toBe(-32600);
    expect((await readMessage(await post(gw.url, headers, echo))).result.content[0].text).toBe('echo: still here');
  });

  it(`fails a call whose target answers ${DEPTH} levels deep with DependencyFailedException naming it`, async () => {
    const { headers } = await initSession(gw.url);
    const res = await post(gw.url, headers, {
      jsonrpc: '2.0',
      id: 'deep',
      method: 'tools/call',
      params: { name: 'deep___deep', arguments: {} },
    });
    const message = await readMessage(res);
    expect(message.error).toMatchObject({
      code: -32603,
      message: expect.stringMatching(/nested deeper than 128 levels/),
      data: { type: 'DependencyFailedException', target: 'deep' },
    });
    expect((await readMessage(await post(gw.url, headers, echo))).result.content[0].text).toBe('echo: still here');
  });

  it.each(['TRACE', 'PUT', 'PATCH', 'HEAD', 'PROPFIND'])('answers %s with 405 and Allow', async (method) => {
    const res = await rawRequest(gw.url, method);
    expect(res.status).toBe(405);
    expect(res.allow).toBe('GET, POST, DELETE');
    if (method !== 'HEAD') expect(JSON.parse(res.body).error.code).toBe(-32000);
  });

  it('refuses an MCP-Protocol-Version that is not a version on each era path', async () => {
    const { headers } = await initSession(gw.url);
    const outcomes: Array<[string, number, Json]> = [];
    for (const [label, extra, body] of [
      ['2025 session', headers, { jsonrpc: '2.0', id: 1, method: 'tools/list' }],
      ['no session', {}, { jsonrpc: '2.0', id: 2, method: 'tools/list' }],
      [
        '2026 request',
        { 'mcp-method': 'tools/list' },
        JSON.parse(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{${META}}}`),
      ],
    ] as const) {
      const res = await post(gw.url, { ...extra, 'mcp-protocol-version': 'bogus' }, body);
      outcomes.push([label, res.status, (await res.json()).error]);
    }
    expect(outcomes).toEqual([
      [
        '2025 session',
        400,
        expect.objectContaining({ code: -32600, data: expect.objectContaining({ requested: 'bogus' }) }),
      ],
      [
        'no session',
        400,
        expect.objectContaining({ code: -32600, data: expect.objectContaining({ requested: 'bogus' }) }),
      ],
      [
        '2026 request',
        400,
        expect.objectContaining({ code: -32020, data: { mismatch: { header: 'bogus', body: '2026-07-28' } } }),
      ],
    ]);
  });
});
