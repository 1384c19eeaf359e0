import type { ModernDeps } from '../../../lambda/modern/deps';
import { listenAtLegacyTarget } from '../../../lambda/modern/listen-at-legacy-target';
import type { ListenFilter } from '../../../lambda/modern/listen-filter';
import type { JSONRPCResponse } from '../../../lambda/protocol/jsonrpc';
import type {
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  LegacyClientCapabilities,
  ModernServerCapabilities,
} from '../../../lambda/protocol/types';
import type { LegacySession, LegacyTargetClient } from '../../../lambda/targets/legacy-client';
import type { SessionStreamListener } from '../../../lambda/targets/standalone-streams';
import { type FakeTarget, fakeTarget, modernDeps } from '../../support/modern-deps';

/**
 * A listen's part at a 2025 target (modern/listen-at-legacy-target.ts): a target session of its own,
 * declaring nothing; `resources/subscribe` for the URIs it serves; its GET stream relayed as far as the
 * filter asked; acknowledged as far as the InitializeResult and the subscriptions allow; ended (DELETE)
 * with the listen, and at once when nothing can be delivered.
 */

interface LegacyListenTarget {
  target: FakeTarget;
  deps: ModernDeps;
  initialized: Array<{ version: string; capabilities: LegacyClientCapabilities }>;
  requests: JSONRPCRequest[];
  sent: JSONRPCMessage[];
  ended: LegacySession[];
  streams: { open: number; closed: number; listener?: SessionStreamListener };
}

function legacyListenTarget(
  capabilities: ModernServerCapabilities,
  options: { sessionId?: string | null; refuses?: (uri: string) => boolean; refusesStreams?: boolean } = {},
): LegacyListenTarget {
  const session: LegacySession = {
    ...(options.sessionId === null ? {} : { targetSessionId: options.sessionId ?? 'listen-session' }),
    protocolVersion: '2025-11-25',
  };
  const out: Omit<LegacyListenTarget, 'target' | 'deps'> = {
    initialized: [],
    requests: [],
    sent: [],
    ended: [],
    streams: { open: 0, closed: 0 },
  };
  const client = {
    name: 'legacy',
    initialize: async (version: string, declared: LegacyClientCapabilities) => {
      out.initialized.push({ version, capabilities: declared });
      return { session, result: { protocolVersion: version, capabilities, serverInfo: { name: 'l', version: '1' } } };
    },
    request: async (_session: LegacySession, request: JSONRPCRequest): Promise<JSONRPCResponse> => {
      out.requests.push(request);
      const uri = String((request.params as { uri?: unknown } | undefined)?.uri);
      if (uri.includes('throws')) throw new Error('connection reset');
      return options.refuses?.(uri)
        ? { jsonrpc: '2.0', id: request.id, error: { code: -32602, message: 'no such resource' } }
        : { jsonrpc: '2.0', id: request.id, result: {} };
    },
    send: async (_session: LegacySession, message: JSONRPCMessage) => {
      out.sent.push(message);
    },
    terminate: async (ended: LegacySession) => {
      out.ended.push(ended);
    },
  } as unknown as LegacyTargetClient; // the part of the 2025 client a listen uses
  const target = fakeTarget('legacy', {
    era: 'legacy',
    capabilities,
    refusesStreams: options.refusesStreams,
    legacyClient: client,
    listen: async (_session, listener) => {
      out.streams.open++;
      out.streams.listener = listener;
      return {
        lastEventId: () => undefined,
        close: () => {
          out.streams.closed++;
        },
      };
    },
  });
  const { deps } = modernDeps([target]);
  return { ...out, target, deps };
}

const LISTS: ModernServerCapabilities = {
  tools: { listChanged: true },
  prompts: {},
  resources: { listChanged: true, subscribe: true },
};

function open(t: LegacyListenTarget, wanted: ListenFilter) {
  const relayed: JSONRPCNotification[] = [];
  const listening = listenAtLegacyTarget(
    t.deps,
    'legacy',
    wanted,
    (notification) => relayed.push(notification),
    new AbortController().signal,
  );
  return { listening, relayed };
}

const notification = (method: string, params?: Record<string, unknown>): JSONRPCNotification => ({
  jsonrpc: '2.0',
  method,
  ...(params ? { params } : {}),
});

describe('a listen at a 2025 target', () => {
  it('opens a session of its own declaring no capabilities, at the version spoken to 2025 targets', async () => {
    const t = legacyListenTarget(LISTS);
    await open(t, { toolsListChanged: true }).listening;
    expect(t.initialized).toEqual([{ version: '2025-11-25', capabilities: {} }]);
    expect(t.streams.open).toBe(1);
  });

  it('acknowledges the list changes its InitializeResult declares and the resources it accepted, never task ids', async () => {
    const t = legacyListenTarget(LISTS, { refuses: (uri) => uri.endsWith('missing') });
    const opened = await open(t, {
      toolsListChanged: true,
      promptsListChanged: true,
      resourceSubscriptions: ['legacy://a', 'legacy://missing', 'legacy://throws'],
      taskIds: ['t-1'],
    }).listening;
    expect(opened?.acknowledged).toEqual({ toolsListChanged: true, resourceSubscriptions: ['legacy://a'] });
    expect(t.requests.map((r) => [r.method, (r.params as { uri: string }).uri])).toEqual([
      ['resources/subscribe', 'legacy://a'],
      ['resources/subscribe', 'legacy://missing'],
      ['resources/subscribe', 'legacy://throws'],
    ]);
  });

  it('subscribes to nothing at a target that does not declare resources.subscribe', async () => {
    const t = legacyListenTarget({ tools: { listChanged: true }, resources: {} });
    const opened = await open(t, { toolsListChanged: true, resourceSubscriptions: ['legacy://a'] }).listening;
    expect(opened?.acknowledged).toEqual({ toolsListChanged: true });
    expect(t.requests).toEqual([]);
  });

  it('relays from the GET stream only what was asked and acknowledged', async () => {
    const t = legacyListenTarget(LISTS);
    const { listening, relayed } = open(t, { toolsListChanged: true, resourceSubscriptions: ['legacy://a'] });
    await listening;
    const listener = t.streams.listener!;
    listener.onNotification(notification('notifications/tools/list_changed'));
    listener.onNotification(notification('notifications/prompts/list_changed'));
    listener.onNotification(notification('notifications/resources/list_changed'));
    listener.onNotification(notification('notifications/resources/updated', { uri: 'legacy://a' }));
    listener.onNotification(notification('notifications/resources/updated', { uri: 'legacy://b' }));
    listener.onNotification(notification('notifications/message', { level: 'info', data: 'x' }));
    expect(relayed.map((n) => [n.method, n.params?.uri])).toEqual([
      ['notifications/tools/list_changed', undefined],
      ['notifications/resources/updated', 'legacy://a'],
    ]);
  });

  it('answers a request the target sends on the listen with -32601: nobody can be asked there', async () => {
    const t = legacyListenTarget(LISTS);
    const { listening, relayed } = open(t, { toolsListChanged: true });
    await listening;
    t.streams.listener!.onServerRequest({ jsonrpc: '2.0', id: 4, method: 'roots/list' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.sent).toEqual([expect.objectContaining({ id: 4, error: expect.objectContaining({ code: -32601 }) })]);
    expect(relayed).toEqual([]);
  });

  it('settles `gone` when the target forgets the session', async () => {
    const t = legacyListenTarget(LISTS);
    const opened = await open(t, { toolsListChanged: true }).listening;
    let gone = false;
    void opened?.gone.then(() => {
      gone = true;
    });
    t.streams.listener!.onGone();
    await new Promise((resolve) => setImmediate(resolve));
    expect(gone).toBe(true);
  });

  it('closes its stream and ends its session once, however often it is closed', async () => {
    const t = legacyListenTarget(LISTS);
    const opened = await open(t, { toolsListChanged: true }).listening;
    await Promise.all([opened?.close(), opened?.close()]);
    await opened?.close();
    expect([t.streams.closed, t.ended]).toEqual([
      1,
      [{ targetSessionId: 'listen-session', protocolVersion: '2025-11-25' }],
    ]);
  });
});

describe('a listen at a 2025 target that can deliver nothing', () => {
  it('is nothing at a target that keeps no session (no GET stream), and listens to nothing', async () => {
    const t = legacyListenTarget(LISTS, { sessionId: null });
    expect(await open(t, { toolsListChanged: true }).listening).toBeUndefined();
    expect(t.streams.open).toBe(0);
  });

  it('ends its session at once when the target declares none of what was asked', async () => {
    const t = legacyListenTarget({ tools: {}, prompts: { listChanged: true } });
    expect(await open(t, { toolsListChanged: true }).listening).toBeUndefined();
    expect([t.streams.open, t.ended.length]).toEqual([0, 1]);
  });

  it('asks a 2025 target nothing for task ids (its tasks have no status notifications): its session is ended at once', async () => {
    const t = legacyListenTarget(LISTS);
    expect(await open(t, { taskIds: ['t-1'] }).listening).toBeUndefined();
    expect([t.streams.open, t.ended.length]).toEqual([0, 1]);
  });

  it('ends its session when the target refuses GET streams (405 lately)', async () => {
    const t = legacyListenTarget(LISTS, { refusesStreams: true });
    expect(await open(t, { toolsListChanged: true }).listening).toBeUndefined();
    expect([t.streams.closed, t.ended.length]).toEqual([1, 1]);
  });

  it('ends its session when every subscription was refused and nothing else was asked', async () => {
    const t = legacyListenTarget(LISTS, { refuses: () => true });
    expect(await open(t, { resourceSubscriptions: ['legacy://a'] }).listening).toBeUndefined();
    expect(t.ended).toHaveLength(1);
  });

  it('ends its session and fails when listening fails after the session was opened', async () => {
    const t = legacyListenTarget(LISTS);
    t.target.listen = async () => {
      throw new Error('GET failed');
    };
    await expect(open(t, { toolsListChanged: true }).listening).rejects.toThrow('GET failed');
    expect(t.ended).toHaveLength(1);
  });

  it('is nothing for a target with no 2025 client', async () => {
    const t = legacyListenTarget(LISTS);
    t.target.legacyClient = undefined;
    expect(await open(t, { toolsListChanged: true }).listening).toBeUndefined();
    expect(t.initialized).toEqual([]);
  });
});
