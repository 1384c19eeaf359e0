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

it('a gateway closing with a bridged call waiting for its round cancels it at the target, and its holder reads nothing more', async () => {
  const gateway = await gw.start({});
  const { message: round } = await bridgedCall(gateway.url, { id: 'b1', name: 'ask___ask_many', args: { n: 1 } });
  expect(round.result.resultType).toBe('input_required');
  expect(target().stats().started.ask_many).toBe(1);

  await gateway.close();
  // The target was told: the call will not go on.
  await eventually(() => expect(target().stats().cancelled.ask_many).toBe(1));
  // Nothing of the call runs any more: after close() no store request of it is made, however long one waits
  // (a holder left running would look every second and renew its lease every 10 s).
  const after = gw.dynamo.requests.length;
  // A duration, more than two of its looks: that nothing runs has no event to wait for.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  expect(gw.dynamo.requests.slice(after)).toEqual([]);
});
