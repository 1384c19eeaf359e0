import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { type FaultProxy, failFirstAnswers, isAnswer, startFaultProxy } from '../support/fault-proxy';
import type { GatewayKind } from '../support/gateways';
import { eventually, initSession, type Json, post, sessionItems, sseEvents } from '../support/mcp-http';
import { type EarlierTargets, withGateway } from '../support/with-gateway';

/**
 * No answer lost: the client's answer to a target's elicitation is recorded for the instance holding
 * the call, which delivers it through a fault proxy that fails on purpose (and sends it again while the
 * target does not take it); a bridged round's answer is claimed, delivered, then settled — or
 * released. Whatever the
 * fault, the call completes or ends with a clear error within pendingRequestTimeoutSeconds + a few
 * seconds, and the table keeps nothing of it. Real parts: the demo target (official SDK) behind the
 * proxy, dynalite through the AWS SDK, the gateway as the local server and as the deployment bundle
 * in frozen-between-invocations environments.
 */
const ALL = { elicitation: { form: {} } };
const ACCEPT = { result: { action: 'accept', content: { confirm: true } } };
const PENDING_TIMEOUT_S = 3;
/**
 * The bridged rounds' timeout, which none of their tests waits out: the round must outlive a refused
 * delivery and the retry after it. With 3 s a loaded machine let it expire first (the second retry got
 * an error instead of the result).
 */
const BRIDGED_ROUND_TIMEOUT_S = 10;

type Target = DemoTarget & { proxy: FaultProxy };

/** The demo target with a fault proxy in front: the gateway's `demo` target is the proxy. */
const proxiedDemo = async (_: EarlierTargets): Promise<Target & { url: string }> => {
  const demo = await startDemoTarget();
  const proxy = await startFaultProxy(demo.url);
  const closeDemo = demo.close.bind(demo);
  return Object.assign(demo, {
    proxy,
    url: proxy.url,
    close: async () => {
      await proxy.close();
      await closeDemo();
    },
  });
};

interface Outcome {
  /** The final message on the call's stream. */
  response: Json;
  /** HTTP status and body of each answer POST. */
  answers: Array<{ status: number; body?: Json; retryAfter: string | null }>;
  elapsedMs: number;
}

/**
 * Calls use_aws (one form elicitation) and answers it `times` times (the first answer at once, each
 * later one after `retryAfterMs`, only if the earlier one was refused), then reads the call to its end.
 */
async function callAndAnswer(
  url: string,
  headers: Record<string, string>,
  id: string,
  options: { times?: number; retryAfterMs?: number; answer?: Json; beforeAnswer?: () => Promise<void> } = {},
): Promise<Outcome & { gatewayId: string }> {
  const started = Date.now();
  const res = await post(url, headers, {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'demo___use_aws', arguments: { command: id } },
  });
  const answers: Outcome['answers'] = [];
  let gatewayId = '';
  for await (const event of sseEvents(res)) {
    const message = event.message;
    if (!message) continue;
    if (message.method === 'elicitation/create') {
      gatewayId = message.id;
      await options.beforeAnswer?.();
      for (let attempt = 0; attempt < (options.times ?? 1); attempt++) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, options.retryAfterMs ?? 0));
        const answer = await post(url, headers, { jsonrpc: '2.0', id: message.id, ...(options.answer ?? ACCEPT) });
        const text = await answer.text();
        answers.push({
          status: answer.status,
          body: text ? JSON.parse(text) : undefined,
          retryAfter: answer.headers.get('retry-after'),
        });
        if (answer.status === 202) break;
      }
    } else if (message.id === id) {
      return { response: message, answers, elapsedMs: Date.now() - started, gatewayId };
    }
  }
  throw new Error('the call stream ended without a response');
}

const kinds: GatewayKind[] = ['local server', 'lambda runtime'];

describe.each(kinds)('answers delivered through faults, %s', (kind) => {
  const gw = withGateway(
    { logLevel: 'SILENT', pendingRequestTimeoutSeconds: PENDING_TIMEOUT_S },
    { kind, targets: { demo: proxiedDemo } },
  );
  const proxy = () => (gw.targets.demo as unknown as Target).proxy;
  afterEach(() => {
    proxy().rule = () => 'pass';
  });

  it.each([
    ['a 502', { status: 502 }],
    ['a reset before forwarding', 'reset'],
  ] as const)('retries a delivery that failed with %s: the call completes', async (_label, action) => {
    proxy().rule = failFirstAnswers(1, action);
    const { headers, sessionId } = await initSession(gw.url, { capabilities: ALL });
    const outcome = await callAndAnswer(gw.url, headers, `retry-${typeof action === 'string' ? action : 'status'}`);
    expect(outcome.answers.map((a) => a.status)).toEqual([202]);
    expect(outcome.response.result.content[0].text).toMatch(/^executed: /);
    // The proxy saw the answer twice: failed, then passed (the gateway sent it again).
    expect(
      proxy()
        .stats.answers.slice(-2)
        .map((a) => a.action),
    ).toEqual([typeof action === 'string' ? action : 'HTTP 502', 'pass']);
    await eventually(async () => expect(await pendingOf(gw.dynamodbEndpoint, sessionId)).toEqual([]));
  });

  it('sends again an answer the target did not take: 202 to the answer, and the holder delivers it once the target is back', async () => {
    let failing = true;
    proxy().rule = (request) => (failing && isAnswer(request.body) ? { status: 503 } : 'pass');
    const { headers } = await initSession(gw.url, { capabilities: ALL });
    const before = proxy().stats.answers.length;
    const call = callAndAnswer(gw.url, headers, 'released');
    // The holder's first delivery fails all its attempts; it sends the answer again (after 1 s) until the target takes it.
    await eventually(() => expect(proxy().stats.answers.length - before).toBeGreaterThanOrEqual(3), 10_000);
    failing = false;
    const outcome = await call;
    expect(outcome.answers.map((a) => a.status)).toEqual([202]);
    expect(outcome.response.result.content[0].text).toBe('executed: released');
  });

  it('ends the call with -32001 at the pending timeout when the answer never arrives and the client does not retry', async () => {
    proxy().rule = (request) => (isAnswer(request.body) ? 'reset' : 'pass');
    const { headers, sessionId } = await initSession(gw.url, { capabilities: ALL });
    const outcome = await callAndAnswer(gw.url, headers, 'never');
    expect(outcome.answers.map((a) => a.status)).toEqual([202]);
    expect(outcome.response.error).toMatchObject({ code: -32001, data: { retryable: true } });
    await eventually(async () => expect(await pendingOf(gw.dynamodbEndpoint, sessionId)).toEqual([]));
    await eventually(() =>
      expect((gw.targets.demo as unknown as Target).stats().cancelledRequestIds).toContain('c.s.never'),
    );
  });

  it('ends the call at once when the target refuses the answer (4xx): 202 to the answer, -32001 on the call', async () => {
    proxy().rule = (request) => (isAnswer(request.body) ? { status: 400 } : 'pass');
    const { headers, sessionId } = await initSession(gw.url, { capabilities: ALL });
    const outcome = await callAndAnswer(gw.url, headers, 'refused');
    expect(outcome.answers.map((a) => a.status)).toEqual([202]);
    // The holder delivered it and ends the call itself: "could not be delivered", not the pending timeout's end.
    expect(outcome.response.error).toMatchObject({
      code: -32001,
      message: expect.stringMatching(/could not be delivered/),
    });
    await eventually(async () => expect(await pendingOf(gw.dynamodbEndpoint, sessionId)).toEqual([]));
  });

  if (kind === 'local server') {
    // One process: the connection pooled by the call's own traffic is the one the answer reuses. (In
    // --lambda mode the answer is taken by another environment; test/lambda-runtime/gateway.test.ts
    // shows a pooled connection dropped during a freeze.)
    it('delivers over a pooled keep-alive connection the network forgot (reset when reused): sent again once', async () => {
      const { headers } = await initSession(gw.url, { capabilities: ALL });
      const resetsBefore = proxy().stats.staleResets;
      const outcome = await callAndAnswer(gw.url, headers, 'stale', {
        beforeAnswer: async () => {
          // A call that ends puts its connection back in the gateway's pool (the elicited call's own
          // connection is busy streaming, and the session's GET stream holds another).
          const echo = await post(gw.url, headers, {
            jsonrpc: '2.0',
            id: 'pool',
            method: 'tools/call',
            params: { name: 'demo___echo', arguments: { text: 'p' } },
          });
          await echo.text();
          // From now on the connections idle now are dead, as behind a NAT that forgot them.
          proxy().forgetIdleConnections();
        },
      });
      expect(outcome.answers.map((a) => a.status)).toEqual([202]);
      expect(outcome.response.result.content[0].text).toBe('executed: stale');
      expect(proxy().stats.staleResets).toBeGreaterThan(resetsBefore);
    });
  }
});

/** The pending records (P#…) left in a session's partition. */
async function pendingOf(endpoint: string, sessionId: string): Promise<Json[]> {
  return (await sessionItems(endpoint, sessionId)).filter((item) => String(item.sk).startsWith('P#'));
}

/**
 * The same for a 2026-07-28 client whose 2025-only target asks for input (bridged rounds,
 * modern/bridge.ts continueBridge): the retry carrying the answer claims, delivers, settles — or
 * releases, so the same retry sent again is delivered.
 */
describe('bridged 2026-07-28 rounds delivered through faults (local server)', () => {
  const gw = withGateway(
    (targets) => ({
      logLevel: 'SILENT',
      pendingRequestTimeoutSeconds: BRIDGED_ROUND_TIMEOUT_S,
      targets: [{ name: 'demo', url: targets.demo.url, era: 'legacy' }],
    }),
    { targets: { demo: proxiedDemo } },
  );
  const proxy = () => (gw.targets.demo as unknown as Target).proxy;
  afterEach(() => {
    proxy().rule = () => 'pass';
  });
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': ALL,
  };
  /** A 2026-07-28 tools/call of use_aws; its first message (a held round-1 stream stays open: we leave it). */
  const call = async (id: string, extra: Json = {}): Promise<{ status: number; message: Json }> => {
    const res = await post(
      gw.url,
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'demo___use_aws' },
      {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'demo___use_aws', arguments: { command: 'bridged' }, ...extra, _meta: meta },
      },
      AbortSignal.timeout(15_000),
    );
    for await (const event of sseEvents(res)) if (event.message) return { status: res.status, message: event.message };
    throw new Error('no message');
  };
  const retry = (round: Json, id: string) => {
    const [key] = Object.keys(round.result.inputRequests);
    return call(id, {
      inputResponses: { [key!]: { action: 'accept', content: { confirm: true } } },
      requestState: round.result.requestState,
    });
  };

  it('retries a delivery that failed once (502): the retry completes the call', async () => {
    proxy().rule = failFirstAnswers(1, { status: 502 });
    const { message: round } = await call('b1');
    expect(round.result.resultType).toBe('input_required');
    const done = await retry(round, 'b2');
    // The whole message: an error instead of the result shows which.
    expect(done.message).toMatchObject({
      result: { resultType: 'complete', content: [{ text: 'executed: bridged' }] },
    });
  }, 40_000);

  it('releases an answer the target never got: 502 retryable, and the same retry sent again completes the call', async () => {
    let failing = true;
    proxy().rule = (request) => (failing && isAnswer(request.body) ? 'reset' : 'pass');
    const { message: round } = await call('b3');
    const refused = await retry(round, 'b4');
    expect(refused.status).toBe(502);
    expect(refused.message.error).toMatchObject({
      code: -32603,
      data: { type: 'DependencyFailedException', retryable: true },
    });
    failing = false;
    const done = await retry(round, 'b5');
    expect(done.message).toMatchObject({
      result: { resultType: 'complete', content: [{ text: 'executed: bridged' }] },
    });
  }, 40_000);
});
