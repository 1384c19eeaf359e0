import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import type { GatewayKind } from '../support/gateways';
import { listen } from '../support/loopback';
import { callAndAnswer, eventually, initSession, type Json, post, readMessage } from '../support/mcp-http';
import { startPushTarget } from '../support/push-target';
import { withGateway } from '../support/with-gateway';

/**
 * A target that never answers must not stall the others (the lifecycle page: a sender SHOULD
 * establish timeouts for the requests it sends). Each target's requests have a timeout
 * (`targetLimits` / `targets[].limits`): a list leaves the late target out as it leaves out a failing
 * one, and bare names resolve with the targets that answered. The per-target timeout here is 300 ms;
 * the client's own patience (10 s) is far above it and far below what the hung target would take (forever).
 */
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];
const TIMEOUT_MS = 300;
const CLIENT_PATIENCE_MS = 10_000;
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** Accepts every request, reads it, and never answers (the connection stays open until closed). */
async function startHangingTarget(): Promise<{ url: string; close(): Promise<void>; requests: string[] }> {
  const requests: string[] = [];
  const held: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      requests.push(raw ? (JSON.parse(raw).method ?? 'response') : req.method);
      held.push(res);
    });
  });
  const started = await listen(server);
  return { url: `${started.base}/mcp`, close: started.close, requests };
}

describe.each(kinds)('a target that never answers, through the %s', (kind) => {
  // The hung target's own limit is small; the others keep the default (10 s), so a busy machine cannot
  // make them late too.
  const gw = withGateway(
    (targets) => ({
      logLevel: 'SILENT',
      toolNamePrefix: 'always',
      targets: [
        { name: 'demo', url: targets.demo.url },
        { name: 'modern', url: targets.modern.url },
        { name: 'hung', url: targets.hung.url, limits: { requestTimeoutMs: TIMEOUT_MS } },
      ],
    }),
    {
      kind,
      targets: {
        demo: () => startDemoTarget(),
        modern: () => startModernDemoTarget(),
        hung: () => startHangingTarget(),
      },
    },
  );

  const patience = () => AbortSignal.timeout(CLIENT_PATIENCE_MS);
  const targetsOf = (tools: Json[]) => [...new Set(tools.map((tool) => String(tool.name).split('___')[0]))].sort();

  it('leaves it out of a 2025 tools/list and lists the other targets', async () => {
    const { headers } = await initSession(gw.url);
    const res = await post(gw.url, headers, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, patience());
    const body = await readMessage(res);
    expect(targetsOf(body.result.tools)).toEqual(['demo', 'modern']);
  });

  it('leaves it out of a 2026-07-28 tools/list and lists the other targets', async () => {
    const res = await post(
      gw.url,
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: META } },
      patience(),
    );
    const body = await readMessage(res);
    expect(targetsOf(body.result.tools)).toEqual(['demo', 'modern']);
  });

  it('still lists the other targets on the next list (the late target is asked again, not remembered)', async () => {
    const before = gw.targets.hung.requests.length;
    const { headers } = await initSession(gw.url);
    const body = await readMessage(
      await post(gw.url, headers, { jsonrpc: '2.0', id: 3, method: 'prompts/list' }, patience()),
    );
    expect(body.result.prompts.length).toBeGreaterThan(0);
    expect(gw.targets.hung.requests.length).toBeGreaterThan(before);
  });
});

describe('a bare tool name while one target never answers', () => {
  const gw = withGateway(
    (targets) => ({
      logLevel: 'SILENT',
      toolNamePrefix: 'never',
      targets: [
        { name: 'demo', url: targets.demo.url },
        { name: 'hung', url: targets.hung.url, limits: { requestTimeoutMs: TIMEOUT_MS } },
      ],
    }),
    { targets: { demo: () => startDemoTarget(), hung: () => startHangingTarget() } },
  );

  it('resolves to the target that listed it and runs the call', async () => {
    const { headers } = await initSession(gw.url);
    const res = await post(
      gw.url,
      headers,
      { jsonrpc: '2.0', id: 'bare', method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } },
      AbortSignal.timeout(CLIENT_PATIENCE_MS),
    );
    expect((await readMessage(res)).result.content[0].text).toBe('echo: hi');
  });
});

describe("a relayed call: its timeout is the target's silence, not the whole call", () => {
  const IDLE_MS = 300;
  const gw = withGateway(
    { logLevel: 'SILENT', targetLimits: { callIdleTimeoutMs: IDLE_MS } },
    { targets: { demo: () => startDemoTarget(), quiet: () => startQuietOnCallTarget() } },
  );

  it('fails a tools/call the target never answers with DependencyFailedException naming it, and cancels it there', async () => {
    const { headers } = await initSession(gw.url);
    const res = await post(
      gw.url,
      headers,
      { jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { name: 'quiet___wait', arguments: {} } },
      AbortSignal.timeout(CLIENT_PATIENCE_MS),
    );
    expect((await readMessage(res)).error).toMatchObject({
      code: -32603,
      message: expect.stringMatching(/target quiet: sent nothing for 300 ms during tools\/call/),
      data: { type: 'DependencyFailedException', target: 'quiet' },
    });
    await eventually(() => expect(gw.targets.quiet.cancelled).toContain('c.s.c'));
  });

  it('does not cut a call while the user takes longer than the timeout to answer its elicitation', async () => {
    const { headers } = await initSession(gw.url, { capabilities: { elicitation: { form: {} } } });
    const call = await callAndAnswer(
      gw.url,
      headers,
      { id: 'slow-human', params: { name: 'demo___confirm_action', arguments: { action: 'deploy' } } },
      async () => {
        // The user takes longer than the idle timeout to answer: until a call started now was cut by it.
        await idleTimeoutPassed(gw.url, headers, 'slow-human-measure');
        return { result: { action: 'accept', content: { confirm: true } } };
      },
      { signal: AbortSignal.timeout(CLIENT_PATIENCE_MS) },
    );
    expect(call.response.result.content[0].text).toBe('confirmed: deploy');
  });
});

describe("a relayed call whose target asks the user on the session's GET stream", () => {
  const IDLE_MS = 300;
  const gw = withGateway(
    { logLevel: 'SILENT', targetLimits: { callIdleTimeoutMs: IDLE_MS } },
    { targets: { push: () => startPushTarget(), quiet: () => startQuietOnCallTarget() } },
  );

  it("is not cut while the user takes longer than the timeout to answer (the call's own stream is silent)", async () => {
    const { headers } = await initSession(gw.url, { capabilities: { elicitation: { form: {} } } });
    const call = await callAndAnswer(
      gw.url,
      headers,
      { id: 'get-stream', params: { name: 'push___ask', arguments: {} } },
      async () => {
        // The user takes longer than the idle timeout to answer: until a call started now was cut by it.
        await idleTimeoutPassed(gw.url, headers, 'get-stream-measure');
        return { result: { action: 'accept', content: { ok: true } } };
      },
      { signal: AbortSignal.timeout(CLIENT_PATIENCE_MS) },
    );
    expect(call.messages[0]).toMatchObject({ method: 'elicitation/create' });
    expect(call.response.result.content[0].text).toBe('answered: accept {"ok":true}');
  });
});

/**
 * Resolves once the gateway cut a call to the quiet target for its silence. That call starts now, so
 * its idle timeout ran out no earlier than the same limit would have on a call the gateway last heard
 * from before now: both are Node timers of the gateway's process (targets/target-clock.ts, not
 * deps.clock, so there is no clock to move), and the earlier one fires first.
 */
async function idleTimeoutPassed(url: string, headers: Record<string, string>, id: string): Promise<void> {
  const res = await post(
    url,
    headers,
    { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'quiet___wait', arguments: {} } },
    AbortSignal.timeout(CLIENT_PATIENCE_MS),
  );
  expect((await readMessage(res)).error?.message).toMatch(/target quiet: sent nothing for \d+ ms during tools\/call/);
}

/**
 * A 2025 target (JSON responses) that answers the handshake and lists one tool, holds every
 * tools/call open without a byte, and records the ids of the requests it is told were cancelled.
 */
async function startQuietOnCallTarget(): Promise<{ url: string; close(): Promise<void>; cancelled: string[] }> {
  const cancelled: string[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : {};
      if (body.method === 'notifications/cancelled') cancelled.push(String(body.params.requestId));
      if (!('id' in body) || !body.method) return void res.writeHead(202).end();
      if (body.method === 'tools/call') return; // silent
      const result =
        body.method === 'initialize'
          ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'quiet', version: '0' } }
          : body.method === 'tools/list'
            ? { tools: [{ name: 'wait', inputSchema: { type: 'object' } }] }
            : {};
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'quiet-1' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result }));
    });
  });
  const started = await listen(server);
  return { url: `${started.base}/mcp`, close: started.close, cancelled };
}
