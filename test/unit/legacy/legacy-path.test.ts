import { ANONYMOUS_IDENTITY } from '../../../lambda/auth/identity';
import { CLIENT_STREAM_KEY } from '../../../lambda/legacy/client-stream';
import {
  handleLegacyDelete,
  handleLegacyGet,
  handleLegacyPost,
  handleLegacyResume,
  type LegacyInput,
} from '../../../lambda/legacy/legacy-path';
import { resumeProofKey } from '../../../lambda/legacy/release-policy';
import { SessionCache } from '../../../lambda/legacy/session-cache';
import type { ClientMessage } from '../../../lambda/protocol/jsonrpc';
import { systemClock } from '../../../lambda/scheduling/clock';
import { newPendingRecord } from '../../../lambda/state/records';
import type { SessionRecord } from '../../../lambda/state/store';
import { exchange, legacyDeps, storedSession, targetSession } from '../../support/legacy-deps';

/**
 * The 2025 path's entry (legacy/legacy-path.ts) with scripted targets and the memory store:
 * initialize and its session, the session read and its refusals (400 without an id, 404 for one that
 * is not the caller's, 400 for a version it does not serve), an expired session ended as DELETE ends
 * one, answers taken before the read, the read-ahead of a recent session, GET and DELETE.
 */

type Input = LegacyInput;

function inputOf(
  t: ReturnType<typeof legacyDeps>,
  message: ClientMessage,
  headers: Record<string, string> = {},
  principal = 'alice',
): Input {
  return {
    deps: t.deps,
    message,
    accept: { json: true, sse: true },
    exchange: exchange(),
    principal,
    identity: ANONYMOUS_IDENTITY,
    headers: new Headers(headers),
  };
}

const initialize = (params: Record<string, unknown>): ClientMessage => ({
  kind: 'request',
  message: { jsonrpc: '2.0', id: 'init', method: 'initialize', params },
});
const ping: ClientMessage = { kind: 'request', message: { jsonrpc: '2.0', id: 1, method: 'ping' } };
const callTool: ClientMessage = {
  kind: 'request',
  message: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'demo___echo', arguments: {} } },
};
const clientInfo = { name: 'unit-client', version: '1.0.0' };

/** Some turns of the event loop (what a slow read takes, in a test). */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

async function json(response: Response): Promise<Record<string, any>> {
  return (await response.json()) as Record<string, any>;
}

describe('initialize', () => {
  it('opens a session of the requested version for the principal, expiring after sessionTimeoutSeconds', async () => {
    const t = legacyDeps({ sessionTimeoutSeconds: 1800 });
    const before = Math.floor(Date.now() / 1000);
    const response = await handleLegacyPost(
      inputOf(t, initialize({ protocolVersion: '2025-06-18', capabilities: { roots: {} }, clientInfo })),
    );
    expect(response.status).toBe(200);
    const sessionId = response.headers.get('mcp-session-id');
    expect(sessionId).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const body = await json(response);
    expect(body).toMatchObject({
      id: 'init',
      result: { protocolVersion: '2025-06-18', serverInfo: { name: 'mcp-gateway' } },
    });
    const stored = await t.store.loadSession(sessionId!);
    expect(stored?.session).toMatchObject({
      principal: 'alice',
      protocolVersion: '2025-06-18',
      clientCapabilities: { roots: {} },
      clientInfo,
    });
    expect(stored!.session.expiresAt - stored!.session.createdAt).toBe(1800);
    expect(stored!.session.createdAt).toBeGreaterThanOrEqual(before);
  });

  it('answers a version it does not serve with its newest: the client decides whether it can go on', async () => {
    const t = legacyDeps();
    const body = await json(
      await handleLegacyPost(inputOf(t, initialize({ protocolVersion: '2024-01-01', capabilities: {} }))),
    );
    expect(body.result.protocolVersion).toBe('2025-11-25');
  });

  it('declares list changes and subscriptions only when a GET stream can carry them', async () => {
    const withStream = legacyDeps({ clientStreamHoldSeconds: 5 });
    const on = await json(
      await handleLegacyPost(inputOf(withStream, initialize({ protocolVersion: '2025-11-25', capabilities: {} }))),
    );
    expect(on.result.capabilities).toEqual({
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      completions: {},
      logging: {},
    });
    const without = legacyDeps({ clientStreamHoldSeconds: 0 });
    const off = await json(
      await handleLegacyPost(inputOf(without, initialize({ protocolVersion: '2025-11-25', capabilities: {} }))),
    );
    expect(off.result.capabilities.resources).toEqual({ subscribe: false, listChanged: false });
    expect(off.result.capabilities.tools).toEqual({ listChanged: false });
  });

  it('refuses params without protocolVersion and capabilities: 400, no session', async () => {
    const t = legacyDeps();
    const response = await handleLegacyPost(inputOf(t, initialize({ protocolVersion: '2025-11-25' })));
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({ id: 'init', error: { code: -32602 } });
    expect(t.store.itemCount()).toBe(0);
  });

  it('is refused by a gateway that serves only the stateless protocol', async () => {
    const t = legacyDeps({ supportedVersions: ['2026-07-28'] });
    const response = await handleLegacyPost(
      inputOf(t, initialize({ protocolVersion: '2025-11-25', capabilities: {} })),
    );
    expect(response.status).toBe(400);
    expect((await json(response)).error.message).toContain('only the stateless protocol');
  });

  it("past the principal's session cap: 429 with Retry-After, no session stored", async () => {
    const t = legacyDeps({ maxSessionsPerPrincipal: 1 });
    const init = () => handleLegacyPost(inputOf(t, initialize({ protocolVersion: '2025-11-25', capabilities: {} })));
    expect((await init()).status).toBe(200);
    const refused = await init();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const createSession = jest.spyOn(t.store, 'createSession');
    await init();
    expect(createSession).not.toHaveBeenCalled();
  });

  it('gives back the counted slot when the session cannot be stored: 503, and the next initialize is admitted', async () => {
    const t = legacyDeps({ maxSessionsPerPrincipal: 1 });
    jest.spyOn(t.store, 'createSession').mockRejectedValueOnce(new Error('DynamoDB is down'));
    const init = () => handleLegacyPost(inputOf(t, initialize({ protocolVersion: '2025-11-25', capabilities: {} })));
    expect((await init()).status).toBe(500);
    expect((await init()).status).toBe(200);
  });

  it('a client this principal was seen resuming with before is trusted from its first call', async () => {
    const t = legacyDeps();
    await t.store.markClientResumes('earlier-session', {
      key: resumeProofKey('alice', clientInfo),
      expiresAt: Math.floor(Date.now() / 1000) + 60,
    });
    const response = await handleLegacyPost(
      inputOf(t, initialize({ protocolVersion: '2025-11-25', capabilities: {}, clientInfo })),
    );
    const stored = await t.store.loadSession(response.headers.get('mcp-session-id')!);
    expect(stored?.session.clientResumes).toBe(true);
    // Another principal with the same client is not.
    const other = await handleLegacyPost(
      inputOf(t, initialize({ protocolVersion: '2025-11-25', capabilities: {}, clientInfo }), {}, 'bob'),
    );
    expect((await t.store.loadSession(other.headers.get('mcp-session-id')!))?.session.clientResumes).toBeUndefined();
  });

  it("declares tasks to a client that has tasks, as far as the session's targets declared them", async () => {
    const t = legacyDeps();
    t.fake.links.get('demo')!.capabilities = { tasks: { list: {} } };
    const withTasks = await json(
      await handleLegacyPost(inputOf(t, initialize({ protocolVersion: '2025-11-25', capabilities: { tasks: {} } }))),
    );
    expect(withTasks.result.capabilities.tasks).toEqual({ list: {} });
    const without = await json(
      await handleLegacyPost(inputOf(t, initialize({ protocolVersion: '2025-11-25', capabilities: {} }))),
    );
    expect(without.result.capabilities.tasks).toBeUndefined();
    expect(t.fake.opened).toHaveLength(1); // only the client with tasks waited for the targets
  });
});

describe('a message within a session', () => {
  async function withSession(change: Partial<SessionRecord> = {}, config: Parameters<typeof legacyDeps>[0] = {}) {
    const t = legacyDeps(config);
    const loaded = await storedSession(t.store, change, [targetSession('demo')]);
    return { ...t, loaded, headers: { 'mcp-session-id': loaded.session.id } };
  }

  it('without a session id: 400, nothing read', async () => {
    const t = legacyDeps();
    const reads = jest.spyOn(t.store, 'loadSession');
    const response = await handleLegacyPost(inputOf(t, ping));
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({
      id: 1,
      error: { message: expect.stringContaining('Mcp-Session-Id') },
    });
    expect(reads).not.toHaveBeenCalled();
  });

  it("of an unknown session, or another principal's: 404, the same answer", async () => {
    const t = await withSession();
    const unknown = await handleLegacyPost(inputOf(t, ping, { 'mcp-session-id': 'no-such-session' }));
    const others = await handleLegacyPost(inputOf(t, ping, t.headers, 'mallory'));
    expect([unknown.status, others.status]).toEqual([404, 404]);
    expect((await json(others)).error.message).toBe((await json(unknown)).error.message);
  });

  it('with an MCP-Protocol-Version the gateway does not serve: 400, before the session is read', async () => {
    const t = await withSession();
    const reads = jest.spyOn(t.store, 'loadSession');
    const response = await handleLegacyPost(inputOf(t, ping, { ...t.headers, 'mcp-protocol-version': '1999-01-01' }));
    expect(response.status).toBe(400);
    expect((await json(response)).error.data).toMatchObject({ requested: '1999-01-01' });
    expect(reads).not.toHaveBeenCalled();
  });

  it('with another version the gateway serves: read by the negotiated one, and served', async () => {
    const t = await withSession();
    const response = await handleLegacyPost(inputOf(t, ping, { ...t.headers, 'mcp-protocol-version': '2025-03-26' }));
    expect(await json(response)).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });

  it('of a session that expired but is still stored: 404, and it is ended as DELETE ends one', async () => {
    const t = await withSession({ expiresAt: Math.floor(Date.now() / 1000) - 1 });
    const response = await handleLegacyPost(inputOf(t, ping, t.headers));
    expect(response.status).toBe(404);
    expect(t.fake.terminated.map((x) => x.session.targetSessionId)).toEqual(['demo-session']);
    expect(t.store.keysOf(t.loaded.session.id)).toEqual([]);
  });

  it('a store that cannot be read: 503 with the request id', async () => {
    const t = await withSession();
    t.store.down = true;
    const response = await handleLegacyPost(inputOf(t, ping, t.headers));
    expect(response.status).toBe(503);
    expect((await json(response)).id).toBe(1);
  });

  it('a relayed call reads the pending count with the session (the per-session cap without a Query of its own)', async () => {
    const t = await withSession();
    const reads = jest.spyOn(t.store, 'loadSession');
    await handleLegacyPost(inputOf(t, callTool, t.headers));
    expect(reads.mock.calls[0]?.[2]).toMatchObject({ withPending: true });
    await handleLegacyPost(inputOf(t, ping, t.headers));
    expect(reads.mock.calls[1]?.[2]).toMatchObject({ withPending: false });
  });

  it('an answer to a request a live holder holds is recorded before anything is read: 202', async () => {
    const t = await withSession();
    const record = newPendingRecord(Date.now(), 300, {
      kind: 'relayed',
      method: 'elicitation/create',
      target: 'demo',
      clientRequestId: 2,
      targetRequestId: 0,
      session: t.loaded.session,
    });
    await t.store.putPending(t.loaded.session, record);
    const reads = jest.spyOn(t.store, 'loadForAnswer');
    const answer: ClientMessage = {
      kind: 'response',
      message: { jsonrpc: '2.0', id: record.gatewayId, result: { action: 'decline' } },
    };
    expect((await handleLegacyPost(inputOf(t, answer, t.headers))).status).toBe(202);
    expect(reads).not.toHaveBeenCalled();
  });

  it("any other answer reads the session with its one record; another principal's gets 404", async () => {
    const t = await withSession();
    const answer: ClientMessage = {
      kind: 'response',
      message: { jsonrpc: '2.0', id: 'gw-Dnothingnothingnothing', result: {} },
    };
    const reads = jest.spyOn(t.store, 'loadForAnswer');
    expect((await handleLegacyPost(inputOf(t, answer, t.headers))).status).toBe(400);
    expect(reads).toHaveBeenCalledWith(t.loaded.session.id, 'gw-Dnothingnothingnothing');
    expect((await handleLegacyPost(inputOf(t, answer, t.headers, 'mallory'))).status).toBe(404);
  });
});

describe('the read-ahead of a session read in the last minute', () => {
  async function cached() {
    const t = legacyDeps();
    const cache = new SessionCache(systemClock);
    t.deps.sessionCache = cache;
    const loaded = await storedSession(t.store, {}, [targetSession('demo')]);
    cache.put(loaded);
    return { ...t, cache, loaded, headers: { 'mcp-session-id': loaded.session.id } };
  }

  it('starts the call with what was read before, and answers it once the read confirmed the session', async () => {
    const t = await cached();
    const order: string[] = [];
    let targetCalled!: () => void;
    const called = new Promise<void>((resolve) => {
      targetCalled = resolve;
    });
    const load = t.store.loadSession.bind(t.store);
    jest.spyOn(t.store, 'loadSession').mockImplementation(async (...args) => {
      // The read returns once the target was called, or after a while when it never is before the read.
      await Promise.race([called, turns(50)]);
      order.push('read');
      return load(...args);
    });
    t.fake.links.get('demo')!.script = async (request) => {
      order.push('target called');
      targetCalled();
      return { jsonrpc: '2.0', id: request.id ?? 0, result: { content: [] } };
    };
    const response = await handleLegacyPost(inputOf(t, callTool, t.headers));
    expect(await json(response)).toEqual({ jsonrpc: '2.0', id: 2, result: { content: [] } });
    expect(order).toEqual(['target called', 'read']);
  });

  it('a session found gone by the read: 404, the call stopped (its target told through its abort), the cache forgets it', async () => {
    const t = await cached();
    await t.store.deleteSession(t.loaded.session.id);
    let aborted: unknown;
    t.fake.links.get('demo')!.script = (request, options) =>
      new Promise((resolve) => {
        options.signal.addEventListener('abort', () => {
          aborted = options.signal.reason;
          resolve({ jsonrpc: '2.0', id: request.id ?? 0, error: { code: -32800, message: 'cancelled' } });
        });
      });
    const response = await handleLegacyPost(inputOf(t, callTool, t.headers));
    expect(response.status).toBe(404);
    expect(aborted).toBeDefined();
    expect(t.cache.get(t.loaded.session.id, 'alice')).toBeUndefined();
  });

  it("is not used for another principal's request: 404, the target never called", async () => {
    const t = await cached();
    const reads = jest.spyOn(t.store, 'loadSession');
    expect((await handleLegacyPost(inputOf(t, callTool, t.headers, 'mallory'))).status).toBe(404);
    expect(t.fake.links.get('demo')!.calls).toEqual([]);
    expect(reads).toHaveBeenCalledTimes(1);
  });
});

describe('GET and DELETE of a session', () => {
  const bare = (t: ReturnType<typeof legacyDeps>, headers: Record<string, string>, principal = 'alice') => ({
    deps: t.deps,
    exchange: exchange(),
    principal,
    identity: ANONYMOUS_IDENTITY,
    headers: new Headers(headers),
  });

  it('GET without text/event-stream in Accept: 406, nothing read', async () => {
    const t = legacyDeps();
    const reads = jest.spyOn(t.store, 'loadSession');
    const response = await handleLegacyGet(bare(t, { accept: 'application/json', 'mcp-session-id': 's' }));
    expect(response.status).toBe(406);
    expect(reads).not.toHaveBeenCalled();
  });

  it('GET with an MCP-Protocol-Version the gateway does not serve: 400, nothing read', async () => {
    const t = legacyDeps();
    const reads = jest.spyOn(t.store, 'loadSession');
    const response = await handleLegacyGet(
      bare(t, { accept: 'text/event-stream', 'mcp-session-id': 's', 'mcp-protocol-version': '2024-11-05' }),
    );
    expect(response.status).toBe(400);
    expect(reads).not.toHaveBeenCalled();
  });

  it("GET of another principal's session: 404; of one's own: the session's stream", async () => {
    const t = legacyDeps();
    const loaded = await storedSession(t.store, {}, [targetSession('demo')]);
    const headers = { accept: 'text/event-stream', 'mcp-session-id': loaded.session.id };
    expect((await handleLegacyGet(bare(t, headers, 'mallory'))).status).toBe(404);
    const response = await handleLegacyGet(bare(t, headers));
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    // Its client leaves; the stream ends.
    await response.body?.cancel();
  });

  it('DELETE removes the partition, gives back the counted slot, ends the target sessions and the GET stream here', async () => {
    const t = legacyDeps({ maxSessionsPerPrincipal: 1 });
    const init = await handleLegacyPost(inputOf(t, initialize({ protocolVersion: '2025-11-25', capabilities: {} })));
    const sessionId = init.headers.get('mcp-session-id')!;
    const loaded = await t.store.loadSession(sessionId);
    await t.store.putTargetSession(loaded!.session, targetSession('demo'));
    const ended: string[] = [];
    t.deps.activeCalls.register(sessionId, CLIENT_STREAM_KEY, {
      cancelByClient: () => ended.push('GET'),
      shutdown: async () => undefined,
    });
    const response = await handleLegacyDelete(bare(t, { 'mcp-session-id': sessionId }));
    expect(response.status).toBe(200);
    expect(t.store.keysOf(sessionId)).toEqual([]);
    expect(ended).toEqual(['GET']);
    expect(t.fake.terminated.map((x) => x.target)).toEqual(['demo']);
    // The slot is free again: a new session is admitted.
    expect(
      (await handleLegacyPost(inputOf(t, initialize({ protocolVersion: '2025-11-25', capabilities: {} })))).status,
    ).toBe(200);
  });

  it('DELETE of a session that cannot be removed: the store error, the session left in place', async () => {
    const t = legacyDeps();
    const loaded = await storedSession(t.store);
    jest.spyOn(t.store, 'deleteSession').mockRejectedValueOnce(new Error('DynamoDB is down'));
    const response = await handleLegacyDelete(bare(t, { 'mcp-session-id': loaded.session.id }));
    expect(response.status).toBe(500);
    expect(await t.store.loadSession(loaded.session.id)).toBeDefined();
  });

  it("a resume of a session that is not the caller's: 404, its stream log not read", async () => {
    const t = legacyDeps();
    const loaded = await storedSession(t.store);
    const reads = jest.spyOn(t.store, 'readStream');
    const response = await handleLegacyResume({
      ...bare(t, { 'mcp-session-id': loaded.session.id }, 'mallory'),
      lastEventId: 'streamAAAAAAAAAA.1',
    });
    expect(response.status).toBe(404);
    expect(reads).not.toHaveBeenCalled();
  });
});
