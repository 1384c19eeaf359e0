import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, type EraClient } from '../eras/clients';
import { startGatewayPair } from '../eras/gateway-pair';
import { type PollingServer, startPollingServer } from '../support/servers/v1-polling-server';
import { withGateway } from '../support/with-gateway';

/**
 * Targets that poll with SSE (SEP-1699, MCP 2025-11-25): an official v1 SDK server with an event
 * store ends its call's POST stream mid-call (`extra.closeSSEStream()`), twice — before it asks a form
 * elicitation and after the answer, before its result. A client must wait the `retry` the priming
 * event gave and GET the stream again with `Last-Event-ID`. Through the gateway the call completes as
 * it does directly: the gateway resumes the target's stream and relays what it carries.
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
