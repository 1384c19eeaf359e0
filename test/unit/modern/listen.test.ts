import type { ModernDeps } from '../../../lambda/modern/deps';
import { LISTEN_ACK_WAIT_MS, SUBSCRIPTION_ID_META_KEY, serveListen } from '../../../lambda/modern/listen';
import type { ListenFilter } from '../../../lambda/modern/listen-filter';
import type { ModernRequest } from '../../../lambda/modern/validate';
import { META_KEYS } from '../../../lambda/protocol/meta';
import type { JSONRPCNotification, ModernServerCapabilities } from '../../../lambda/protocol/types';
import type { LegacyTargetClient } from '../../../lambda/targets/legacy-client';
import type { TargetCallOptions } from '../../../lambda/targets/target-link';
import { type Json, sseEvents } from '../../support/mcp-http';
import {
  FAKE_TIMERS,
  type FakeTarget,
  fakeTarget,
  modernCaller,
  modernDeps,
  SERVER_INFO,
  settledOnFakeTimers as settled,
  untilAborted,
} from '../../support/modern-deps';

/**
 * `subscriptions/listen` (modern/listen.ts, SEP-2575), against scripted 2026-07-28 targets: each target
 * is asked the part of the filter it can honour; the client's first event is an honest acknowledgement
 * (what the targets acknowledged, in the client's terms); notifications are relayed stamped with the
 * subscription id; the stream ends with a `complete` result — at once when nothing was acknowledged,
 * when every target's listen ended, or before the deadline. Time runs on jest's fake timers.
 */

const PRINCIPAL = 'alice';
const SUBSCRIPTION = 'listen-1';
const LISTS: ModernServerCapabilities = {
  tools: { listChanged: true },
  prompts: {},
  resources: { listChanged: true, subscribe: true },
};

type Send = (notification: JSONRPCNotification) => void;

/**
 * A 2026-07-28 target's own listen: acknowledges what `ack` makes of the filter it was asked for, then
 * hands the test a way to send on it, and listens until the gateway closes it (or `until` settles).
 */
function listeningTarget(
  name: string,
  capabilities: ModernServerCapabilities = LISTS,
  options: { ack?: (asked: ListenFilter) => ListenFilter | undefined; until?: Promise<void> } = {},
) {
  const senders: Send[] = [];
  const asked: ListenFilter[] = [];
  const signals: AbortSignal[] = [];
  const target = fakeTarget(name, {
    capabilities,
    handle: async (request, callOptions: TargetCallOptions) => {
      const filter = (request.params as { notifications: ListenFilter }).notifications;
      asked.push(filter);
      signals.push(callOptions.signal);
      const ack = (options.ack ?? ((f) => f))(filter);
      const send: Send = (n) => callOptions.onNotification?.(n);
      if (ack)
        send({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: ack } });
      senders.push(send);
      await Promise.race([untilAborted(callOptions.signal), options.until ?? new Promise(() => undefined)]);
      return { jsonrpc: '2.0', id: 0, result: { resultType: 'complete' } };
    },
  });
  return { target, senders, asked, signals };
}

function listen(
  deps: ModernDeps,
  filter: ListenFilter,
  options: { deadlineMs?: number; signal?: AbortSignal; principal?: string } = {},
) {
  let done = 0;
  const request: ModernRequest = {
    id: SUBSCRIPTION,
    method: 'subscriptions/listen',
    params: { notifications: filter },
    protocolVersion: '2026-07-28',
    clientCapabilities: {},
  };
  const response = serveListen(deps, request, filter, options.principal ?? PRINCIPAL, modernCaller(deps), {
    signal: options.signal ?? new AbortController().signal,
    deadline: Date.now() + (options.deadlineMs ?? 600_000),
    done: () => {
      done++;
    },
  });
  const events = sseEvents(response);
  /** The next JSON-RPC message of the stream (keep-alive comments skipped); undefined once it ended. */
  const next = async (): Promise<Json | undefined> =>
    settled(
      (async () => {
        for (;;) {
          const { value, done: over } = await events.next();
          if (over) return undefined;
          if (value.message) return value.message;
        }
      })(),
    );
  return { response, next, done: () => done, close: () => events.return(undefined) };
}

const acknowledgement = (notifications: ListenFilter) => ({
  jsonrpc: '2.0',
  method: 'notifications/subscriptions/acknowledged',
  params: { notifications, _meta: { [SUBSCRIPTION_ID_META_KEY]: SUBSCRIPTION } },
});

const COMPLETE = {
  jsonrpc: '2.0',
  id: SUBSCRIPTION,
  result: {
    resultType: 'complete',
    _meta: { [SUBSCRIPTION_ID_META_KEY]: SUBSCRIPTION, [META_KEYS.serverInfo]: SERVER_INFO },
  },
};

/** Runs the fake clock until `ready()` holds (looked at every 10 ms of fake time). */
function until(ready: () => boolean): Promise<void> {
  return settled(
    new Promise<void>((resolve) => {
      const look = setInterval(() => {
        if (!ready()) return;
        clearInterval(look);
        resolve();
      }, 10);
    }),
  );
}

beforeEach(() => jest.useFakeTimers(FAKE_TIMERS));
afterEach(() => jest.useRealTimers());

describe('a listen', () => {
  it('asks each 2026-07-28 target for the part its server/discover declares, and acknowledges what it acknowledged, stamped with the subscription id', async () => {
    const modern = listeningTarget('modern', { tools: { listChanged: true }, prompts: {} });
    const { deps } = modernDeps([modern.target]);
    const client = listen(deps, { toolsListChanged: true, promptsListChanged: true });
    expect(client.response.headers.get('content-type')).toBe('text/event-stream');
    expect(await client.next()).toEqual(acknowledgement({ toolsListChanged: true }));
    expect(modern.asked).toEqual([{ toolsListChanged: true }]);
    await client.close();
  });

  it('relays what a target sends after its acknowledgement, stamped with the subscription id, and tells the catalog of list changes', async () => {
    const modern = listeningTarget('modern');
    const { deps, catalog } = modernDeps([modern.target]);
    const client = listen(deps, { toolsListChanged: true });
    await client.next();
    modern.senders[0]!({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { mine: 1 } } });
    expect(await client.next()).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/tools/list_changed',
      params: { _meta: { mine: 1, [SUBSCRIPTION_ID_META_KEY]: SUBSCRIPTION } },
    });
    expect(catalog.noticed).toEqual([{ target: 'modern', method: 'notifications/tools/list_changed' }]);
    await client.close();
  });

  it('asks each target only for the resource URIs the catalog places at it, and acknowledges the ones it accepted', async () => {
    const one = listeningTarget('one');
    const two = listeningTarget('two', LISTS, {
      ack: (asked) => ({
        resourceSubscriptions: asked.resourceSubscriptions?.filter((uri) => uri !== 'two://refused'),
      }),
    });
    const { deps } = modernDeps([one.target, two.target]);
    const client = listen(deps, { resourceSubscriptions: ['one://a', 'two://b', 'two://refused', 'nowhere://c'] });
    expect(await client.next()).toEqual(acknowledgement({ resourceSubscriptions: ['one://a', 'two://b'] }));
    expect(one.asked).toEqual([{ resourceSubscriptions: ['one://a'] }]);
    expect(two.asked).toEqual([{ resourceSubscriptions: ['two://b', 'two://refused'] }]);
    await client.close();
  });

  it("asks a target for its own task ids and acknowledges them by the gateway's; relays their status with the gateway's id, drops others", async () => {
    const modern = listeningTarget('modern');
    const { deps } = modernDeps([modern.target]);
    const mine = deps.taskIds.seal({ target: 'modern', taskId: 't-1', principal: PRINCIPAL }, {});
    const foreign = deps.taskIds.seal({ target: 'modern', taskId: 't-2', principal: 'mallory' }, {});
    const client = listen(deps, { taskIds: [mine, foreign, 'made-up'] });
    expect(await client.next()).toEqual(acknowledgement({ taskIds: [mine] }));
    expect(modern.asked).toEqual([{ taskIds: ['t-1'] }]);
    modern.senders[0]!({ jsonrpc: '2.0', method: 'notifications/tasks', params: { taskId: 't-9', status: 'working' } });
    modern.senders[0]!({
      jsonrpc: '2.0',
      method: 'notifications/tasks',
      params: { taskId: 't-1', status: 'completed' },
    });
    expect(await client.next()).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/tasks',
      params: { taskId: mine, status: 'completed', _meta: { [SUBSCRIPTION_ID_META_KEY]: SUBSCRIPTION } },
    });
    await client.close();
  });

  it("relays nothing before the gateway's own acknowledgement, even from a target that acknowledged already", async () => {
    const fast = listeningTarget('fast');
    const silent = listeningTarget('silent', LISTS, { ack: () => undefined });
    const { deps } = modernDeps([fast.target, silent.target]);
    const client = listen(deps, { toolsListChanged: true });
    const first = client.next();
    await new Promise((resolve) => setImmediate(resolve));
    fast.senders[0]!({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { early: true } });
    expect(await first).toEqual(acknowledgement({ toolsListChanged: true }));
    fast.senders[0]!({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { early: false } });
    expect((await client.next())?.params?.early).toBe(false);
    await client.close();
  });

  it('acknowledges at most what the client asked for, whatever more a target acknowledged', async () => {
    const modern = listeningTarget('modern', LISTS, {
      ack: () => ({
        toolsListChanged: true,
        promptsListChanged: true,
        resourcesListChanged: true,
        resourceSubscriptions: ['modern://never-asked'],
        taskIds: ['t-never-asked'],
      }),
    });
    const { deps } = modernDeps([modern.target]);
    const client = listen(deps, { toolsListChanged: true });
    expect(await client.next()).toEqual(acknowledgement({ toolsListChanged: true }));
    await client.close();
  });

  it('drops, with a debug line, what a target sends outside what was acknowledged for it', async () => {
    const modern = listeningTarget('modern', LISTS, {
      ack: () => ({ toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['modern://b'] }),
    });
    const { deps } = modernDeps([modern.target]);
    const debug = jest.spyOn(deps.logger, 'debug').mockImplementation(() => undefined);
    try {
      const client = listen(deps, { toolsListChanged: true, resourceSubscriptions: ['modern://a'] });
      expect(await client.next()).toEqual(acknowledgement({ toolsListChanged: true }));
      const send = modern.senders[0]!;
      send({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' });
      send({ jsonrpc: '2.0', method: 'notifications/resources/list_changed' });
      send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'modern://b' } });
      send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'modern://a' } });
      send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hello' } });
      send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      expect((await client.next())?.method).toBe('notifications/tools/list_changed');
      const dropped = debug.mock.calls.filter(([message]) => message === 'a listen notification not subscribed to');
      expect(dropped.map(([, attributes]) => (attributes as { method: string }).method)).toEqual([
        'notifications/prompts/list_changed',
        'notifications/resources/list_changed',
        'notifications/resources/updated',
        'notifications/resources/updated',
        'notifications/message',
      ]);
      await client.close();
    } finally {
      debug.mockRestore();
    }
  });

  it('relays an updated resource the target acknowledged, and only that one', async () => {
    const modern = listeningTarget('modern');
    const { deps } = modernDeps([modern.target]);
    const client = listen(deps, { resourceSubscriptions: ['modern://a'] });
    expect(await client.next()).toEqual(acknowledgement({ resourceSubscriptions: ['modern://a'] }));
    modern.senders[0]!({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'modern://z' } });
    modern.senders[0]!({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'modern://a' } });
    expect((await client.next())?.params?.uri).toBe('modern://a');
    await client.close();
  });

  it('asks nothing of a target that can honour nothing of the filter', async () => {
    const modern = listeningTarget('modern', { tools: {} });
    const { deps } = modernDeps([modern.target]);
    const client = listen(deps, { toolsListChanged: true });
    expect(await client.next()).toEqual(acknowledgement({}));
    expect(modern.asked).toEqual([]);
  });
});

describe('the end of a listen', () => {
  it('comes at once, after an empty acknowledgement, when nothing was acknowledged', async () => {
    const modern = listeningTarget('modern', LISTS, { ack: () => ({}) });
    const { deps } = modernDeps([modern.target]);
    const started = Date.now();
    const client = listen(deps, { toolsListChanged: true });
    expect(await client.next()).toEqual(acknowledgement({}));
    expect(await client.next()).toEqual(COMPLETE);
    // At once: no waiting on the targets (fake time), let alone the deadline.
    expect(Date.now() - started).toBeLessThan(LISTEN_ACK_WAIT_MS);
    expect(await client.next()).toBeUndefined();
    expect(client.done()).toBe(1);
    expect(modern.signals[0]?.aborted).toBe(true);
  });

  it('leaves out a target silent for LISTEN_ACK_WAIT_MS, and closes its listen', async () => {
    const silent = listeningTarget('silent', LISTS, { ack: () => undefined });
    const talking = listeningTarget('talking', { prompts: { listChanged: true } });
    const { deps } = modernDeps([silent.target, talking.target]);
    const started = Date.now();
    const client = listen(deps, { toolsListChanged: true, promptsListChanged: true });
    expect(await client.next()).toEqual(acknowledgement({ promptsListChanged: true }));
    // It waited for the silent one as long as it may (fake time), then left it out and closed its listen.
    expect(Date.now() - started).toBeGreaterThanOrEqual(LISTEN_ACK_WAIT_MS);
    expect(silent.signals[0]?.aborted).toBe(true);
    expect(talking.signals[0]?.aborted).toBe(false);
    await client.close();
  });

  it('relays nothing of a target that acknowledges after the acknowledgement went out (the client was not told of it)', async () => {
    const late = listeningTarget('late', LISTS, { ack: () => undefined });
    const talking = listeningTarget('talking', { prompts: { listChanged: true } });
    const { deps } = modernDeps([late.target, talking.target]);
    const client = listen(deps, { toolsListChanged: true, promptsListChanged: true });
    await client.next();
    late.senders[0]!({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { toolsListChanged: true } },
    });
    late.senders[0]!({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    talking.senders[0]!({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' });
    expect((await client.next())?.method).toBe('notifications/prompts/list_changed');
    await client.close();
  });

  it("comes when every target's listen ended", async () => {
    let endListen!: () => void;
    const modern = listeningTarget('modern', LISTS, { until: new Promise((resolve) => (endListen = resolve)) });
    const { deps } = modernDeps([modern.target]);
    const client = listen(deps, { toolsListChanged: true });
    await client.next();
    endListen();
    expect(await client.next()).toEqual(COMPLETE);
    expect(client.done()).toBe(1);
  });

  it('comes 1.5 s before the deadline, closing the targets’ listens', async () => {
    const modern = listeningTarget('modern');
    const { deps } = modernDeps([modern.target]);
    const started = Date.now();
    const client = listen(deps, { toolsListChanged: true }, { deadlineMs: 10_000 });
    await client.next();
    await jest.advanceTimersByTimeAsync(8_400);
    expect(modern.signals[0]?.aborted).toBe(false);
    expect(await client.next()).toEqual(COMPLETE);
    // 1.5 s before the deadline (fake time; the clock moves in steps of 10 ms).
    expect(Date.now() - started).toBeLessThanOrEqual(8_510);
    expect(modern.signals[0]?.aborted).toBe(true);
  });

  it("comes when the client goes away: the targets' listens are closed", async () => {
    const modern = listeningTarget('modern');
    const { deps } = modernDeps([modern.target]);
    const client = listen(deps, { toolsListChanged: true });
    await client.next();
    await client.close();
    await until(() => client.done() > 0);
    expect(modern.signals[0]?.aborted).toBe(true);
    expect(client.done()).toBe(1);
  });
});

describe('a listen reaching a 2025 target', () => {
  /** A 2025 target whose listen session opens after `initializeMs` (fake time). */
  function legacyTarget(initializeMs = 0) {
    const legacy: FakeTarget = fakeTarget('legacy', { era: 'legacy', capabilities: LISTS });
    const ended: unknown[] = [];
    const listening: { listener?: { onNotification(n: JSONRPCNotification): void } } = {};
    legacy.legacyClient = {
      name: 'legacy',
      initialize: async () => {
        await new Promise((resolve) => setTimeout(resolve, initializeMs));
        return {
          session: { targetSessionId: 'own-session', protocolVersion: '2025-11-25' },
          result: { protocolVersion: '2025-11-25', capabilities: LISTS, serverInfo: { name: 'l', version: '1' } },
        };
      },
      terminate: async (session: unknown) => {
        ended.push(session);
      },
    } as unknown as LegacyTargetClient; // the part of the 2025 client a listen uses
    legacy.listen = async (_session, owner) => {
      listening.listener = owner;
      return { lastEventId: () => undefined, close: () => undefined };
    };
    return { legacy, ended, listening };
  }

  it('acknowledges what its own target session can deliver, relays it, and ends that session before the stream ends', async () => {
    const { legacy, ended, listening } = legacyTarget();
    const { deps } = modernDeps([legacy]);
    const stop = new AbortController();
    const client = listen(deps, { toolsListChanged: true, promptsListChanged: true }, { signal: stop.signal });
    expect(await client.next()).toEqual(acknowledgement({ toolsListChanged: true }));
    listening.listener!.onNotification({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    expect((await client.next())?.method).toBe('notifications/tools/list_changed');
    stop.abort();
    expect(await client.next()).toEqual(COMPLETE);
    expect(ended).toEqual([{ targetSessionId: 'own-session', protocolVersion: '2025-11-25' }]);
  });

  it('leaves out a 2025 target whose session opened too late for the acknowledgement, and ends that session', async () => {
    const { legacy, ended } = legacyTarget(LISTEN_ACK_WAIT_MS + 500);
    const modern = listeningTarget('modern', { prompts: { listChanged: true } });
    const { deps } = modernDeps([legacy, modern.target]);
    const started = Date.now();
    const client = listen(deps, { toolsListChanged: true, promptsListChanged: true });
    expect(await client.next()).toEqual(acknowledgement({ promptsListChanged: true }));
    await until(() => ended.length > 0);
    expect(ended).toEqual([{ targetSessionId: 'own-session', protocolVersion: '2025-11-25' }]);
    // Ended as soon as it opened (fake time), not with the listen.
    expect(Date.now() - started).toBeLessThan(LISTEN_ACK_WAIT_MS + 1_000);
    await client.close();
  });
});
