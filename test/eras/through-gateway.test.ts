import { startV1PushServer, type V1PushServer } from '../support/servers/v1-push-server';
import { startV2DefaultServer, type V2DefaultServer } from '../support/servers/v2-default-server';
import { startV2DualServer, type V2DualServer } from '../support/servers/v2-dual-server';
import { startV2ModernServer, type V2ModernServer } from '../support/servers/v2-modern-server';
import { type CellContext, eventually, type Feature, is2026, runCell } from './cells';
import { type ClientKind, connectClient, type EraClient } from './clients';
import { type Exchange, type GatewayPair, type Json, startGatewayPair } from './gateway-pair';

/**
 * The era matrix through the gateway: client era × target kind × feature, every cell through TWO
 * gateway instances sharing one DynamoDB, behind the cross-instance proxy of gateway-pair.ts (a
 * client's answer to a server request, and a 2026-07-28 retry, always reach the instance that did NOT
 * carry the call). Targets: `legacy` = 2025-only v1 server whose tools ask on the standalone GET stream
 * (server a), `dual` = v2 dual-era server (server b), `modern` = v2 2026-07-28-only server (server c),
 * `default` = a v2 server in its default mode (server d: a stateless 2025 leg that cannot ask, so the
 * gateway bridges 2025 clients to its 2026-07-28 leg).
 *
 * Clients: the official v1 client (2025-11-25), the v2 client in its default negotiation (which is
 * `legacy`: 2025-11-25), pinned to the 2025 era (`mode: 'legacy'`), in `mode: 'auto'` (picks
 * 2026-07-28, which the gateway offers) and pinned to 2026-07-28.
 *
 * This file states what the gateway must do; cells of behaviour not built yet fail here.
 */

jest.setTimeout(25_000);

const CALL_TIMEOUT_MS = 5000;
type TargetKind = 'legacy' | 'dual' | 'modern' | 'default';
const CLIENTS: ClientKind[] = ['v1', 'v2 default', 'v2 legacy', 'v2 auto', 'v2 pin 2026-07-28'];
const LEGACY = new Set<ClientKind>(['v1', 'v2 default', 'v2 legacy']);

/** The feature cells of each (client era, target) pair; the README table names what is not applicable. */
function featuresOf(client: ClientKind, target: TargetKind): Feature[] {
  const legacyClient = LEGACY.has(client);
  if (target === 'legacy') return ['form', 'URL', '-32042', 'sampling', 'roots', 'progress', 'logging'];
  if (target === 'dual' && legacyClient)
    return ['form', 'form (push)', 'URL', '-32042', 'sampling', 'sampling (push)', 'roots', 'progress', 'logging'];
  // The v2 SDK refuses to send -32042 on 2026-07-28 (it answers -32603 naming inputRequired instead).
  return ['form', 'URL', 'sampling', 'roots', 'progress', 'logging'];
}

const INPUT_FEATURES = new Set<Feature>(['form', 'form (push)', 'URL', 'sampling', 'sampling (push)', 'roots']);

let a: V1PushServer;
let b: V2DualServer;
let c: V2ModernServer;
let d: V2DefaultServer;
let pair: GatewayPair;
let client: EraClient | undefined;
let cell = 0;

beforeAll(async () => {
  [a, b, c, d] = await Promise.all([
    startV1PushServer(),
    startV2DualServer(),
    startV2ModernServer(),
    startV2DefaultServer(),
  ]);
  pair = await startGatewayPair({
    targets: [
      { name: 'legacy', url: a.url },
      { name: 'dual', url: b.url },
      { name: 'modern', url: c.url },
      { name: 'default', url: d.url },
    ],
  });
}, 30_000);
afterEach(async () => {
  await client?.close();
  client = undefined;
});
afterAll(async () => {
  await pair?.close();
  await Promise.all([a?.close(), b?.close(), c?.close(), d?.close()]);
});

const last = <T>(list: T[]): T | undefined => list[list.length - 1];
const GW_ID = /^gw-/;

function targetLogLevel(target: TargetKind, client: EraClient): (() => string | undefined) | undefined {
  // A 2026-07-28 client's _meta logLevel for a 2025-only target: the gateway may set the target
  // session's level or filter itself; only what the client receives is checked.
  if (target === 'legacy') return is2026(client) ? undefined : () => last(a.stats().logLevels);
  if (target === 'modern') return () => last(c.stats().modern.calls)?.logLevel;
  if (target === 'default') return () => last(d.stats().modern.calls)?.logLevel;
  return is2026(client) ? () => last(b.stats().modern.calls)?.logLevel : () => last(b.stats().legacy.logLevels);
}

function context(target: TargetKind, client: EraClient): CellContext {
  cell++;
  return {
    tool: (name) => `${target}___${name}`,
    askedId: expect.stringMatching(GW_ID),
    tag: `g${cell}`,
    targetLogLevel: targetLogLevel(target, client),
  };
}

/** The exchanges of one cell, and the cross-instance checks every input cell must pass. */
function checkCrossing(exchanges: Exchange[], client: EraClient, target: TargetKind, feature: Feature): void {
  if (!INPUT_FEATURES.has(feature) && !(feature === '-32042' && is2026(client))) return;
  if (!is2026(client)) {
    // The answer POST went to the other instance (the proxy routes by the gw- id it saw on the stream) and was accepted.
    const answers = exchanges.filter((e) => e.routed === 'answer');
    expect(answers.map((e) => [String(e.body?.id).match(GW_ID) !== null, e.status])).toEqual([[true, 202]]);
    return;
  }
  const rounds = exchanges.filter((e) => e.body?.method === 'tools/call');
  const [first, retry] = rounds;
  const interim = first?.messages.find((m) => m.result?.resultType === 'input_required');
  expect(interim).toBeDefined();
  expect(retry?.routed).toBe('retry'); // sent to the instance that did not answer the first round
  const keys = Object.keys(interim!.result.inputRequests ?? {});
  expect(Object.keys(retry!.body!.params.inputResponses)).toEqual(keys);
  // A 2025-only target's request becomes an input round keyed by the gateway's own ids (-32042 is
  // not a request of the target: its URL round has the gateway's own key).
  if (target === 'legacy' && feature !== '-32042') for (const key of keys) expect(key).toMatch(GW_ID);
}

describe.each(CLIENTS)('%s client', (kind) => {
  test(`negotiates ${LEGACY.has(kind) ? '2025-11-25' : '2026-07-28'} with the gateway`, async () => {
    client = await connectClient(kind, pair.url, CALL_TIMEOUT_MS);
    expect(client.version).toBe(LEGACY.has(kind) ? '2025-11-25' : '2026-07-28');
  });

  describe.each(['legacy', 'dual', 'modern', 'default'] as TargetKind[])('→ %s target', (target) => {
    test.each(featuresOf(kind, target))('%s', async (feature) => {
      client = await connectClient(kind, pair.url, CALL_TIMEOUT_MS);
      const from = pair.exchanges.length;
      await runCell(feature, client, context(target, client));
      checkCrossing(pair.exchanges.slice(from), client, target, feature);
    });
  });
});

describe('transparent first', () => {
  test('a 2025 session reaches the dual-era target in 2025: its 2025 leg sees initialize and the push-style tools', async () => {
    const before = b.stats();
    client = await connectClient('v1', pair.url, CALL_TIMEOUT_MS);
    expect((await client.callTool('dual___deploy_push', { env: 'tf' })).text).toBe('deployed to tf');
    const after = b.stats();
    expect(after.legacy.initializeCount).toBeGreaterThan(before.legacy.initializeCount);
    expect(after.answered['elicitation/create']).toBe((before.answered['elicitation/create'] ?? 0) + 1);
    expect(after.modern.calls.length).toBe(before.modern.calls.length); // nothing went to its 2026-07-28 leg
  });

  test('a 2026-07-28 request reaches the dual-era target in 2026-07-28', async () => {
    const before = b.stats();
    client = await connectClient('v2 pin 2026-07-28', pair.url, CALL_TIMEOUT_MS);
    expect((await client.callTool('dual___deploy', { env: 'tf2' })).text).toBe('deployed to tf2');
    const after = b.stats();
    expect(after.modern.calls.slice(before.modern.calls.length).map((x) => x.tool)).toEqual(['deploy', 'deploy']);
    expect(after.legacy.calls.length).toBe(before.legacy.calls.length);
  });
});

describe('server requests on a 2025 target’s standalone GET stream', () => {
  test.each(['v1', 'v2 default'] as ClientKind[])(
    '%s: three parallel calls, each asked with a gw- id and answered through the other instance',
    async (kind) => {
      client = await connectClient(kind, pair.url, CALL_TIMEOUT_MS);
      const from = pair.exchanges.length;
      const results = await pair.explained(() =>
        Promise.all(['x1', 'x2', 'x3'].map((env) => client!.callTool('legacy___deploy', { env }))),
      );
      expect(results.map((r) => r.text)).toEqual(['deployed to x1', 'deployed to x2', 'deployed to x3']);
      const asked = [...client.asked].sort((x, y) => String(x.params.message).localeCompare(String(y.params.message)));
      expect(asked.map((x) => [x.id, x.params.message])).toEqual([
        [expect.stringMatching(GW_ID), 'Deploy to x1?'],
        [expect.stringMatching(GW_ID), 'Deploy to x2?'],
        [expect.stringMatching(GW_ID), 'Deploy to x3?'],
      ]);
      const answers = pair.exchanges.slice(from).filter((e) => e.routed === 'answer');
      expect(answers.map((e) => e.status)).toEqual([202, 202, 202]);
    },
  );

  test.each(CLIENTS)(
    '%s: a GET stream the target ends mid-call (SSE polling) is reopened with Last-Event-ID; the request sent meanwhile reaches the client',
    async (kind) => {
      client = await connectClient(kind, pair.url, CALL_TIMEOUT_MS);
      const before = a.stats().lastEventIds.length;
      expect((await client.callTool('legacy___deploy_polling', { env: 'polled' })).text).toBe('deployed to polled');
      expect(a.stats().lastEventIds.length).toBeGreaterThan(before);
      expect(client.asked).toEqual([
        expect.objectContaining({
          method: 'elicitation/create',
          params: expect.objectContaining({ message: 'Deploy to polled?' }),
        }),
      ]);
    },
  );
});

describe('two requests in one call of a 2025-only target (form, then sampling)', () => {
  test.each(CLIENTS)('%s: both reach the client, every answer through the other instance', async (kind) => {
    client = await connectClient(kind, pair.url, CALL_TIMEOUT_MS);
    const from = pair.exchanges.length;
    expect((await client.callTool('legacy___release', { version: 'v9' })).text).toBe('released v9: short and sweet');
    expect(client.asked.map((x) => x.method)).toEqual(['elicitation/create', 'sampling/createMessage']);
    const exchanges = pair.exchanges.slice(from);
    if (!is2026(client)) {
      expect(client.asked.map((x) => String(x.id))).toEqual([
        expect.stringMatching(GW_ID),
        expect.stringMatching(GW_ID),
      ]);
      expect(exchanges.filter((e) => e.routed === 'answer').map((e) => e.status)).toEqual([202, 202]);
      return;
    }
    // Two input_required rounds, each retry on the other instance, then the final result.
    const calls = exchanges.filter((e) => e.body?.method === 'tools/call');
    expect(calls.map((e) => e.routed)).toEqual(['round-robin', 'retry', 'retry']);
    expect(calls.map((e) => last(e.messages)?.result?.resultType)).toEqual([
      'input_required',
      'input_required',
      'complete',
    ]);
  });
});

describe('logging/setLevel of a 2025 session', () => {
  test.each(['v1', 'v2 default'] as ClientKind[])(
    '%s: reaches a 2026-07-28 target as _meta logLevel on every later request, never as a method',
    async (kind) => {
      client = await connectClient(kind, pair.url, CALL_TIMEOUT_MS);
      await client.setLoggingLevel('error');
      const from = c.stats().modern.calls.length;
      await client.callTool('modern___long_task', { steps: 1 });
      await client.callTool('modern___long_task', { steps: 1 });
      const stats = c.stats();
      expect(stats.modern.calls.slice(from).map((x) => x.logLevel)).toEqual(['error', 'error']);
      expect(stats.modern.requestsByMethod['logging/setLevel']).toBeUndefined();
      expect(client.logs).toEqual([]); // nothing at "error" or above was logged
    },
  );

  test('reaches a 2025-only target as logging/setLevel', async () => {
    client = await connectClient('v1', pair.url, CALL_TIMEOUT_MS);
    const before = a.stats().logLevels.length;
    await client.setLoggingLevel('error');
    await client.callTool('legacy___long_task', { steps: 1 }); // the gateway may open the target session lazily
    expect(a.stats().logLevels.slice(before)).toContain('error');
  });
});

describe("a client's cancellation", () => {
  /** How many `wait` tools the target has `aborted` (or `started`) for this client's era. */
  const counted = (which: 'abortedTools' | 'startedTools') => (target: TargetKind, client: EraClient) => {
    if (target === 'legacy') return () => a.stats()[which].filter((t) => t === 'wait').length;
    if (target === 'modern') return () => c.stats()[which].filter((t) => t === 'wait (modern)').length;
    const leg = is2026(client) ? 'wait (modern)' : 'wait (legacy)';
    return () => b.stats()[which].filter((t) => t === leg).length;
  };
  const aborted = counted('abortedTools');
  const started = counted('startedTools');

  describe.each(['v1', 'v2 pin 2026-07-28'] as ClientKind[])('%s client', (kind) => {
    test.each(['legacy', 'dual', 'modern'] as TargetKind[])(
      '→ %s: the target is told, the client gets no DependencyFailedException, the gateway logs INFO',
      async (target) => {
        client = await connectClient(kind, pair.url, CALL_TIMEOUT_MS);
        const abortedBefore = aborted(target, client)();
        const startedBefore = started(target, client)();
        const cancelledBefore = a.stats().cancelledRequestIds.length;
        const fromLog = pair.logs.length;
        const from = pair.exchanges.length;
        const abort = new AbortController();
        const call = client.callTool(`${target}___wait`, { ms: 15_000 }, { signal: abort.signal });
        // Cancelled once the target runs it (what a cancellation before that does is another test's).
        await eventually(() => expect(started(target, client!)()).toBe(startedBefore + 1), 5000);
        abort.abort('user cancelled');
        await expect(call).rejects.toThrow();
        await eventually(() => expect(aborted(target, client!)()).toBe(abortedBefore + 1), 5000);
        if (target === 'legacy') expect(a.stats().cancelledRequestIds.length).toBe(cancelledBefore + 1);
        // Last of the call's end: a 2025 relay logs it once its records are gone and its response written (the holder may
        // learn of the cancellation at its next marker look, 1–3 s); a 2026-07-28 request's only later step is in the same turn.
        const endLine = is2026(client)
          ? 'the client cancelled the call (closed the request)'
          : 'relayed call wound down';
        await eventually(() => expect(pair.logs.slice(fromLog).map((l) => l.message)).toContain(endLine), 8000);
        const callExchange = pair.exchanges.slice(from).find((e) => e.body?.method === 'tools/call');
        await eventually(() => expect(callExchange?.ended).toBe(true)); // what the proxy saw of it is all there is
        const written = pair.exchanges.slice(from).flatMap((e) => e.messages);
        expect(written.filter((m) => JSON.stringify(m.error ?? {}).includes('DependencyFailed'))).toEqual([]);
        const lines = pair.logs.slice(fromLog);
        expect(lines.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
        expect(lines.filter((l) => l.level === 'info' && /cancel/i.test(l.message))).not.toEqual([]);
      },
    );
  });
});

describe('2026-07-28 client → 2025-only target: an abandoned input round', () => {
  test('ends at pendingRequestTimeoutSeconds: the target is told (notifications/cancelled) and nothing is left in the table', async () => {
    const impatient = await startGatewayPair(
      { targets: [{ name: 'legacy', url: a.url }], pendingRequestTimeoutSeconds: 2, tableName: 'era-abandoned' },
      { dynamodbEndpoint: pair.dynamodbEndpoint },
    );
    try {
      const cancelledBefore = a.stats().cancelledRequestIds.length;
      const res = await modernPost(impatient.url, 'tools/call', {
        name: 'legacy___deploy',
        arguments: { env: 'gone' },
      });
      expect(res.result?.resultType).toBe('input_required');
      const keys = Object.keys(res.result.inputRequests);
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(GW_ID);
      expect(res.result.inputRequests[keys[0]!]).toMatchObject({
        method: 'elicitation/create',
        params: { message: 'Deploy to gone?' },
      });
      // No retry. Within the timeout (and a margin) the target's request is cancelled and nothing of the
      // call is left: only the principal's bridged-call counter, given back (count 0) and expiring by TTL.
      await eventually(() => expect(a.stats().cancelledRequestIds.length).toBeGreaterThan(cancelledBefore), 6000);
      await eventually(async () => {
        const left = await impatient.scanTable();
        expect(left.filter((item) => !(String(item.pk).startsWith('U#') && item.count === 0))).toEqual([]);
      }, 3000);
    } finally {
      await impatient.close();
    }
  });
});

/** A raw 2026-07-28 request (as the reference page's sample sends it); the last JSON-RPC message. */
async function modernPost(url: string, method: string, params: Json): Promise<Json> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(params.name ? { 'mcp-name': params.name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'abandoned-1',
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {}, url: {} } },
        },
      },
    }),
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  const text = await res.text();
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return JSON.parse(text);
  const data = text
    .split('\n')
    .filter((line) => line.startsWith('data:') && line.length > 6)
    .map((line) => JSON.parse(line.slice(5)));
  return data[data.length - 1] ?? {};
}
