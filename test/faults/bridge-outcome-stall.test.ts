import { type LocalGateway, startLocalGateway } from '../../dev/local-gateway';
import type { GatewayLogger } from '../../lambda/observability/logger';
import { bridgedCall, retryOf } from '../support/bridged-calls';
import { type DynamoProcess, startDynamoProcess } from '../support/gateway-process';
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

/** What the holder logs each time a write of the outcome failed and it is to write it again (modern/bridge.ts). */
const WRITING_AGAIN = 'recording a bridged outcome failed; writing it again';

/** A silent gateway logger that keeps the warnings' messages: a failed write of the outcome is one. */
function warningsLogger(): GatewayLogger & { warnings: unknown[] } {
  const warnings: unknown[] = [];
  const ignore = () => undefined;
  return {
    warnings,
    debug: ignore,
    info: ignore,
    error: ignore,
    warn: (message: unknown, ..._extra: unknown[]) => void warnings.push(message),
  };
}
const writesAgain = (logger: { warnings: unknown[] }) => logger.warnings.filter((m) => m === WRITING_AGAIN).length;

let dynamo: DynamoProcess;
let target: AskingServer;
let gateway: LocalGateway;
const logger = warningsLogger();
beforeAll(async () => {
  dynamo = await startDynamoProcess();
  target = await startAskingServer();
  gateway = await startLocalGateway({
    port: 0,
    config: {
      targets: [{ name: 'ask', url: target.url, era: 'legacy' }],
      logLevel: 'SILENT',
      pendingRequestTimeoutSeconds: 5,
      storeOperationTimeoutMs: STORE_OPERATION_TIMEOUT_MS,
    },
    dynamodbEndpoint: dynamo.endpoint,
    demo: false,
    startupReport: false,
    logger,
  });
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
    // The outage lasts until the result's write was abandoned (past storeOperationTimeoutMs) at least once.
    await eventually(() => expect(writesAgain(logger)).toBeGreaterThanOrEqual(1), 30_000);
  } finally {
    dynamo.resume();
  }
  const done = await retry;
  expect(done.message.result).toMatchObject({ resultType: 'complete', content: [{ text: 'x'.repeat(64) }] });
  expect(target.stats()).toMatchObject({ started: { ask_then_big: 1 }, completed: { ask_then_big: 1 } });
}, 90_000);

describe('DynamoDB refusing connections while the final result is written', () => {
  const refusedLogger = warningsLogger();
  const gw = withGateway(
    (targets) => ({
      logLevel: 'SILENT',
      pendingRequestTimeoutSeconds: 5,
      targets: [{ name: 'ask', url: targets.ask.url, era: 'legacy' }],
    }),
    { targets: { ask: startAskingServer }, localServer: { logger: refusedLogger } },
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
      // The outage lasts until the holder's write of the result failed twice: it wrote it again, and again.
      await eventually(() => expect(writesAgain(refusedLogger)).toBeGreaterThanOrEqual(2), 30_000);
    } finally {
      gw.dynamo.mode = 'ok';
    }
    const done = await retry;
    expect(done.message.result).toMatchObject({ resultType: 'complete', content: [{ text: 'x'.repeat(32) }] });
    expect(asking().stats()).toMatchObject({ started: { ask_then_big: 1 }, completed: { ask_then_big: 1 } });
  }, 90_000);
});
