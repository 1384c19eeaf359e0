import { type Clock, systemClock } from '../../lambda/scheduling/clock';
import { bridgedCall } from '../support/bridged-calls';
import { eventually } from '../support/mcp-http';
import { type AskingServer, startAskingServer } from '../support/servers/v1-asking-server';
import { withGateway } from '../support/with-gateway';

/**
 * A bridged call (a 2026-07-28 client, a 2025-only target that asks for input: modern/bridge.ts) is one of
 * the calls its instance holds: when the instance shuts down (the local server closing, a Web Function's
 * SIGTERM), the call is cancelled at its target and its holder stops, instead of renewing leases and
 * looking at DynamoDB after the process meant to end. Real parts: the v1 SDK server of
 * test/support/servers/v1-asking-server.ts, dynalite through the AWS SDK, the local server.
 */

const gw = withGateway(
  (targets) => ({
    logLevel: 'SILENT',
    pendingRequestTimeoutSeconds: 300,
    targets: [{ name: 'ask', url: targets.ask.url, era: 'legacy' }],
  }),
  { targets: { ask: startAskingServer }, instances: 0 },
);
const target = () => gw.targets.ask as unknown as AskingServer;

/** Node's clock and timers, counting the timers set on it that have neither fired nor been cleared. */
function countingClock(): Clock & { scheduled(): number } {
  const live = new Set<unknown>();
  return {
    now: () => systemClock.now(),
    setTimeout: (fn, ms) => {
      const handle = systemClock.setTimeout(() => {
        live.delete(handle);
        fn();
      }, ms);
      live.add(handle);
      return handle;
    },
    clearTimeout: (handle) => {
      live.delete(handle);
      systemClock.clearTimeout(handle);
    },
    scheduled: () => live.size,
  };
}

it('a gateway closing with a bridged call waiting for its round cancels it at the target, and its holder reads nothing more', async () => {
  const clock = countingClock();
  const gateway = await gw.start({}, { localServer: { clock } });
  const { message: round } = await bridgedCall(gateway.url, { id: 'b1', name: 'ask___ask_many', args: { n: 1 } });
  expect(round.result.resultType).toBe('input_required');
  expect(target().stats().started.ask_many).toBe(1);
  // The holder waits on this clock (its next look, its lease renewal).
  expect(clock.scheduled()).toBeGreaterThan(0);

  await gateway.close();
  // The target was told: the call will not go on.
  await eventually(() => expect(target().stats().cancelled.ask_many).toBe(1));
  // Nothing of the call runs any more: after close() no store request of it is made, and nothing is left to
  // make one later: no timer on the gateway's clock (a holder left running keeps one for its next look,
  // every second, and its next lease renewal, every 10 s) and no store request waiting for its answer.
  const after = gw.dynamo.requests.length;
  await eventually(() =>
    expect({ timers: clock.scheduled(), storeRequests: gw.dynamo.inFlight() }).toEqual({ timers: 0, storeRequests: 0 }),
  );
  expect(gw.dynamo.requests.slice(after)).toEqual([]);
});
