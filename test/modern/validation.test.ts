import { classifyInboundRequest } from '@modelcontextprotocol/server';
import { type ModernDemoTarget, startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { type Json, MODERN, meta, modernCall, modernHeaders, post, withModernGateway } from './helpers';

/**
 * One test per validation rule of a 2026-07-28 request (the spec's basic/transports/streamable-http.mdx,
 * basic/versioning.mdx, basic/index.mdx: https://modelcontextprotocol.io/specification/). The target must not be reached by a refused request.
 */

jest.setTimeout(30_000);

const gw = withModernGateway({}, { targets: { modern: () => startModernDemoTarget() } });
let target: ModernDemoTarget;
let url: string;

beforeAll(() => {
  target = gw.targets.modern;
  url = gw.url;
});

/** A tools/call of modern___echo; `m === null` sends no `_meta` at all. */
const echoBody = (id: string | number = 1, m: Json | null = meta()) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'modern___echo', arguments: { text: 'hi' }, ...(m === null ? {} : { _meta: m }) },
});

function targetCalls(): number {
  return target.stats().calls.length;
}

async function expectRefused(headers: Record<string, string>, body: Json, status: number, code: number): Promise<Json> {
  const before = targetCalls();
  const res = await post(url, headers, body);
  expect({ status: res.status, code: res.body.error?.code }).toEqual({ status, code });
  expect(res.body.id).toBe(body.id);
  expect(targetCalls()).toBe(before);
  return res.body;
}

describe('the _meta envelope', () => {
  test('no _meta at all → -32602, HTTP 400', async () => {
    const body = await expectRefused(modernHeaders('tools/call', 'modern___echo'), echoBody(1, null), 400, -32602);
    expect(body.error.data.missing).toEqual(['_meta']);
  });

  test('missing clientCapabilities → -32602, HTTP 400, naming the key', async () => {
    const m = meta();
    delete m['io.modelcontextprotocol/clientCapabilities'];
    const body = await expectRefused(modernHeaders('tools/call', 'modern___echo'), echoBody(2, m), 400, -32602);
    expect(body.error.data.missing).toEqual(['io.modelcontextprotocol/clientCapabilities']);
  });

  test('missing protocolVersion (header says 2026-07-28) → -32602, HTTP 400', async () => {
    const m = meta();
    delete m['io.modelcontextprotocol/protocolVersion'];
    const body = await expectRefused(modernHeaders('tools/call', 'modern___echo'), echoBody(3, m), 400, -32602);
    expect(body.error.data.missing).toEqual(['io.modelcontextprotocol/protocolVersion']);
  });

  test('clientInfo is optional', async () => {
    const m = meta();
    delete m['io.modelcontextprotocol/clientInfo'];
    const res = await post(url, modernHeaders('tools/call', 'modern___echo'), echoBody(4, m));
    expect(res.status).toBe(200);
    expect(res.body.result.content[0].text).toBe('echo: hi');
  });
});

describe('the protocol version', () => {
  test('an unsupported version → -32022, HTTP 400, with supported and requested', async () => {
    const m = { ...meta(), 'io.modelcontextprotocol/protocolVersion': '2027-01-01' };
    const headers = { ...modernHeaders('tools/call', 'modern___echo'), 'MCP-Protocol-Version': '2027-01-01' };
    const body = await expectRefused(headers, echoBody(5, m), 400, -32022);
    expect(body.error.data.requested).toBe('2027-01-01');
    expect(body.error.data.supported).toEqual(expect.arrayContaining([MODERN, '2025-11-25']));
  });

  test('a 2025 version claimed in _meta (no initialize) → -32022, HTTP 400', async () => {
    const m = { ...meta(), 'io.modelcontextprotocol/protocolVersion': '2025-11-25' };
    const headers = { ...modernHeaders('tools/call', 'modern___echo'), 'MCP-Protocol-Version': '2025-11-25' };
    const body = await expectRefused(headers, echoBody(6, m), 400, -32022);
    expect(body.error.data.requested).toBe('2025-11-25');
  });

  test('header and _meta disagree → -32020, HTTP 400', async () => {
    const m = { ...meta(), 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
    const headers = { ...modernHeaders('tools/call', 'modern___echo'), 'MCP-Protocol-Version': '2027-01-01' };
    await expectRefused(headers, echoBody(7, m), 400, -32020);
  });
});

describe('the mirrored headers', () => {
  test('missing MCP-Protocol-Version (body is 2026-07-28) → -32020, HTTP 400', async () => {
    const headers = modernHeaders('tools/call', 'modern___echo');
    delete headers['MCP-Protocol-Version'];
    await expectRefused(headers, echoBody(10), 400, -32020);
  });

  test('missing Mcp-Method → -32020, HTTP 400', async () => {
    const headers = modernHeaders('tools/call', 'modern___echo');
    delete headers['Mcp-Method'];
    await expectRefused(headers, echoBody(11), 400, -32020);
  });

  test('Mcp-Method disagrees with the body → -32020, HTTP 400', async () => {
    await expectRefused(modernHeaders('prompts/get', 'modern___echo'), echoBody(12), 400, -32020);
  });

  test('missing Mcp-Name on tools/call → -32020, HTTP 400', async () => {
    await expectRefused(modernHeaders('tools/call'), echoBody(13), 400, -32020);
  });

  test('Mcp-Name disagrees with params.name → -32020, HTTP 400', async () => {
    await expectRefused(modernHeaders('tools/call', 'modern___fail'), echoBody(14), 400, -32020);
  });

  test('Mcp-Name as =?base64?…?= is decoded before comparing', async () => {
    const encoded = `=?base64?${Buffer.from('modern___echo').toString('base64')}?=`;
    const res = await post(url, modernHeaders('tools/call', encoded), echoBody(15));
    expect(res.status).toBe(200);
    expect(res.body.result.content[0].text).toBe('echo: hi');
  });

  test('an encoded Mcp-Name that decodes to another name → -32020, HTTP 400', async () => {
    const encoded = `=?base64?${Buffer.from('modern___fail').toString('base64')}?=`;
    await expectRefused(modernHeaders('tools/call', encoded), echoBody(16), 400, -32020);
  });

  test('an invalid =?base64?…?= value → -32020, HTTP 400', async () => {
    await expectRefused(modernHeaders('tools/call', '=?base64?!!not-base64!!?='), echoBody(17), 400, -32020);
  });

  test('a non-ASCII resource URI travels encoded in Mcp-Name', async () => {
    const uri = 'modern://readme';
    const res = await modernCall(url, 'resources/read', { uri }, 18);
    expect(res.status).toBe(200);
    expect(res.body.result.contents[0].text).toBe('modern demo target readme');
    const weird = 'modern://café';
    const encoded = `=?base64?${Buffer.from(weird).toString('base64')}?=`;
    const read = await post(url, modernHeaders('resources/read', encoded), {
      jsonrpc: '2.0',
      id: 19,
      method: 'resources/read',
      params: { uri: weird, _meta: meta() },
    });
    // Headers fine; the resource does not exist: -32602 (not -32002) in 2026-07-28.
    expect(read.status).toBe(200);
    expect(read.body.error.code).toBe(-32602);
  });

  test('Mcp-Session-Id and Last-Event-ID are ignored on 2026-07-28 requests', async () => {
    const headers = {
      ...modernHeaders('tools/call', 'modern___echo'),
      'Mcp-Session-Id': 'no-such-session',
      'Last-Event-ID': '42',
    };
    const res = await post(url, headers, echoBody(20));
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    expect(res.body.result.content[0].text).toBe('echo: hi');
  });
});

describe('methods', () => {
  test.each(['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'no/such/method'])(
    '%s → -32601, HTTP 404',
    async (method) => {
      const body = {
        jsonrpc: '2.0',
        id: `m-${method}`,
        method,
        params: { _meta: meta(), ...(method === 'initialize' ? { protocolVersion: MODERN } : {}) },
      };
      await expectRefused(modernHeaders(method), body, 404, -32601);
    },
  );

  test('a plain 2025 initialize carrying a 2026-07-28 header → -32020, HTTP 400', async () => {
    const body = {
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    await expectRefused(modernHeaders('initialize'), body, 400, -32020);
  });

  test('server/discover answers with the versions and merged capabilities', async () => {
    const res = await post(url, modernHeaders('server/discover'), {
      jsonrpc: '2.0',
      id: 'd',
      method: 'server/discover',
      params: { _meta: meta() },
    });
    expect(res.status).toBe(200);
    expect(res.body.result).toMatchObject({
      resultType: 'complete',
      supportedVersions: expect.arrayContaining([MODERN, '2025-11-25']),
      capabilities: { tools: {}, prompts: {}, resources: {} },
      ttlMs: expect.any(Number),
      cacheScope: 'private',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'mcp-gateway' } },
    });
  });

  test.each(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list'])(
    '%s carries resultType, ttlMs and cacheScope',
    async (method) => {
      const res = await post(url, modernHeaders(method), {
        jsonrpc: '2.0',
        id: method,
        method,
        params: { _meta: meta() },
      });
      expect(res.status).toBe(200);
      expect(res.body.result).toMatchObject({
        resultType: 'complete',
        ttlMs: expect.any(Number),
        cacheScope: expect.stringMatching(/^(public|private)$/),
      });
    },
  );

  test('tools/list names the tools target___tool', async () => {
    const res = await post(url, modernHeaders('tools/list'), {
      jsonrpc: '2.0',
      id: 'tl',
      method: 'tools/list',
      params: { _meta: meta() },
    });
    expect(res.body.result.tools.map((t: Json) => t.name)).toEqual(
      expect.arrayContaining(['modern___echo', 'modern___use_aws']),
    );
  });

  test('a posted JSON-RPC response with a 2026-07-28 header goes to the 2025 path (no session → 400)', async () => {
    const res = await post(url, modernHeaders('tools/call'), { jsonrpc: '2.0', id: 'x', result: {} });
    expect(res.status).toBe(400);
  });

  test('a 2026-07-28 notification is accepted with 202', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: modernHeaders('notifications/whatever'),
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/whatever', params: { _meta: meta() } }),
      signal: AbortSignal.timeout(5000),
    });
    expect(res.status).toBe(202);
  });
});

describe('agreement with the official SDK classifier', () => {
  // The SDK's own ladder (classifyInboundRequest) must agree on the code for every refusal it decides at the edge.
  test.each([
    ['no _meta', modernHeaders('tools/call', 'modern___echo'), echoBody(1, null), -32602],
    [
      'header/body version mismatch',
      { ...modernHeaders('tools/call', 'modern___echo'), 'MCP-Protocol-Version': '2027-01-01' },
      echoBody(1),
      -32020,
    ],
    ['Mcp-Method mismatch', modernHeaders('prompts/get', 'modern___echo'), echoBody(1), -32020],
  ])('%s', async (_label, headers, body, code) => {
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    const sdk = classifyInboundRequest({
      httpMethod: 'POST',
      protocolVersionHeader: lower['mcp-protocol-version'],
      mcpMethodHeader: lower['mcp-method'],
      mcpNameHeader: lower['mcp-name'],
      body,
    });
    expect(sdk.kind).toBe('reject');
    expect(sdk.kind === 'reject' && sdk.code).toBe(code);
    const res = await post(url, headers, body);
    expect(res.body.error.code).toBe(code);
  });
});
