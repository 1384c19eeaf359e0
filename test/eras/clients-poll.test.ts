import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type PollingProbe, startPollingProbe } from '../support/polling-probe';

/**
 * The official TypeScript clients the gateway's stream release relies on poll (SSE polling,
 * SEP-1699): after a server ends a call's stream before the response they wait its `retry`, GET the
 * stream with `Last-Event-ID`, and keep doing so however often the server ends it. Pinned here so an
 * SDK upgrade that changes it is noticed; the full table (and the Python SDK) is
 * scripts/measure-client-polling.ts.
 */

const RETRY_MS = 150;
const CLOSES = 5;

const clients = {
  'TypeScript SDK v1': async (url: string) => {
    const client = new V1Client({ name: 'poll-check', version: '1' });
    await client.connect(new V1Transport(new URL(url)));
    try {
      return await client.callTool({ name: 'probe', arguments: {} }, undefined, { timeout: 15_000 });
    } finally {
      await client.close();
    }
  },
  'TypeScript SDK v2': async (url: string) => {
    const client = new V2Client({ name: 'poll-check', version: '1' });
    await client.connect(new V2Transport(new URL(url)));
    try {
      return await client.callTool({ name: 'probe', arguments: {} }, { timeout: 15_000 });
    } finally {
      await client.close();
    }
  },
};

describe.each(Object.keys(clients) as Array<keyof typeof clients>)('%s', (name) => {
  let probe: PollingProbe;
  beforeAll(async () => {
    probe = await startPollingProbe({ retryMs: RETRY_MS, closes: CLOSES });
  });
  afterAll(() => probe.close());

  it(`resumes with Last-Event-ID after the server's retry, ${CLOSES} times in a row, and gets the result`, async () => {
    const result = await clients[name](probe.url);
    expect(result.content).toEqual([{ type: 'text', text: `answered after ${CLOSES} reconnects` }]);
    const [call] = probe.calls;
    expect(call?.reconnects.map((r) => r.lastEventId)).toEqual(
      Array.from({ length: CLOSES }, (_, i) => expect.stringMatching(new RegExp(`\\.${i}$`))),
    );
    for (const reconnect of call?.reconnects ?? []) expect(reconnect.delayMs).toBeGreaterThanOrEqual(RETRY_MS - 5);
  });
});
