import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import type { GatewayKind } from '../support/gateways';
import { eventually } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * DynamoDB requests per call and per elicitation round, as official SDK clients cause them against
 * official SDK servers, counted where they reach DynamoDB (dynalite behind the counting proxy). These
 * are the figures the cost model (docs/performance.md) and the scale model (docs/scale-model.md) rest
 * on; they pin today's figures, so a change to any of them is a decision to make on purpose.
 * Counts only, never timings. Raw-HTTP counterparts: `legacy-sessions.test.ts` (a 2025 call),
 * `legacy-relay.test.ts` (a round answered through the same instance), `legacy-to-modern-input.test.ts`
 * (2026-07-28 calls and input rounds).
 *
 * The sessions' own GET stream is off (`clientStreamHoldSeconds: 0`): the official clients open it by
 * themselves after `initialize`, and its rescans (a `Query` every 2 s) would mix a per-session cost,
 * counted by time, into the per-call figures.
 */
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];
const INFO = { name: 'request-counts', version: '1.0.0' };

interface Caller {
  call(name: string, args: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

function textOf(result: unknown): string {
  return (result as { content: Array<{ text?: string }> }).content[0]?.text ?? '';
}

/** The official v1 client in a 2025-11-25 session; with `answerUrl`, its answers go to another instance. */
async function v1Session(url: string, options: { elicitation: boolean; answerUrl?: string }): Promise<Caller> {
  const client = new V1Client(INFO, { capabilities: options.elicitation ? { elicitation: { form: {} } } : {} });
  if (options.elicitation)
    client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { confirm: true } }));
  // A load balancer (or Lambda) may route any POST anywhere: here every answer goes to the other instance.
  const routed: FetchLike = (target, init) => {
    if (options.answerUrl && init?.method === 'POST' && typeof init.body === 'string') {
      const message = JSON.parse(init.body) as Record<string, unknown>;
      if (!('method' in message)) return fetch(options.answerUrl, init);
    }
    return fetch(target, init);
  };
  await client.connect(new V1Transport(new URL(url), { fetch: routed }));
  return {
    call: async (name, args) => textOf(await client.callTool({ name, arguments: args }, CallToolResultSchema)),
    close: () => client.close(),
  };
}

/** The official v2 client pinned to 2026-07-28. */
async function v2Modern(url: string): Promise<Caller> {
  const client = new V2Client(INFO, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  });
  await client.connect(new V2Transport(new URL(url)));
  return {
    call: async (name, args) => textOf(await client.callTool({ name, arguments: args })),
    close: () => client.close(),
  };
}

describe.each(kinds)('DynamoDB requests through the %s', (kind) => {
  const gw = withGateway(
    { logLevel: 'SILENT', clientStreamHoldSeconds: 0 },
    {
      kind,
      instances: 2,
      targets: {
        legacy: () => startDemoTarget(), // v1 SDK, 2025-11-25 only: sessions and a GET stream
        dual: () => startModernDemoTarget({ legacy: 'stateless', name: 'dual-demo-target' }), // v2 SDK
      },
    },
  );
  const counted = () => Object.fromEntries(gw.dynamo.counts);

  /** Compares perCall's counts (its requests are shown when they differ). */
  const counting = (counts: Record<string, number>) => ({ counts, requests: expect.any(Array) });

  /** The requests of `calls` calls after one warm-up call (which learns the target's era or opens its session). */
  async function perCall(caller: Caller, name: string, args: Record<string, unknown>, expected: string) {
    try {
      expect(await caller.call(name, args)).toBe(expected);
      gw.dynamo.reset();
      for (let i = 0; i < 3; i++) expect(await caller.call(name, args)).toBe(expected);
      // Each request beside the counts: a failure shows which item each read or wrote (whose it was).
      return { counts: counted(), requests: gw.dynamo.requests.map((r) => `${r.operation} ${r.body}`) };
    } finally {
      await caller.close();
    }
  }

  it('a 2026-07-28 tools/call makes no DynamoDB request', async () => {
    const counts = await perCall(await v2Modern(gw.url), 'dual___echo', { text: 'x' }, 'echo: x');
    expect(counts).toEqual(counting({}));
  });

  it('a 2025-11-25 tools/call of a session without input capabilities makes one Query', async () => {
    const caller = await v1Session(gw.url, { elicitation: false });
    const counts = await perCall(caller, 'legacy___echo', { text: 'x' }, 'echo: x');
    expect(counts).toEqual(counting({ Query: 3 })); // three calls, one session read each
  });

  it('a 2025-11-25 tools/call of a session that declared elicitation makes one Query too (its GET to the target is no DynamoDB request)', async () => {
    const caller = await v1Session(gw.url, { elicitation: true });
    const counts = await perCall(caller, 'legacy___echo', { text: 'x' }, 'echo: x');
    expect(counts).toEqual(counting({ Query: 3 }));
  });

  it('a held elicitation round answered through the other instance: the figures per round', async () => {
    const [a, b] = gw.instances;
    const caller = await v1Session(a!.url, { elicitation: true, answerUrl: b!.url });
    try {
      expect(await caller.call('legacy___use_aws', { command: 'warm' })).toBe('executed: warm');
      await eventually(() => expect(gw.dynamo.counts.get('BatchWriteItem')).toBe(2)); // the warm-up's end
      gw.dynamo.reset();
      expect(await caller.call('legacy___use_aws', { command: 'ls' })).toBe('executed: ls');
      await eventually(() => expect(gw.dynamo.counts.get('BatchWriteItem')).toBe(2));
      const { GetItem: looks, ...rest } = counted();
      // The call (A): Query (the session, with its pending records counted for the per-session cap:
      // the round pays no Query of its own). The round (A): BatchWriteItem (the pending record, the
      // resumable stream's priming event and the question, kept together before they are sent). The
      // answer (B): UpdateItem alone (the answer recorded for the holder, which delivers it: no claim,
      // acknowledgement or settle; nothing read first, the record carrying its session's principal and
      // expiry). The end (A): BatchWriteItem (the stream's end kept, its events and the pending record removed).
      expect(rest).toEqual({ Query: 1, UpdateItem: 1, BatchWriteItem: 2 });
      // GetItem: the holder's looks at its waiting record (20 ms after the question, doubling to every
      // 250 ms), the one that finds the answer included; their number follows the time taken, at least that one.
      expect(looks).toBeGreaterThanOrEqual(1);
    } finally {
      await caller.close();
    }
  });

  it("a question round (a 2026-07-28 target's input round asked of a 2025-11-25 session) answered through the other instance: the figures per round", async () => {
    const [a, b] = gw.instances;
    const caller = await v1Session(a!.url, { elicitation: true, answerUrl: b!.url });
    try {
      gw.dynamo.reset(); // what the tests before this one wrote
      expect(await caller.call('dual___use_aws', { command: 'warm' })).toBe('executed: warm');
      await eventually(() => expect(gw.dynamo.counts.get('BatchWriteItem')).toBe(2)); // the warm-up's end
      gw.dynamo.reset();
      expect(await caller.call('dual___use_aws', { command: 'ls' })).toBe('executed: ls');
      await eventually(() => expect(gw.dynamo.counts.get('BatchWriteItem')).toBe(2));
      const { GetItem: polls, ...rest } = counted();
      // The call (A): Query. The round (A): PutItem (the question's record, written before it is
      // asked), PutItem (the waiting call's record: a 2026-07-28 target's round can be released and
      // taken over, legacy/call-release.ts), BatchWriteItem (the priming event and the question). The
      // answer (B): UpdateItem alone (stored in the question's record, conditioned on its principal and
      // its session's expiry: nothing read first). The end (A): DeleteItem (the waiting call's record),
      // BatchWriteItem (the stream's end kept, its events and the question's record removed).
      expect(rest).toEqual({ Query: 1, PutItem: 2, UpdateItem: 1, DeleteItem: 1, BatchWriteItem: 2 });
      // GetItem: the asker's polls of its question until the answer is there; at least the one that finds it.
      expect(polls).toBeGreaterThanOrEqual(1);
    } finally {
      await caller.close();
    }
  });
});
