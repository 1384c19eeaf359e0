import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';
import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process';
import { eventually, initSession, type Json, post, sessionItems, sseEvents } from '../support/mcp-http';

/**
 * Every failure is told where an instance is the fault. A gateway instance that
 * holds a call and dies (SIGKILL) stops its pending requests being answered once its lease lapses:
 * another instance refuses the answer instead of delivering it to a target whose result nobody would
 * receive. A graceful shutdown (SIGTERM of `npm start`, of `npm start -- --lambda`) first cancels the
 * calls it holds at their targets, tells their clients (-32001, retryable) and removes their records.
 */
const ALL = { elicitation: { form: {} } };
const LEASE_MS = 1500;

let dynamo: Awaited<ReturnType<typeof startEmbeddedDynamo>>;
let demo: DemoTarget;
let proxy: FaultProxy;
beforeAll(async () => {
  dynamo = await startEmbeddedDynamo();
  demo = await startDemoTarget();
  proxy = await startFaultProxy(demo.url); // counts the answers that reach the target
});
afterAll(async () => {
  await proxy?.close();
  await demo?.close();
  await dynamo?.close();
});

const config = () => ({ targets: [{ name: 'demo', url: proxy.url }], logLevel: 'SILENT' as const });

/** Starts use_aws through `url` and resolves once its elicitation arrived (the call is held there). */
async function holdCall(url: string, headers: Record<string, string>, id: string) {
  const res = await post(url, headers, {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'demo___use_aws', arguments: { command: id } },
  });
  const events = sseEvents(res);
  // Read by hand: leaving a for-await loop would close the stream (the client going away).
  for (let next = await events.next(); !next.done; next = await events.next()) {
    if (next.value.message?.method === 'elicitation/create') return { asked: next.value.message as Json, events };
  }
  throw new Error('no elicitation');
}

/** The rest of a held call's stream: its final message, or undefined when it ended without one. */
async function rest(events: AsyncGenerator<{ message?: Json }>): Promise<Json | undefined> {
  try {
    for await (const event of events) if (event.message && !event.message.method) return event.message;
  } catch {
    return undefined; // the connection was cut
  }
  return undefined;
}

const pendingOf = async (sessionId: string) =>
  (await sessionItems(dynamo.endpoint, sessionId)).filter((item) => String(item.sk).startsWith('P#'));

describe('an instance that dies while it holds a call', () => {
  let a: GatewayProcess;
  let b: GatewayProcess;
  beforeAll(async () => {
    const env = { GATEWAY_HOLDER_LEASE_MS: String(LEASE_MS) };
    [a, b] = await Promise.all([
      startGatewayProcess(config(), dynamo.endpoint, { env }),
      startGatewayProcess(config(), dynamo.endpoint, { env }),
    ]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([a?.stop('SIGKILL'), b?.stop()]);
  });

  it('has its pending request refused by another instance once its lease lapsed; nothing reaches the target', async () => {
    const { headers, sessionId } = await initSession(a.url, { capabilities: ALL });
    const { asked, events } = await holdCall(a.url, headers, 'orphan');
    expect(await a.stop('SIGKILL')).toBe('SIGKILL');
    expect(await rest(events)).toBeUndefined();
    // The lease ends where its record says (holderUntil, on the clock both processes read); A is gone,
    // so nothing renews it: once that time has passed, B finds the holder gone (answer-delivery.ts, holderGone).
    const [record] = await pendingOf(sessionId);
    const leaseEnd = Number(record?.holderUntil);
    expect(leaseEnd).toBeGreaterThan(0);
    await eventually(() => expect(Date.now()).toBeGreaterThan(leaseEnd), LEASE_MS + 1000);
    const answersBefore = proxy.stats.answers.length;
    const answer = await post(b.url, headers, {
      jsonrpc: '2.0',
      id: asked.id,
      result: { action: 'accept', content: { confirm: true } },
    });
    expect(answer.status).toBe(400);
    const body = await answer.json();
    expect(body.error).toMatchObject({ code: -32600, message: expect.stringMatching(/no longer held/) });
    expect(proxy.stats.answers.length).toBe(answersBefore);
    // Its record stays until its TTL (nobody is left to remove it), refused all the while.
    expect((await pendingOf(sessionId)).map((item) => item.status)).toEqual(['pending']);
  }, 30_000);

  it('is still answered through another instance while its lease is renewed (a long wait)', async () => {
    const { headers, sessionId } = await initSession(b.url, { capabilities: ALL });
    const { asked, events } = await holdCall(b.url, headers, 'renewed');
    // The answer comes later than the first lease: once that has ended, and the record shows the holder
    // renewed it (every third of it) past then.
    const [first] = await pendingOf(sessionId);
    const firstLeaseEnd = Number(first?.holderUntil);
    expect(firstLeaseEnd).toBeGreaterThan(0);
    await eventually(async () => {
      expect(Date.now()).toBeGreaterThan(firstLeaseEnd);
      const [now] = await pendingOf(sessionId);
      expect(Number(now?.holderUntil)).toBeGreaterThan(Date.now());
    }, LEASE_MS * 3);
    const answer = await post(b.url, headers, {
      jsonrpc: '2.0',
      id: asked.id,
      result: { action: 'accept', content: { confirm: true } },
    });
    expect(answer.status).toBe(202);
    expect((await rest(events))?.result.content[0].text).toBe('executed: renewed');
  }, 30_000);
});

describe.each([
  ['npm start', false],
  ['npm start -- --lambda', true],
] as const)('SIGTERM of %s while it holds a call', (_label, lambda) => {
  it('cancels the call at the target, tells the client -32001 (retryable) and removes its records, then exits 0', async () => {
    const gateway = await startGatewayProcess(config(), dynamo.endpoint, { lambda });
    try {
      const { headers, sessionId } = await initSession(gateway.url, { capabilities: ALL });
      const id = lambda ? 'term-lambda' : 'term-local';
      const { events } = await holdCall(gateway.url, headers, id);
      expect(await pendingOf(sessionId)).toHaveLength(1);
      const answersBefore = proxy.stats.answers.length;
      const exited = gateway.stop('SIGTERM');
      const final = await rest(events);
      expect(final).toMatchObject({
        id,
        error: { code: -32001, message: expect.stringMatching(/shutting down/), data: { retryable: true } },
      });
      expect(await exited).toBe(0);
      expect(await pendingOf(sessionId)).toEqual([]);
      await eventually(() => expect(demo.stats().cancelledRequestIds).toContain(`c.s.${id}`));
      expect(proxy.stats.answers.length).toBe(answersBefore);
    } finally {
      await gateway.stop('SIGKILL');
    }
  }, 60_000);
});
