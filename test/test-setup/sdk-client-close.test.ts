import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/**
 * The system tests' shim of the v1 client transport (test/support/setup/sdk-client-close.ts): a closed
 * transport leaves no reconnection timer behind, so a test file's jest worker can exit when it is done.
 */

type Internals = { _scheduleReconnection(options: unknown, attemptCount?: number): void };

afterEach(() => jest.useRealTimers());

it('a transport closed while two of its streams wait to reconnect leaves no timer', async () => {
  jest.useFakeTimers();
  const transport = new StreamableHTTPClientTransport(new URL('http://127.0.0.1:9/mcp'));
  await transport.start();
  const internals = transport as unknown as Internals;
  internals._scheduleReconnection({ resumptionToken: 'get-stream.1' }, 0);
  internals._scheduleReconnection({ resumptionToken: 'post-stream.1' }, 0);
  expect(jest.getTimerCount()).toBe(2);
  await transport.close();
  expect(jest.getTimerCount()).toBe(0);
});

it('a closed transport schedules no reconnection (a failed one after close used to back off up to 30 s)', async () => {
  jest.useFakeTimers();
  const transport = new StreamableHTTPClientTransport(new URL('http://127.0.0.1:9/mcp'));
  await transport.start();
  await transport.close();
  (transport as unknown as Internals)._scheduleReconnection({ resumptionToken: 'get-stream.1' }, 1);
  expect(jest.getTimerCount()).toBe(0);
});
