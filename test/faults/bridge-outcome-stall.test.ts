import { bridgedCall, retryOf } from '../support/bridged-calls';
import { type DynamoProcess, startDynamoProcess } from '../support/gateway-process';
import { type GatewayUnderTest, startGateway } from '../support/gateways';
import { eventually } from '../support/mcp-http';
import { type AskingServer, startAskingServer } from '../support/servers/v1-asking-server';
import { withGateway } from '../support/with-gateway';

/**
 * A bridged call's outcome is not lost when DynamoDB fails while it is written (modern/bridge.ts
 * fill): after the answers reached the target and before its result is recorded, DynamoDB refuses
 * every connection (the counting proxy's `down`), or stops answering (dynalite paused with SIGSTOP);
 * the holder keeps the result and writes it again until it is stored, and the waiting retry gets it
 * once DynamoDB is back — the tool ran once. Real parts: dynalite (in a process of its own to pause
 * it), the v1 SDK asking server, the local server.
 */

/** The store gives up on an operation after this (config storeOperationTimeoutMs; 5 s by default). */
const STORE_OPERATION_TIMEOUT_MS = 1000;
/** Longer than two operation bounds: the result's write is abandoned at least once while DynamoDB is stopped. */
const STALL_MS = 2500;

let dynamo: DynamoProcess;
let target: AskingServer;
let gateway: GatewayUnderTest;
beforeAll(async () => {
  dynamo = await startDynamoProcess();
  target = await startAskingServer();
  gateway = await startGateway(
    'local server',
    {
      targets: [{ name: 'ask', url: target.url, era: 'legacy' }],
      logLevel: 'SILENT',
      pendingRequestTimeoutSeconds: 5,
      storeOperationTimeoutMs: STORE_OPERATION_TIMEOUT_MS,
    },
    dynamo.endpoint,
  );
}, 60_000);
afterAll(async () => {
  await gateway?.close();
  await target?.close();
  await dynamo?.close();
});

it('DynamoDB stopped while the final result is written: the retry gets the result once it is back; the tool ran once', async () => {
  const args = { bytes: 64, delayMs: 500 };
  const { message: round } = await bridgedCall(gateway.url, { id: 's1', name: 'ask___ask_then_big', args });
  expect(round.result.resultType).toBe('input_required');
  const retry = bridgedCall(gateway.url, {
    id: 's2',
    name: 'ask___ask_then_big',
    args,
    extra: retryOf(round),
    timeoutMs: 60_000,
  });
  // The answer reached the target; its result comes 500 ms later: stop DynamoDB before it is written.
  await eventually(() => expect(target.stats().answers.length).toBeGreaterThan(0), 10_000);
  dynamo.pause();
  try {
    // The outage itself, a duration: long enough that the result's write is abandoned at least once.
    await new Promise((resolve) => setTimeout(resolve, STALL_MS));
  } finally {
    dynamo.resume();
  }
  const done = await retry;
  expect(done.message.result).toMatchObject({ resultType: 'complete', content: [{ text: 'x'.repeat(64) }] });
  expect(target.stats()).toMatchObject({ started: { ask_then_big: 1 }, completed: { ask_then_big: 1 } });
}, 90_000);

describe('DynamoDB refusing connections while the final result is written', () => {
  const gw = withGateway(
    (targets) => ({
      logLevel: 'SILENT',
      pendingRequestTimeoutSeconds: 5,
      targets: [{ name: 'ask', url: targets.ask.url, era: 'legacy' }],
    }),
    { targets: { ask: startAskingServer } },
  );
  const asking = () => gw.targets.ask as unknown as AskingServer;

  it('the holder writes the result again until it is stored; the retry gets it, the tool ran once', async () => {
    const args = { bytes: 32, delayMs: 300 };
    const { message: round } = await bridgedCall(gw.url, { id: 'd1', name: 'ask___ask_then_big', args });
    const retry = bridgedCall(gw.url, {
      id: 'd2',
      name: 'ask___ask_then_big',
      args,
      extra: retryOf(round),
      timeoutMs: 60_000,
    });
    await eventually(() => expect(asking().stats().answers.length).toBeGreaterThan(0), 10_000);
    gw.dynamo.mode = 'down';
    try {
      // The outage itself, a duration: the holder's writes of the result fail for this long.
      await new Promise((resolve) => setTimeout(resolve, 4000));
    } finally {
      gw.dynamo.mode = 'ok';
    }
    const done = await retry;
    expect(done.message.result).toMatchObject({ resultType: 'complete', content: [{ text: 'x'.repeat(32) }] });
    expect(asking().stats()).toMatchObject({ started: { ask_then_big: 1 }, completed: { ask_then_big: 1 } });
  }, 90_000);
});
