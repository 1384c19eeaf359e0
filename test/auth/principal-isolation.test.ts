import { startDemoTarget } from '../../examples/targets/demo-target';
import { type ModernDemoTarget, startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import type { GatewayKind } from '../support/gateways';
import { callAndAnswer, initSession, type Json, post, readMessage } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';
import { AUDIENCE, CLIENT, startIssuer, type TestIssuer } from './support';

/**
 * The principal (`<iss>#<sub>`) owns what it creates: another user presenting a
 * session id gets 404, answering another user's pending request gets -32600, and a sealed 2026-07-28
 * requestState minted for one user is refused for another. Through the local server and the Lambda handler.
 */

jest.setTimeout(30_000);

const MODERN = '2026-07-28';
const STATE_KEY = 'auth-test-request-state-key-0123456789abcdefghij';

function modernMeta(): Json {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'auth-test', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  };
}

/** A 2026-07-28 tools/call with the mirrored headers and the caller's token. */
async function modernCall(
  url: string,
  token: string,
  params: Json,
  id: string | number = 1,
): Promise<{ status: number; body: Json }> {
  const res = await post(
    url,
    {
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': MODERN,
      'mcp-method': 'tools/call',
      'mcp-name': params.name,
    },
    { jsonrpc: '2.0', id, method: 'tools/call', params: { ...params, _meta: modernMeta() } },
  );
  return { status: res.status, body: await readMessage(res) };
}

let issuer: TestIssuer;

beforeAll(async () => {
  issuer = await startIssuer();
});
afterAll(async () => {
  await issuer?.close();
});

// The function-URL handler runs in the Lambda runtime (the real one, locally); in-process alone it would add nothing.
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];

describe.each(kinds)('what a principal creates is its own, through the %s', (kind) => {
  const gw = withGateway(
    (targets) => ({
      targets: [
        { name: 'demo', url: targets.demo.url, era: 'legacy' },
        { name: 'modern', url: targets.modern.url, era: 'modern' },
      ],
      auth: { type: 'jwt', discoveryUrl: issuer.discoveryUrl, allowedAudiences: [AUDIENCE], allowedClients: [CLIENT] },
      requestStateKeys: { current: STATE_KEY },
      logLevel: 'SILENT',
    }),
    { kind, targets: { demo: () => startDemoTarget(), modern: () => startModernDemoTarget() } },
  );
  let modern: ModernDemoTarget;
  let url: string;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    url = gw.url;
    modern = gw.targets.modern;
    alice = await issuer.sign({ sub: 'alice' });
    bob = await issuer.sign({ sub: 'bob' });
  });

  const as = (token: string) => ({ authorization: `Bearer ${token}` });

  test("another user's session id → 404, for requests and DELETE; the owner still uses it", async () => {
    const a = await initSession(url, { headers: as(alice) });
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    const foreign = await post(url, { ...a.headers, ...as(bob) }, list);
    expect(foreign.status).toBe(404);
    expect((await readMessage(foreign)).error.message).toMatch(/Session not found/);
    const del = await fetch(url, { method: 'DELETE', headers: { ...a.headers, ...as(bob) } });
    expect(del.status).toBe(404);
    await del.body?.cancel();
    const own = await post(url, a.headers, list);
    expect(own.status).toBe(200);
    expect((await readMessage(own)).result.tools.map((t: Json) => t.name)).toContain('demo___use_aws');
    // The same user with a fresh token (same iss and sub) is the same principal.
    const again = await post(url, { ...a.headers, ...as(await issuer.sign({ sub: 'alice' })) }, list);
    expect(again.status).toBe(200);
    await again.body?.cancel();
  });

  test("another user's pending answer: -32600 on their own session, 404 on the owner's; the owner's answer still lands", async () => {
    const capabilities = { elicitation: { form: {} } };
    const a = await initSession(url, { headers: as(alice), capabilities });
    const b = await initSession(url, { headers: as(bob), capabilities });
    const attempts: Array<{ status: number; body: Json }> = [];
    const call = await callAndAnswer(
      url,
      a.headers,
      { id: 'a-call', params: { name: 'demo___use_aws', arguments: { command: 'aws s3 ls' } } },
      async (request) => {
        expect(request.method).toBe('elicitation/create');
        const answer = { jsonrpc: '2.0', id: request.id, result: { action: 'accept', content: { confirm: false } } };
        // Bob answers Alice's gateway id on his own session…
        const onOwn = await post(url, b.headers, answer);
        attempts.push({ status: onOwn.status, body: await readMessage(onOwn) });
        // …and on Alice's session id.
        const onHers = await post(url, { ...a.headers, ...as(bob) }, answer);
        attempts.push({ status: onHers.status, body: await readMessage(onHers) });
        return { result: { action: 'accept', content: { confirm: true } } };
      },
    );
    expect(attempts[0].status).toBe(400);
    expect(attempts[0].body.error.code).toBe(-32600);
    expect(attempts[1].status).toBe(404);
    expect(call.answerStatuses).toEqual([202]);
    expect(call.response.result.content[0].text).toBe('executed: aws s3 ls');
  });

  test('a stateless call with a valid token works; without one it is refused', async () => {
    const ok = await modernCall(url, alice, { name: 'modern___echo', arguments: { text: 'hi' } });
    expect(ok.status).toBe(200);
    expect(ok.body.result.content[0].text).toBe('echo: hi');
    const res = await post(
      url,
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'modern___echo' },
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'modern___echo', arguments: { text: 'hi' }, _meta: modernMeta() },
      },
    );
    expect(res.status).toBe(401);
    await res.body?.cancel();
  });

  test('a requestState minted for one user is refused for another (-32602), and still works for its owner', async () => {
    const params = { name: 'modern___use_aws', arguments: { command: 'aws s3 ls' } };
    const first = await modernCall(url, alice, params, 'r1');
    expect(first.body.result.resultType).toBe('input_required');
    const retry = {
      ...params,
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
      requestState: first.body.result.requestState,
    };
    const calls = modern.stats().calls.length;
    const stolen = await modernCall(url, bob, retry, 'r2');
    expect(stolen.status).toBe(400);
    expect(stolen.body.error.code).toBe(-32602);
    expect(modern.stats().calls.length).toBe(calls); // refused before the target
    const own = await modernCall(url, alice, retry, 'r3');
    expect(own.body.result.content[0].text).toBe('executed: aws s3 ls');
  });
});
