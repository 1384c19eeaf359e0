import { startV1PushServer, type V1PushServer } from '../support/servers/v1-push-server';
import { startV2DualServer, type V2DualServer } from '../support/servers/v2-dual-server';
import { startV2ModernServer, type V2ModernServer } from '../support/servers/v2-modern-server';
import { type CellContext, eventually, type Feature, runCell } from './cells';
import { type ClientKind, connectClient, type EraClient } from './clients';

/**
 * The test servers proven with the official clients DIRECTLY (no gateway): every feature cell that
 * works without a gateway, with each client era that can reach it. This is the baseline the gateway
 * matrix (through-gateway.test.ts) must not fall below.
 */

jest.setTimeout(20_000);

const LEGACY_CLIENTS: ClientKind[] = ['v1', 'v2 default', 'v2 legacy'];
const MODERN_CLIENTS: ClientKind[] = ['v2 auto', 'v2 pin 2026-07-28'];

let a: V1PushServer;
let b: V2DualServer;
let c: V2ModernServer;
let client: EraClient | undefined;
let cell = 0;

beforeAll(async () => {
  [a, b, c] = await Promise.all([startV1PushServer(), startV2DualServer(), startV2ModernServer()]);
});
afterEach(async () => {
  await client?.close();
  client = undefined;
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), c?.close()]);
});

/** Connects and, for a 2025 session, waits until its standalone GET stream is live at the target. */
async function connect(kind: ClientKind, url: string, liveGetStreams?: () => string[]): Promise<EraClient> {
  client = await connectClient(kind, url);
  const sessionId = client.sessionId;
  if (liveGetStreams && sessionId) await eventually(() => expect(liveGetStreams()).toContain(sessionId));
  return client;
}

function context(targetLogLevel: () => string | undefined): CellContext {
  cell++;
  return { tool: (name) => name, askedId: expect.anything(), tag: `d${cell}`, targetLogLevel };
}

const last = <T>(list: T[]): T | undefined => list[list.length - 1];

describe('2025-only target: v1 McpServer, push style without relatedRequestId (server a)', () => {
  const FEATURES: Feature[] = ['form', 'URL', '-32042', 'sampling', 'roots', 'progress', 'logging'];

  describe.each([...LEGACY_CLIENTS, 'v2 auto' as const])('%s client', (kind) => {
    test('negotiates 2025-11-25 (v2 auto: the server/discover probe fails, it falls back to initialize)', async () => {
      await connect(kind, a.url);
      expect(client!.version).toBe('2025-11-25');
    });

    test.each(FEATURES)('%s', async (feature) => {
      await connect(kind, a.url, () => a.stats().liveGetStreams);
      await runCell(
        feature,
        client!,
        context(() => last(a.stats().logLevels)),
      );
    });
  });

  test('the push-style requests really ride the standalone GET stream: without one they are never delivered', async () => {
    // A client that never opens the GET stream, as a gateway that answers GET with 405 would be.
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const noGet: typeof fetch = async (input, init) =>
      init?.method === 'GET' ? new Response(null, { status: 405 }) : fetch(input, init);
    const raw = new Client({ name: 'no-get', version: '1' }, { capabilities: { elicitation: { form: {} } } });
    let askedAnyway = false;
    const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
    raw.setRequestHandler(ElicitRequestSchema, () => {
      askedAnyway = true;
      return { action: 'accept', content: { confirm: true } };
    });
    await raw.connect(new StreamableHTTPClientTransport(new URL(a.url), { fetch: noGet }));
    try {
      const asked = a.stats().asked['elicitation/create'] ?? 0;
      const call = raw.callTool({ name: 'deploy', arguments: { env: 'nowhere' } }, undefined, { timeout: 1500 });
      await expect(call).rejects.toThrow(/timed out/i);
      expect(a.stats().asked['elicitation/create']).toBe(asked + 1); // the tool did ask…
      expect(askedAnyway).toBe(false); // …but nothing reached the client
    } finally {
      await raw.close();
    }
  });

  test('two requests in one call (form, then sampling)', async () => {
    await connect('v1', a.url, () => a.stats().liveGetStreams);
    expect((await client!.callTool('release', { version: 'v1.2' })).text).toBe('released v1.2: short and sweet');
    expect(client!.asked.map((x) => x.method)).toEqual(['elicitation/create', 'sampling/createMessage']);
  });

  test('three push-style calls in parallel share the one GET stream', async () => {
    await connect('v1', a.url, () => a.stats().liveGetStreams);
    const before = a.stats().answered['elicitation/create'] ?? 0;
    const results = await Promise.all(['p1', 'p2', 'p3'].map((env) => client!.callTool('deploy', { env })));
    expect(results.map((r) => r.text)).toEqual(['deployed to p1', 'deployed to p2', 'deployed to p3']);
    expect(a.stats().answered['elicitation/create']).toBe(before + 3);
    expect(client!.asked.map((x) => x.params.message).sort()).toEqual([
      'Deploy to p1?',
      'Deploy to p2?',
      'Deploy to p3?',
    ]);
  });

  test('a GET stream the server ends is resumed with Last-Event-ID; what was sent meanwhile is replayed', async () => {
    await connect('v1', a.url, () => a.stats().liveGetStreams);
    expect((await client!.callTool('deploy', { env: 'first' })).text).toBe('deployed to first'); // an event id exists now
    const before = a.stats();
    a.closeGetStreams();
    await eventually(() => expect(a.stats().liveGetStreams).not.toContain(client!.sessionId));
    // Asked while no GET stream is open: the event store keeps it until the client resumes.
    expect((await client!.callTool('deploy', { env: 'resumed' })).text).toBe('deployed to resumed');
    expect(a.stats().lastEventIds).toHaveLength(before.lastEventIds.length + 1);
  });

  test('a tool that ends the GET stream mid-call (SSE polling) still reaches the client through Last-Event-ID', async () => {
    await connect('v1', a.url, () => a.stats().liveGetStreams);
    const before = a.stats().lastEventIds.length;
    expect((await client!.callTool('deploy_polling', { env: 'polled' })).text).toBe('deployed to polled');
    expect(a.stats().lastEventIds).toHaveLength(before + 1);
  });

  test('a client pinned to 2026-07-28 cannot use it (no server/discover, no 2026-07-28)', async () => {
    await expect(connectClient('v2 pin 2026-07-28', a.url)).rejects.toThrow();
  });

  test("a client's cancellation reaches the tool (notifications/cancelled)", async () => {
    await connect('v1', a.url, () => a.stats().liveGetStreams);
    const abort = new AbortController();
    const call = client!.callTool('wait', { ms: 10_000 }, { signal: abort.signal });
    await eventually(() => expect(a.stats().startedTools).toContain('wait'));
    abort.abort('user');
    await expect(call).rejects.toThrow();
    await eventually(() => expect(a.stats().abortedTools).toContain('wait'));
    expect(a.stats().cancelledRequestIds.length).toBeGreaterThan(0);
  });
});

describe('dual-era target: v2 isLegacyRequest → sessionful 2025 leg, else createMcpHandler (server b)', () => {
  describe.each(LEGACY_CLIENTS)('%s client (2025 leg)', (kind) => {
    const FEATURES: Feature[] = [
      'form',
      'form (push)',
      'URL',
      '-32042',
      'sampling',
      'sampling (push)',
      'roots',
      'progress',
      'logging',
    ];

    test('negotiates 2025-11-25 on the sessionful leg', async () => {
      const before = b.stats().legacy.initializeCount;
      await connect(kind, b.url);
      expect(client!.version).toBe('2025-11-25');
      expect(b.stats().legacy.initializeCount).toBe(before + 1);
    });

    test.each(FEATURES)('%s', async (feature) => {
      await connect(kind, b.url, () => b.stats().legacy.liveGetStreams);
      await runCell(
        feature,
        client!,
        context(() => last(b.stats().legacy.logLevels)),
      );
    });
  });

  describe.each(MODERN_CLIENTS)('%s client (2026-07-28 leg)', (kind) => {
    const FEATURES: Feature[] = ['form', 'URL', 'sampling', 'roots', 'progress', 'logging'];

    test('negotiates 2026-07-28; the push-style and -32042 tools exist only on the 2025 leg', async () => {
      await connect(kind, b.url);
      expect(client!.version).toBe('2026-07-28');
      await expect(client!.callTool('deploy_push', { env: 'x' })).rejects.toThrow(/deploy_push/);
    });

    test.each(FEATURES)('%s', async (feature) => {
      await connect(kind, b.url);
      await runCell(
        feature,
        client!,
        context(() => last(b.stats().modern.calls)?.logLevel),
      );
    });

    test('no logLevel in _meta: no log messages at all', async () => {
      await connect(kind, b.url);
      expect((await client!.callTool('long_task', { steps: 1 })).text).toBe('finished 1 steps');
      expect(client!.logs).toEqual([]);
    });
  });
});

describe('2026-07-28-only target: v2 createMcpHandler, legacy rejected (server c)', () => {
  const FEATURES: Feature[] = ['form', 'URL', 'sampling', 'roots', 'progress', 'logging'];

  describe.each(MODERN_CLIENTS)('%s client', (kind) => {
    test.each(FEATURES)('%s', async (feature) => {
      await connect(kind, c.url);
      expect(client!.version).toBe('2026-07-28');
      await runCell(
        feature,
        client!,
        context(() => last(c.stats().modern.calls)?.logLevel),
      );
    });
  });

  test.each(LEGACY_CLIENTS)('a %s client cannot use it (initialize refused)', async (kind) => {
    await expect(connectClient(kind, c.url)).rejects.toThrow();
  });

  test('closing the request cancels it (2026-07-28 cancellation)', async () => {
    await connect('v2 pin 2026-07-28', c.url);
    const abort = new AbortController();
    const call = client!.callTool('wait', { ms: 10_000 }, { signal: abort.signal });
    await eventually(() => expect(c.stats().startedTools).toContain('wait (modern)'));
    abort.abort('user');
    await expect(call).rejects.toThrow();
    await eventually(() => expect(c.stats().abortedTools).toContain('wait (modern)'));
  });
});
