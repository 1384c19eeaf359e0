import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';
import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { bridgedCall } from '../support/bridged-calls';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process';
import { initSession, type Json, post, sseEvents } from '../support/mcp-http';

/**
 * No answer reaches a target whose call has no live receiver: the instance that holds a call is killed
 * (SIGKILL) and, once its process is gone, the client's answer reaches another instance — well inside
 * the holder's 30 s lease. On the 2025 path the answer is recorded for the holder, which alone delivers it
 * (pending/recorded-answer.ts): 202, and nothing reaches the target (the client's call stream broke with
 * its holder). On the bridged 2026-07-28 path the holder does not acknowledge the retry's claim
 * (pending/holder-ack.ts): 502, retryable, and nothing reaches the target. Real parts: two `npm start` processes on
 * one dynalite, the demo target (official SDK) behind a proxy that counts the answers reaching it.
 */
const ALL = { elicitation: { form: {} } };
const CONFIRM = { action: 'accept', content: { confirm: true } };

let dynamo: Awaited<ReturnType<typeof startEmbeddedDynamo>>;
let counted: CountedDynamo;
let demo: DemoTarget;
let proxy: FaultProxy;
let a: GatewayProcess;
let b: GatewayProcess;

beforeAll(async () => {
  dynamo = await startEmbeddedDynamo();
  counted = await startCountedDynamo(dynamo.endpoint);
  demo = await startDemoTarget();
  proxy = await startFaultProxy(demo.url);
}, 30_000);
afterAll(async () => {
  await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
  await proxy?.close();
  await demo?.close();
  await counted?.close();
  await dynamo?.close();
});

/** Two instances on one DynamoDB (the default 30 s holder lease), A through the counting proxy. */
async function startInstances(): Promise<void> {
  const config = {
    targets: [{ name: 'demo', url: proxy.url, era: 'legacy' as const }],
    logLevel: 'SILENT' as const,
    requestStateKeys: { current: 'a-shared-key-for-both-instances-0123456789' },
  };
  [a, b] = await Promise.all([
    startGatewayProcess(config, counted.endpoint),
    startGatewayProcess(config, dynamo.endpoint),
  ]);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('an answer sent once the instance holding the call was killed, within its lease', () => {
  beforeEach(startInstances, 60_000);
  afterEach(async () => {
    await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
  });

  it('2025 session: is recorded for the holder (202) and nothing reaches the target', async () => {
    const { headers } = await initSession(a.url, { capabilities: ALL });
    const res = await post(a.url, headers, {
      jsonrpc: '2.0',
      id: 'killed',
      method: 'tools/call',
      params: { name: 'demo___use_aws', arguments: { command: 'killed' } },
    });
    const events = sseEvents(res);
    let asked: Json | undefined;
    // Read by hand: leaving a for-await loop would close the stream (the client going away).
    for (let next = await events.next(); !next.done; next = await events.next()) {
      if (next.value.message?.method !== 'elicitation/create') continue;
      asked = next.value.message;
      break;
    }
    expect(asked).toBeDefined();
    // The holder waits for the answer: measure what that costs in DynamoDB (A's requests only), over a
    // window of a fixed length (a duration: the cost of waiting per unit of time is what is measured).
    counted.reset();
    await sleep(2000);
    const waitingReads = counted.counts.get('GetItem') ?? 0;
    const waitingWrites = counted.counts.get('UpdateItem') ?? 0;
    if (process.env.FAULT_FIGURES)
      console.log(`holder waiting 2 s: ${waitingReads} GetItem, ${waitingWrites} UpdateItem`);
    // Resolved once the process is gone: the holder can write nothing more, its lease looks live.
    expect(await a.stop('SIGKILL')).toBe('SIGKILL');
    const answersBefore = proxy.stats.answers.length;
    const sentAt = Date.now();
    const answer = await post(b.url, headers, { jsonrpc: '2.0', id: asked!.id, result: CONFIRM });
    if (process.env.FAULT_FIGURES) console.log(`answer taken after ${Date.now() - sentAt} ms`);
    expect(answer.status).toBe(202);
    // Only the holder delivers, and it is gone: nothing reaches the target, now or later. The 202 is the
    // barrier: B's answer POST does all it does before its response (a delivery of its own is awaited,
    // and the proxy counts it on arrival: pending/answer-intake.ts, takeAnswer), and nothing else holds the call.
    expect(proxy.stats.answers.length).toBe(answersBefore);
  }, 40_000);

  it('bridged 2026-07-28 call: the retry is not delivered (502, retryable) and nothing reaches the target', async () => {
    const args = { command: 'killed-bridged' };
    const { message: round } = await bridgedCall(a.url, { id: 'k1', name: 'demo___use_aws', args });
    expect(round.result.resultType).toBe('input_required');
    expect(await a.stop('SIGKILL')).toBe('SIGKILL'); // the holder is gone, its lease looks live
    const answersBefore = proxy.stats.answers.length;
    const [key] = Object.keys(round.result.inputRequests);
    const retry = await bridgedCall(b.url, {
      id: 'k2',
      name: 'demo___use_aws',
      args,
      extra: { inputResponses: { [key!]: CONFIRM }, requestState: round.result.requestState },
    });
    expect(retry.status).toBe(502);
    expect(retry.message.error).toMatchObject({ code: -32603, data: { retryable: true } });
    expect(proxy.stats.answers.length).toBe(answersBefore);
  }, 40_000);
});
