import { meta, modernHeaders } from '../modern/helpers';
import { eventually } from '../support/mcp-http';
import { startV1PushServer } from '../support/servers/v1-push-server';
import { withGateway } from '../support/with-gateway';

/**
 * A 2026-07-28 client cancels by closing its request. In AWS the function never learns that a
 * function URL's client went away (no 'close' or 'error' on the response stream, and writes to it keep
 * succeeding: https://github.com/aws/aws-lambda-nodejs-runtime-interface-client/issues/145), and `--lambda` reproduces that
 * (its function URL keeps reading the runtime's response and drops it). So the bound is the
 * invocation's deadline: the function timeout less one second, when the target is told as for any
 * cancellation and the environment is free again.
 */

jest.setTimeout(60_000);

const fixture = withGateway(
  {},
  {
    kind: 'lambda runtime',
    timeoutMs: 4000,
    targets: { legacy: () => startV1PushServer() },
  },
);

test('a closed 2026-07-28 request: the target is told at the invocation deadline, not after its own 20 s', async () => {
  const target = fixture.targets.legacy;
  const before = target.stats().cancelledRequestIds.length;
  const started = Date.now();
  const closing = new AbortController();
  const call = fetch(fixture.url, {
    method: 'POST',
    headers: modernHeaders('tools/call', 'legacy___wait'),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'w',
      method: 'tools/call',
      params: { name: 'legacy___wait', arguments: { ms: 20_000 }, _meta: meta() },
    }),
    signal: closing.signal,
  }).then((res) => res.text());
  void call.catch(() => undefined);
  setTimeout(() => closing.abort(), 300);
  await eventually(() => expect(target.stats().cancelledRequestIds.length).toBe(before + 1), 10_000);
  expect(target.stats().abortedTools).toContain('wait');
  // Told well before the tool's 20 s: at the deadline (4 s timeout less the 1 s margin), not when the client left.
  expect(Date.now() - started).toBeGreaterThanOrEqual(2500);
});
