import { configureMetrics } from '../../lambda/observability/metrics';
import { type InProcessGateway, inProcessGateway } from '../support/in-process';
import { readMessage } from '../support/mcp-http';

/**
 * The transport rules of the gateway core, checked in-process (a web Request in, a Response out, the
 * in-memory session store): path, method, media type, body size and JSON-RPC shape come before any
 * era logic, and a 2025-era request needs a live session. No target is reached by any of these.
 */

let gateway: InProcessGateway;

beforeAll(() => {
  // The target is never called here: nothing listens on port 9.
  gateway = inProcessGateway({ targets: [{ name: 'never', url: 'http://127.0.0.1:9/mcp' }], maxBodyBytes: 1024 });
});

const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };

describe('path and method', () => {
  it.each(['/', '/mcp/', '/mcp/extra', '/sse', '/.well-known/oauth-protected-resource'])(
    'answers %s with 404 naming the endpoint',
    async (path) => {
      const res = await gateway.fetch(path, { method: 'POST', body: JSON.stringify(ping) });
      expect(res.status).toBe(404);
      const body = await res.json();
      expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
      expect(body.error.message).toContain('/mcp');
    },
  );

  it.each(['PUT', 'PATCH', 'OPTIONS'])('answers %s /mcp with 405 and Allow: GET, POST, DELETE', async (method) => {
    const res = await gateway.fetch('/mcp', { method, headers: { accept: 'text/event-stream' } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST, DELETE');
  });

  it('answers DELETE without a session id with 405 (DELETE ends a session, nothing else)', async () => {
    const res = await gateway.fetch('/mcp', { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST, DELETE');
  });

  it("answers GET without a session id with 400 (the standalone stream is a session's)", async () => {
    const res = await gateway.fetch('/mcp', { method: 'GET', headers: { accept: 'text/event-stream' } });
    expect(res.status).toBe(400);
  });

  it('answers GET that resumes a stream (Last-Event-ID) of an unknown session with 404, as any request of it', async () => {
    const res = await gateway.fetch('/mcp', {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'last-event-id': '1', 'mcp-session-id': 'x'.repeat(43) },
    });
    expect(res.status).toBe(404);
  });

  it('answers the GET for a standalone stream with 405 and Allow: POST, DELETE when the stream is off (clientStreamHoldSeconds 0)', async () => {
    const off = inProcessGateway({
      targets: [{ name: 'never', url: 'http://127.0.0.1:9/mcp' }],
      clientStreamHoldSeconds: 0,
    });
    const { headers } = await off.initSession();
    const res = await off.fetch('/mcp', { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST, DELETE');
  });
});

describe('the GatewayErrors metric', () => {
  /** The metric names of the EMF lines written while `fn` runs, with metrics on as in Lambda. */
  async function metricsOf(fn: () => Promise<unknown>): Promise<string[]> {
    configureMetrics({ enabled: true, namespace: 'Test' });
    const lines: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      await fn();
    } finally {
      spy.mockRestore();
      configureMetrics({});
    }
    return lines
      .flatMap((chunk) => chunk.split('\n'))
      .filter((line) => line.includes('"_aws"'))
      .flatMap((line) => JSON.parse(line)._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name));
  }

  it('does not count the 405 to the GET every SDK client sends for a standalone stream (where the stream is off)', async () => {
    // The stream is on by default (a session's GET is then held, not refused); turned off, it is the 405.
    const off = inProcessGateway({
      targets: [{ name: 'never', url: 'http://127.0.0.1:9/mcp' }],
      clientStreamHoldSeconds: 0,
    });
    const { headers } = await off.initSession();
    const names = await metricsOf(async () => {
      const res = await off.fetch('/mcp', { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } });
      expect(res.status).toBe(405);
    });
    expect(names).toEqual([]);
  });

  it('still counts a 405 to a method no MCP client sends (PUT)', async () => {
    const names = await metricsOf(async () => {
      expect((await gateway.fetch('/mcp', { method: 'PUT' })).status).toBe(405);
    });
    expect(names).toEqual(['GatewayErrors']);
  });
});

describe('media type and size', () => {
  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])(
    'refuses Content-Type %s with 415',
    async (contentType) => {
      const res = await gateway.post({ 'content-type': contentType }, ping);
      expect(res.status).toBe(415);
      expect((await res.json()).error.code).toBe(-32600);
    },
  );

  it.each(['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/vnd.mcp+json'])(
    'takes Content-Type %s (and goes on to the session check)',
    async (contentType) => {
      const res = await gateway.post({ 'content-type': contentType }, ping);
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toMatch(/Mcp-Session-Id header is required/);
    },
  );

  it('refuses a body over maxBodyBytes with 413, and takes one of exactly that size', async () => {
    const padded = (size: number) => {
      const body = JSON.stringify({ ...ping, params: { pad: '' } });
      return JSON.stringify({ ...ping, params: { pad: 'x'.repeat(size - body.length) } });
    };
    const over = await gateway.post({}, padded(1025));
    expect(over.status).toBe(413);
    expect((await over.json()).error.message).toContain('1024 bytes');
    const declared = await gateway.post({ 'content-length': '999999' }, ping);
    expect(declared.status).toBe(413);
    await declared.body?.cancel();
    const exact = await gateway.post({}, padded(1024));
    expect(exact.status).toBe(400); // past the size check: no session
    await exact.body?.cancel();
  });
});

describe('JSON-RPC shape', () => {
  it('answers malformed JSON with 400 and -32700, id null', async () => {
    const res = await gateway.post({}, '{"jsonrpc": "2.0", "id": 1,');
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
  });

  it.each([
    ['a batch', [ping]],
    ['an empty batch', []],
    ['a wrong version', { jsonrpc: '1.0', id: 1, method: 'ping' }],
    ['a number', 42],
    ['null', null],
    ['a method that is not a string', { jsonrpc: '2.0', id: 1, method: 7 }],
    ['an object id', { jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }],
    ['neither method nor result', { jsonrpc: '2.0', id: 1 }],
  ])('answers %s with 400 and -32600', async (_label, body) => {
    const res = await gateway.post({}, body);
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe(-32600);
  });
});

describe('2025-era sessions', () => {
  it('answers 400 without a session id, 404 for an unknown or malformed one, with the request id', async () => {
    const missing = await gateway.post({}, { ...ping, id: 'a' });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ id: 'a', error: { code: -32600 } });
    const unknown = await gateway.post({ 'mcp-session-id': 'A'.repeat(43) }, { ...ping, id: 'b' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ id: 'b', error: { code: -32600 } });
    const malformed = await gateway.post({ 'mcp-session-id': 'not a session id' }, ping);
    expect(malformed.status).toBe(404);
    expect((await readMessage(malformed)).error.message).toMatch(/Session not found/);
  });

  it('answers 404 after DELETE, and DELETE leaves nothing of the session in the store', async () => {
    const { headers, sessionId } = await gateway.initSession();
    expect((await gateway.store.loadSession(sessionId))?.session.id).toBe(sessionId);
    const deleted = await gateway.fetch('/mcp', { method: 'DELETE', headers });
    expect(deleted.status).toBe(200);
    expect(await gateway.store.loadSession(sessionId)).toBeUndefined();
    expect((await gateway.post(headers, ping)).status).toBe(404);
    const again = await gateway.fetch('/mcp', { method: 'DELETE', headers });
    expect(again.status).toBe(404);
  });

  it('answers a session of a store that is down with 503, Retry-After: 1, retryable; then serves again', async () => {
    const { headers } = await gateway.initSession();
    gateway.store.down = true;
    try {
      const res = await gateway.post(headers, ping);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect((await res.json()).error.data).toMatchObject({ type: 'ServiceUnavailable', retryable: true });
      const init = await gateway.post(
        {},
        { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {} } },
      );
      expect(init.status).toBe(503);
      await init.body?.cancel();
    } finally {
      gateway.store.down = false;
    }
    expect((await gateway.call(headers, 2, 'ping')).result).toEqual({});
  });

  it('answers an unknown method with -32601 and a notification with 202 and no body', async () => {
    const { headers } = await gateway.initSession();
    expect((await gateway.call(headers, 1, 'tools/frobnicate')).error.code).toBe(-32601);
    const res = await gateway.post(headers, { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
  });

  it('answers 400 to an MCP-Protocol-Version it does not serve', async () => {
    const { headers } = await gateway.initSession();
    const res = await gateway.post({ ...headers, 'mcp-protocol-version': '1999-01-01' }, ping);
    expect(res.status).toBe(400);
  });
});
