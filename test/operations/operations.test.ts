import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { startLocalGateway } from '../../dev/local-gateway';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { createGateway } from '../../lambda/app/gateway';
import { withRequestKeys } from '../../lambda/observability/logger';
import { capturingLogger } from '../auth/support';
import { meta, modernHeaders, post as modernPost } from '../modern/helpers';
import { initSession, type Json, eventually as passes, post, readMessage } from '../support/mcp-http';
import { startWireRecorder, type WireRecorder } from '../support/wire-recorder';
import { withGateway } from '../support/with-gateway';

/**
 * Operations through a running local gateway with real targets (the 2025 and 2026-07-28 demo
 * targets behind wire recorders, so what the gateway sent is checked on the wire): the access log,
 * W3C trace context, /health, CORS and tool filtering.
 */

const ORIGIN = 'http://localhost:6274';
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';

/** A URL on which nothing listens (a port just released). */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/mcp`;
}

type Line = { level: string; message: string; fields: Json };
const log = capturingLogger();
/** Every captured line, its extra attributes merged (as Powertools merges them). */
function lines(): Line[] {
  return log.lines.map((raw) => {
    const { level, message, extra } = JSON.parse(raw) as { level: string; message: string; extra: Json[] };
    return { level, message, fields: Object.assign({}, ...extra) };
  });
}
const accessLines = () => lines().filter((line) => line.message === 'mcp request');

async function eventually<T>(probe: () => T | undefined, what: string): Promise<T> {
  let value: T | undefined;
  await passes(() => {
    value = probe();
    expect({ [what]: value !== undefined }).toEqual({ [what]: true });
  });
  return value as T;
}

const gw = withGateway(
  (t) => ({
    logLevel: 'DEBUG',
    cors: { allowedOrigins: [ORIGIN] },
    targets: [
      { name: 'demo', url: t.demo.url, tools: { exclude: ['fail', 'request_*'] } },
      { name: 'modern', url: t.modern.url, tools: { include: ['echo', 'confirm_*', 'fail'], exclude: ['fail'] } },
      { name: 'down', url: t.down.url, era: 'legacy', tools: { exclude: ['hidden'] } },
    ],
  }),
  {
    targets: {
      demoTarget: () => startDemoTarget(),
      modernTarget: () => startModernDemoTarget(),
      demo: (earlier: Record<string, { url: string }>) => startWireRecorder(earlier.demoTarget!.url),
      modern: (earlier: Record<string, { url: string }>) => startWireRecorder(earlier.modernTarget!.url),
      down: async () => ({ url: await deadUrl(), close: async () => undefined }),
    },
    localServer: { logger: withRequestKeys(log) },
  },
);
const demoWire = () => gw.targets.demo as WireRecorder;
const modernWire = () => gw.targets.modern as WireRecorder;

beforeEach(() => log.lines.splice(0));

async function call(
  headers: Record<string, string>,
  name: string,
  args: Json = {},
  extra: Record<string, string> = {},
) {
  const res = await post(
    gw.url,
    { ...headers, ...extra },
    {
      jsonrpc: '2.0',
      id: name,
      method: 'tools/call',
      params: { name, arguments: args },
    },
  );
  return { status: res.status, message: await readMessage(res) };
}

async function modern(method: string, params: Json, extra: Record<string, string> = {}) {
  const name = method === 'tools/call' ? params.name : undefined;
  return modernPost(
    gw.url,
    { ...modernHeaders(method, name), ...extra },
    {
      jsonrpc: '2.0',
      id: 1,
      method,
      params: { ...params, _meta: meta({ elicitation: { form: {} } }) },
    },
  );
}

describe('access log', () => {
  test('one INFO line per tools/call with who, what, where and how it ended; never the arguments or result', async () => {
    const session = await initSession(gw.url);
    log.lines.splice(0);
    const { message } = await call(session.headers, 'demo___echo', { text: 'top-secret-argument' });
    expect(message.result.content[0].text).toBe('echo: top-secret-argument');
    const [line, ...more] = await eventually(
      () => (accessLines().length ? accessLines() : undefined),
      'the access line',
    );
    expect(more).toEqual([]);
    expect(line?.level).toBe('INFO');
    expect(line?.fields).toEqual({
      requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
      principal: 'anonymous',
      sessionId: session.sessionId,
      era: 'legacy',
      httpMethod: 'POST',
      kind: 'request',
      method: 'tools/call',
      target: 'demo',
      tool: 'echo',
      status: 200,
      inputRounds: 0,
      durationMs: expect.any(Number),
      outcome: 'complete',
    });
    expect(log.text()).not.toContain('top-secret-argument');
  });

  test('a client that leaves a stream mid-call: the line says cancelled, with the input request it was sent', async () => {
    const session = await initSession(gw.url, { capabilities: { elicitation: { form: {} } } });
    log.lines.splice(0);
    const abort = new AbortController();
    const res = await post(
      gw.url,
      session.headers,
      {
        jsonrpc: '2.0',
        id: 'left',
        method: 'tools/call',
        params: { name: 'demo___use_aws', arguments: { command: 'ls' } },
      },
      abort.signal,
    );
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    // The 2025-11-25 stream opens with its priming event; the question follows.
    let received = '';
    while (!received.includes('elicitation/create')) {
      const { done, value } = await reader.read();
      if (done) break;
      received += new TextDecoder().decode(value);
    }
    expect(received).toContain('elicitation/create');
    abort.abort();
    const line = await eventually(() => accessLines()[0], 'the access line');
    expect(line.fields).toMatchObject({ method: 'tools/call', tool: 'use_aws', inputRounds: 1, outcome: 'cancelled' });
  });

  test('a refused call names its error code; a 2026-07-28 input_required round counts its input requests', async () => {
    const session = await initSession(gw.url);
    log.lines.splice(0);
    await call(session.headers, 'demo___nope');
    const refused = await eventually(() => accessLines()[0], 'the refused call');
    expect(refused.fields).toMatchObject({ method: 'tools/call', status: 200, rpcErrorCode: -32602 });
    expect(refused.fields.tool).toBeUndefined();

    log.lines.splice(0);
    const round = await modern('tools/call', { name: 'modern___confirm_stateless', arguments: { action: 'deploy' } });
    expect(round.body.result.resultType).toBe('input_required');
    const line = await eventually(() => accessLines()[0], 'the 2026-07-28 line');
    expect(line.fields).toMatchObject({
      era: 'modern',
      method: 'tools/call',
      target: 'modern',
      tool: 'confirm_stateless',
      status: 200,
      inputRounds: Object.keys(round.body.result.inputRequests).length,
    });
    expect(line.fields.sessionId).toBeUndefined();
    expect(line.fields.rpcErrorCode).toBeUndefined();
  });

  test('unauthenticated and malformed requests are logged too, with their HTTP status', async () => {
    const res = await post(gw.url, {}, '{not json');
    expect(res.status).toBe(400);
    const line = await eventually(() => accessLines()[0], 'the parse error');
    expect(line.fields).toMatchObject({ status: 400, rpcErrorCode: -32700, httpMethod: 'POST' });
    expect(line.fields.method).toBeUndefined();
  });

  test('accessLog: false writes none', async () => {
    const quiet = capturingLogger();
    const other = await startLocalGateway({
      port: 0,
      demo: false,
      startupReport: false,
      dynamodbEndpoint: gw.dynamodbEndpoint,
      logger: quiet,
      config: { ...gw.config, accessLog: false },
    });
    try {
      const session = await initSession(other.url);
      const res = await post(other.url, session.headers, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'demo___echo', arguments: { text: 'x' } },
      });
      expect((await readMessage(res)).result).toBeDefined();
      expect(quiet.lines.filter((raw) => raw.includes('"mcp request"'))).toEqual([]);
    } finally {
      await other.close();
    }
  });
});

describe('W3C trace context', () => {
  test('a client traceparent reaches a 2025 target unchanged and is on every log line of the request', async () => {
    const session = await initSession(gw.url);
    log.lines.splice(0);
    const before = demoWire().posts('tools/call').length;
    await call(session.headers, 'demo___echo', { text: 'traced' }, { traceparent: TRACEPARENT, tracestate: 'a=1' });
    const sent = demoWire().posts('tools/call').slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.headers.traceparent).toBe(TRACEPARENT);
    expect(sent[0]?.headers.tracestate).toBe('a=1');
    await eventually(() => accessLines()[0], 'the access line');
    const requestLines = lines().filter((line) => line.fields.requestId !== undefined);
    expect(requestLines.length).toBeGreaterThan(1); // DEBUG lines of the relay, and the access line
    for (const line of requestLines) expect(line.fields.traceId).toBe(TRACE_ID);
  });

  test('a 2026-07-28 target gets it as headers and as the _meta keys traceparent/tracestate', async () => {
    const before = modernWire().posts('tools/call').length;
    const res = await modern(
      'tools/call',
      { name: 'modern___echo', arguments: { text: 'hi' } },
      { traceparent: TRACEPARENT, tracestate: 'vendor=x' },
    );
    expect(res.body.result.content[0].text).toContain('hi');
    const [sent] = modernWire().posts('tools/call').slice(before);
    expect(sent?.headers.traceparent).toBe(TRACEPARENT);
    expect(sent?.body.params._meta).toMatchObject({ traceparent: TRACEPARENT, tracestate: 'vendor=x' });
  });

  test('without one (or with an invalid one) the gateway starts a sampled trace and logs its id', async () => {
    const session = await initSession(gw.url);
    log.lines.splice(0);
    const before = demoWire().posts('tools/call').length;
    await call(session.headers, 'demo___echo', { text: 'x' }, { traceparent: '00-not-a-trace-01' });
    const [sent] = demoWire().posts('tools/call').slice(before);
    const started = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(sent?.headers.traceparent));
    expect(started).not.toBeNull();
    const line = await eventually(() => accessLines()[0], 'the access line');
    expect(line.fields.traceId).toBe(started?.[1]);
    expect(sent?.headers.tracestate).toBeUndefined();
  });
});

describe('GET /health', () => {
  test('without a token: 200 {"status":"ok"} and nothing about the targets', async () => {
    const res = await fetch(new URL('/health', gw.url));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('{"status":"ok"}');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  test('?targets=1: name, era, reachable, latency, tools and the last error of each target', async () => {
    log.lines.splice(0);
    const res = await fetch(new URL('/health?targets=1', gw.url));
    expect(res.status).toBe(200);
    const body = (await res.json()) as Json;
    expect(body.status).toBe('degraded');
    const byName = Object.fromEntries((body.targets as Json[]).map((t) => [t.name, t]));
    expect(byName.demo).toEqual({
      name: 'demo',
      era: 'legacy',
      reachable: true,
      latencyMs: expect.any(Number),
      tools: expect.any(Number),
      lastError: null,
    });
    expect(byName.modern).toMatchObject({ era: 'modern', reachable: true, tools: 2, lastError: null });
    expect(byName.down).toMatchObject({ era: 'legacy', reachable: false, latencyMs: null, tools: null });
    expect(byName.down.lastError).toEqual({ message: expect.stringContaining('down'), at: expect.any(String) });
    // The unlistable target is named in the log of the list that left it out.
    expect(
      lines().some((line) => line.message === 'target skipped in an aggregated list' && line.fields.target === 'down'),
    ).toBe(true);
    // A probe is not an MCP request: no access line.
    expect(accessLines()).toEqual([]);
  });
});

describe('CORS (cors.allowedOrigins)', () => {
  test('a preflight from an allowed origin is answered 204 with the MCP request headers allowed', async () => {
    const res = await fetch(gw.url, {
      method: 'OPTIONS',
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, mcp-session-id, mcp-protocol-version, authorization',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(res.headers.get('access-control-allow-methods')).toBe('POST, GET, DELETE');
    const allowed = (res.headers.get('access-control-allow-headers') ?? '').split(', ');
    for (const header of ['content-type', 'mcp-session-id', 'mcp-protocol-version', 'authorization', 'traceparent'])
      expect(allowed).toContain(header);
    expect(res.headers.get('vary')).toMatch(/origin/i);
  });

  test('a POST from that origin works and may read the session id', async () => {
    const session = await initSession(gw.url, { headers: { origin: ORIGIN } });
    const res = await post(gw.url, { ...session.headers, origin: ORIGIN }, { jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(res.headers.get('access-control-expose-headers')).toBe('mcp-session-id');
    expect((await readMessage(res)).result).toEqual({});
  });

  test('another origin: no preflight answer, and locally the Origin check still refuses it', async () => {
    const preflight = await fetch(gw.url, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:9999', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const res = await post(gw.url, { origin: 'http://evil.example' }, { jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(res.status).toBe(403);
  });

  test('deployed (cors: platform) the function adds no CORS headers and answers no preflight', async () => {
    const local = await startLocalGateway({
      port: 0,
      demo: false,
      startupReport: false,
      dynamodbEndpoint: gw.dynamodbEndpoint,
      logger: capturingLogger(),
      config: { cors: { allowedOrigins: [ORIGIN] } },
    });
    try {
      const handler = createGateway(local.deps, { cors: 'platform' });
      const exchange = { signal: new AbortController().signal, deadline: Date.now() + 10_000 };
      const preflight = await handler(
        new Request('http://127.0.0.1/mcp', {
          method: 'OPTIONS',
          headers: { origin: ORIGIN, 'access-control-request-method': 'POST' },
        }),
        exchange,
      );
      expect(preflight.status).not.toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
      const health = await handler(new Request('http://127.0.0.1/health', { headers: { origin: ORIGIN } }), exchange);
      expect(health.status).toBe(200);
      expect(health.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await local.close();
    }
  });
});

describe('tool filtering (targets[].tools)', () => {
  test('2025 session: filtered tools are absent and refused as unknown, by prefixed and bare name', async () => {
    const session = await initSession(gw.url);
    const list = await readMessage(
      await post(gw.url, session.headers, { jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    );
    const names = (list.result.tools as Json[]).map((t) => t.name as string);
    expect(names).toContain('demo___echo');
    expect(names).not.toContain('demo___fail');
    expect(names.filter((n) => n.startsWith('demo___request_'))).toEqual([]);
    expect(names.filter((n) => n.startsWith('modern___')).sort()).toEqual([
      'modern___confirm_stateless',
      'modern___echo',
    ]);
    const before = demoWire().posts('tools/call').length;
    for (const name of ['demo___fail', 'demo___request_anyway', 'fail', 'modern___fail', 'modern___sample']) {
      const { message } = await call(session.headers, name);
      // A suggestion may follow ("did you mean …"), never of a filtered tool.
      expect({ name, error: message.error }).toEqual({
        name,
        error: expect.objectContaining({ code: -32602, message: expect.stringMatching(/^Unknown tool "/) }),
      });
      expect(message.error.message).toContain(`"${name}"`);
      for (const candidate of message.error.data?.candidates ?? []) expect(names).toContain(candidate);
    }
    expect(demoWire().posts('tools/call').slice(before)).toEqual([]); // nothing reached the target
  });

  test('2026-07-28 requests: absent from tools/list, refused as unknown, for 2026 and 2025 targets alike', async () => {
    const list = await modern('tools/list', {});
    const names = (list.body.result.tools as Json[]).map((t) => t.name as string);
    expect(names).not.toContain('modern___fail');
    expect(names).not.toContain('demo___fail');
    expect(names).toContain('modern___echo');
    for (const name of ['modern___fail', 'demo___fail']) {
      const res = await modern('tools/call', { name, arguments: {} });
      expect({ name, error: res.body.error }).toEqual({
        name,
        error: expect.objectContaining({ code: -32602, message: `Unknown tool "${name}"` }),
      });
    }
  });

  test('a target that cannot be listed: its filtered tool is still unknown, its other tools are routed', async () => {
    const session = await initSession(gw.url);
    const hidden = await call(session.headers, 'down___hidden');
    expect(hidden.message.error).toMatchObject({ code: -32602, message: 'Unknown tool "down___hidden"' });
    const routed = await call(session.headers, 'down___other');
    expect(routed.message.error).toMatchObject({ code: -32603, data: { type: 'DependencyFailedException' } });
  });
});
