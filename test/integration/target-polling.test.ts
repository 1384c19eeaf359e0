import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { createParser } from 'eventsource-parser';
import { connectClient, type EraClient } from '../eras/clients';
import { startGatewayPair } from '../eras/gateway-pair';
import type { GatewayKind } from '../support/gateways';
import { initSession, type Json, post } from '../support/mcp-http';
import { type PollingServer, startPollingServer } from '../support/servers/v1-polling-server';
import { withGateway } from '../support/with-gateway';

/**
 * Targets that poll with SSE (SEP-1699, MCP 2025-11-25): an official v1 SDK server with an event
 * store ends its call's POST stream mid-call (`extra.closeSSEStream()`), twice — before it asks a form
 * elicitation and after the answer, before its result. A client must wait the `retry` the priming
 * event gave and GET the stream again with `Last-Event-ID`. Through the gateway the call completes as
 * it does directly: the gateway resumes the target's stream and relays what it carries.
 *
 * A target may also answer while its stream is closed, before anyone reconnected (the conformance
 * suite's everything-server does, `test_reconnection`): then the result is only in its event store, and
 * the gateway, which waits the target's `retry` as a client must, gets it from the replay.
 */

const config = { logLevel: 'SILENT' as const, pendingRequestTimeoutSeconds: 10 };

async function deploy(client: EraClient): Promise<{ text: string; asked: string[]; logs: unknown[] }> {
  try {
    const { text } = await client.callTool('polling___poll_deploy', { env: 'prod' });
    return {
      text,
      asked: client.asked.map((a) => `${a.method}: ${a.params.message}`),
      logs: client.logs.map((l) => l.data),
    };
  } finally {
    await client.close();
  }
}

describe('a 2025 target that ends its stream mid-call (SSE polling), directly', () => {
  let target: PollingServer;
  beforeAll(async () => {
    target = await startPollingServer({ retryMs: 50 });
  });
  afterAll(() => target.close());

  it('the official v1 client resumes the stream twice and gets the result after answering the elicitation', async () => {
    const client = await connectClient('v1', target.url);
    const { text } = await client.callTool('poll_deploy', { env: 'prod' });
    await client.close();
    expect(text).toBe('deployed to prod');
    expect(client.asked.map((a) => `${a.method}: ${a.params.message}`)).toEqual([
      'elicitation/create: Deploy to prod?',
    ]);
    expect(target.stats.resumes).toHaveLength(2);
  });
});

describe.each(['local server', 'lambda runtime'] as const)(
  'a 2025 target that ends its stream mid-call (SSE polling), through the %s',
  (kind) => {
    const gw = withGateway(config, { kind, targets: { polling: () => startPollingServer({ retryMs: 50 }) } });

    it('a 2025 session (official v1 client) gets the call completed as directly: log, elicitation sent after the reconnect, result', async () => {
      const resumesBefore = gw.targets.polling.stats.resumes.length;
      const outcome = await deploy(await connectClient('v1', gw.url));
      expect(outcome.text).toBe('deployed to prod');
      expect(outcome.asked).toEqual(['elicitation/create: Deploy to prod?']);
      expect(outcome.logs).toContain('preparing prod');
      expect(gw.targets.polling.stats.answers.at(-1)).toEqual({ action: 'accept', content: { confirm: true } });
      // Two resumptions, each a GET naming the last event id, the target session and the version.
      const resumes = gw.targets.polling.stats.resumes.slice(resumesBefore);
      expect(resumes).toHaveLength(2);
      for (const resume of resumes) {
        expect(resume).toMatchObject({ protocolVersion: '2025-11-25', accept: 'text/event-stream' });
        expect(resume.sessionId).toEqual(expect.any(String));
        expect(resume.lastEventId).not.toBe('');
      }
      expect(resumes[1]?.lastEventId).not.toBe(resumes[0]?.lastEventId);
    });

    if (kind === 'local server') {
      it('a 2026-07-28 client bridged to the target gets the same result through its input_required round', async () => {
        const outcome = await deploy(await connectClient('v2 pin 2026-07-28', gw.url));
        expect(outcome.text).toBe('deployed to prod');
        expect(outcome.asked).toEqual(['elicitation/create: Deploy to prod?']);
      });
    }
  },
);

describe('a 2025 target that ends its stream mid-call, through two instances', () => {
  it('the answer, POSTed to the other instance, reaches the target; the holder reads the result from the resumed stream', async () => {
    const target = await startPollingServer({ retryMs: 50 });
    const pair = await startGatewayPair({ targets: [{ name: 'polling', url: target.url }], logLevel: 'SILENT' });
    try {
      for (const kind of ['v1', 'v2 pin 2026-07-28'] as const) {
        const outcome = await deploy(await connectClient(kind, pair.url));
        expect(outcome.text).toBe('deployed to prod');
      }
      // The answers (a 2025 answer POST, a 2026 retry) crossed instances.
      expect(pair.exchanges.filter((e) => e.routed !== 'round-robin').map((e) => e.routed)).toEqual([
        'answer',
        'retry',
      ]);
      expect(target.stats.resumes).toHaveLength(4);
    } finally {
      await pair.close();
      await target.close();
    }
  });
});

describe('a 2025 target that ends its stream before the response without an event id', () => {
  const gw = withGateway(config, { targets: { polling: () => startPollingServer({ eventStore: false }) } });

  it('fails the call with DependencyFailedException, as before: there is nothing to resume from', async () => {
    const client = await connectClient('v1', gw.url);
    try {
      const failure = await client.callTool('polling___poll_deploy', { env: 'prod' }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(McpError);
      expect((failure as McpError).code).toBe(-32603);
      expect((failure as McpError).message).toMatch(/DependencyFailedException.*the stream ended before the response/);
      expect(gw.targets.polling.stats.resumes).toEqual([]);
    } finally {
      await client.close();
    }
  });
});

/** The target's `retry`: its answer, 100 ms after it ends the stream, comes well before a reconnect that waits it. */
const SLOW_RETRY_MS = 1500;
const ANSWERED_WHILE_CLOSED = 'answered while the stream was closed';

/** A target built like the conformance suite's everything-server: its ids and store, a retry of seconds. */
const everythingLike = () => startPollingServer({ retryMs: SLOW_RETRY_MS, eventStore: 'stream-keyed' });

/** The events of an SSE response as sent (ids and empty data included), up to the one `stop` picks. */
async function eventsUntil(res: Response, stop: (event: { id?: string; message?: Json }) => boolean) {
  const events: Array<{ id?: string; message?: Json }> = [];
  let stopped = false;
  const parser = createParser({
    onEvent: (event) => {
      if (stopped) return;
      events.push({ id: event.id, ...(event.data ? { message: JSON.parse(event.data) as Json } : {}) });
      stopped = stop(events.at(-1)!);
    },
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  try {
    while (!stopped) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(value);
    }
  } finally {
    // Leaving early drops the connection, as a client that goes away does.
    await reader.cancel().catch(() => undefined);
  }
  return events;
}

describe('a 2025 target that ends its stream and answers before any reconnect, directly', () => {
  let target: PollingServer;
  beforeAll(async () => {
    target = await everythingLike();
  });
  afterAll(() => target.close());

  it("the official v1 client waits the target's retry, resumes, and gets the result the target kept", async () => {
    const client = await connectClient('v1', target.url);
    try {
      await expect(client.callTool('answer_while_closed', {})).resolves.toMatchObject({ text: ANSWERED_WHILE_CLOSED });
    } finally {
      await client.close();
    }
    expect(target.stats.answeredWhileClosed).toBe(1);
    expect(target.stats.resumes).toHaveLength(1);
  });
});

describe.each([
  ['local server', true],
  ['local server', false],
  ['lambda runtime', true],
  ['lambda runtime', false],
] as Array<[GatewayKind, boolean]>)(
  'a 2025 target that ends its stream and answers before any reconnect, through the %s (streamRelease %s)',
  (kind, streamRelease) => {
    // The test's client is trusted to resume: its stream opens with a priming event it can come back with.
    const gw = withGateway(
      { ...config, streamRelease, streamReleaseClients: [{ name: 'test' }] },
      { kind, instances: 2, targets: { polling: everythingLike } },
    );

    it("the official v1 client gets the result: the gateway waited the target's retry and read it from the replay", async () => {
      const target = gw.targets.polling;
      const before = { resumes: target.stats.resumes.length, whileClosed: target.stats.answeredWhileClosed };
      const client = await connectClient('v1', gw.url);
      const started = Date.now();
      try {
        const { text } = await client.callTool('polling___answer_while_closed', {});
        expect(text).toBe(ANSWERED_WHILE_CLOSED);
      } finally {
        await client.close();
      }
      // The 2025-11-25 transports page: a client MUST wait the `retry` before it reconnects.
      expect(Date.now() - started).toBeGreaterThanOrEqual(SLOW_RETRY_MS);
      expect(target.stats.answeredWhileClosed).toBe(before.whileClosed + 1);
      const resumes = target.stats.resumes.slice(before.resumes);
      expect(resumes).toEqual([
        expect.objectContaining({
          lastEventId: expect.stringContaining('::'),
          protocolVersion: '2025-11-25',
          accept: 'text/event-stream',
        }),
      ]);
    });

    it('a client that leaves after the priming event and reconnects to the other instance gets the result there', async () => {
      const [a, b] = [gw.instances[0]!.url, gw.instances[1]!.url];
      const { headers } = await initSession(a);
      const call = { name: 'polling___answer_while_closed', arguments: {} };
      // The call runs past the target's retry, so the gateway answers with a stream (after 1 s), primed.
      const res = await post(a, headers, { jsonrpc: '2.0', id: 'poll', method: 'tools/call', params: call });
      const [priming] = await eventsUntil(res, (event) => event.id !== undefined);
      expect(priming).toEqual({ id: expect.stringMatching(/\.0$/) });
      const resumed = await fetch(b, {
        method: 'GET',
        headers: { ...headers, accept: 'text/event-stream', 'last-event-id': priming!.id! },
      });
      expect(resumed.status).toBe(200);
      const events = await eventsUntil(resumed, (event) => event.message?.id === 'poll');
      expect(events.at(-1)?.message).toEqual({
        jsonrpc: '2.0',
        id: 'poll',
        result: { content: [{ type: 'text', text: ANSWERED_WHILE_CLOSED }] },
      });
    });
  },
);
