import { createMcpHandler, type McpHttpHandler, McpServer } from '@modelcontextprotocol/server';
import type { GatewayKind } from '../support/gateways';
import { listenRequest } from '../support/listen-client';
import { eventually, type Json, post, type SseEvent, sseEvents } from '../support/mcp-http';
import { serveFetch } from '../support/servers/serve-fetch';
import { startV1NotifyingServer } from '../support/servers/v1-notifying-server';
import { withGateway } from '../support/with-gateway';

/**
 * `subscriptions/listen` (2026-07-28) through the gateway: the gateway listens at each 2026-07-28
 * target that can honour part of the filter and acknowledges exactly what they acknowledged; what a
 * target announces reaches the listening client stamped with the client's subscription id, and only
 * that client; the stream ends with the `complete` result. The targets are official v2 SDK servers
 * whose own listen router (`createMcpHandler`) serves the listens. A 2025 target (an official v1 SDK
 * server) has no listen: the gateway opens a target session of the listen's own there, subscribes to
 * the resources asked for, relays what the target sends on that session's GET stream, and ends the
 * session with the listen; a 2025 target that refuses GET streams (405) can deliver nothing, and is left
 * out of what is acknowledged.
 */

jest.setTimeout(30_000);

const MODERN = '2026-07-28';
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const KINDS: GatewayKind[] = ['local server', 'lambda runtime'];

/** A v2 SDK server with a tool and a prompt (the SDK declares their listChanged): `toolsChanged()` announces. */
async function startChangingServer(name: string) {
  const handler: McpHttpHandler = createMcpHandler(
    () => {
      const server = new McpServer({ name, version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
      server.registerTool('ping', { description: 'answers pong' }, async () => ({
        content: [{ type: 'text', text: 'pong' }],
      }));
      server.registerPrompt('hello', { description: 'a prompt' }, async () => ({
        messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }],
      }));
      return server;
    },
    { legacy: 'reject', onerror: () => undefined },
  );
  const served = await serveFetch((request) => handler.fetch(request));
  return {
    url: served.url,
    toolsChanged: () => handler.notify.toolsChanged(),
    close: async () => {
      await handler.close().catch(() => undefined);
      await served.close();
    },
  };
}

/** Opens a listen; its events read one by one (`next()` undefined once the stream ended). */
async function listen(url: string, id: string, notifications: Json, signal?: AbortSignal) {
  const res = await post(
    url,
    { 'mcp-protocol-version': MODERN, 'mcp-method': 'subscriptions/listen' },
    listenRequest(id, notifications),
    signal,
  );
  const events = sseEvents(res)[Symbol.asyncIterator]();
  return {
    res,
    async next(): Promise<Json | undefined> {
      for (;;) {
        const { done, value } = await events.next();
        if (done) return undefined;
        if ((value as SseEvent).message) return (value as SseEvent).message;
      }
    },
  };
}

describe.each(KINDS)('subscriptions/listen through the %s', (kind) => {
  const gw = withGateway(
    (t) => ({
      targets: [
        { name: 'one', url: t.one.url, era: 'modern' },
        { name: 'two', url: t.two.url, era: 'modern' },
        { name: 'notes', url: t.notes.url, era: 'legacy' },
        { name: 'quiet', url: t.quiet.url, era: 'legacy' },
      ],
      logLevel: 'SILENT',
    }),
    {
      kind,
      // A function timeout the listen must end before (with its complete result).
      timeoutMs: kind === 'lambda runtime' ? 6000 : undefined,
      targets: {
        one: () => startChangingServer('one'),
        two: () => startChangingServer('two'),
        notes: () => startV1NotifyingServer(),
        quiet: () => startV1NotifyingServer({ getStream: false }),
      },
    },
  );

  it('declares listChanged and subscribe in server/discover as far as its targets do (2025 ones too)', async () => {
    const res = await post(
      gw.url,
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'server/discover' },
      { ...listenRequest('d', {}), method: 'server/discover', params: { _meta: listenRequest('d', {}).params._meta } },
    );
    const body = (await res.json()) as Json;
    expect(body.result.capabilities.tools).toEqual({ listChanged: true });
    // Only the 2025 targets have resources: their changes reach a listen through the targets' GET streams.
    expect(body.result.capabilities.resources).toEqual({ listChanged: true, subscribe: true });
  });

  it("acknowledges exactly what the targets honour, and relays a target's change to the listening client only, stamped with its subscription id", async () => {
    const stop = new AbortController();
    const listening = await listen(
      gw.url,
      'listen-1',
      { toolsListChanged: true, resourceSubscriptions: ['demo://nowhere'] },
      stop.signal,
    );
    const other = await listen(gw.url, 'listen-2', { resourceSubscriptions: ['demo://nowhere'] }, stop.signal);
    try {
      expect(listening.res.headers.get('content-type')).toContain('text/event-stream');
      const ack = await listening.next();
      expect(ack).toMatchObject({
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: { toolsListChanged: true }, _meta: { [SUBSCRIPTION_ID]: 'listen-1' } },
      });
      expect(ack?.params.notifications).not.toHaveProperty('resourceSubscriptions');
      // Nothing is honoured for the other client: acknowledged empty, and its stream completes at once.
      expect(await other.next()).toMatchObject({ params: { notifications: {} } });
      expect(await other.next()).toMatchObject({ id: 'listen-2', result: { resultType: 'complete' } });

      gw.targets.two.toolsChanged();
      expect(await listening.next()).toMatchObject({
        method: 'notifications/tools/list_changed',
        params: { _meta: { [SUBSCRIPTION_ID]: 'listen-1' } },
      });
    } finally {
      stop.abort();
    }
  });

  it("a 2025 target: a session of the listen's own, subscribed to what was asked; its GET stream's resource update and list change reach the client stamped; the session ends with the listen", async () => {
    const stop = new AbortController();
    const notes = gw.targets.notes;
    const sessionsBefore = notes.stats().sessions;
    const quietDeletedBefore = gw.targets.quiet.stats().deletedSessions.length;
    const listening = await listen(
      gw.url,
      'listen-3',
      { resourcesListChanged: true, resourceSubscriptions: ['note://greeting'] },
      stop.signal,
    );
    try {
      expect(await listening.next()).toMatchObject({
        method: 'notifications/subscriptions/acknowledged',
        params: {
          notifications: { resourcesListChanged: true, resourceSubscriptions: ['note://greeting'] },
          _meta: { [SUBSCRIPTION_ID]: 'listen-3' },
        },
      });
      // The listen's own target session, the only one subscribed to the resource.
      const own = notes.stats().sessions.filter((id) => !sessionsBefore.includes(id));
      expect(own).toHaveLength(1);
      const subscribed = Object.entries(notes.stats().subscribed).filter(([, uris]) =>
        uris.includes('note://greeting'),
      );
      expect(subscribed.map(([id]) => id)).toEqual(own);
      // The target that refuses GET streams could deliver nothing: its session was ended at once.
      expect(gw.targets.quiet.stats().deletedSessions.length).toBe(quietDeletedBefore + 1);

      await notes.touch('note://greeting');
      expect(await listening.next()).toMatchObject({
        method: 'notifications/resources/updated',
        params: { uri: 'note://greeting', _meta: { [SUBSCRIPTION_ID]: 'listen-3' } },
      });
      await notes.announce('resources');
      expect(await listening.next()).toMatchObject({
        method: 'notifications/resources/list_changed',
        params: { _meta: { [SUBSCRIPTION_ID]: 'listen-3' } },
      });
    } finally {
      stop.abort();
    }
    // The client closed the listen: the gateway ended the target session it had opened for it. In the
    // Lambda runtime nothing tells the function that its client left: the listen ends before the
    // function's deadline (6 s), so the bound covers a whole invocation.
    const own = notes.stats().sessions.filter((id) => !sessionsBefore.includes(id));
    await eventually(() => expect(notes.stats().deletedSessions).toEqual(expect.arrayContaining(own)), 15_000);
  });

  it('refuses a listen without a filter (-32602) before any stream', async () => {
    const res = await post(
      gw.url,
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'subscriptions/listen' },
      { ...listenRequest('bad', {}), params: { _meta: listenRequest('bad', {}).params._meta } },
    );
    const body = (await res.json()) as Json;
    expect(body.error.code).toBe(-32602);
  });

  if (kind === 'lambda runtime') {
    it('ends with the complete result before the function deadline', async () => {
      const sessionsBefore = gw.targets.notes.stats().sessions;
      const listening = await listen(gw.url, 'listen-deadline', { toolsListChanged: true });
      expect(await listening.next()).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });
      const last = await listening.next();
      expect(last).toMatchObject({ id: 'listen-deadline', result: { resultType: 'complete' } });
      expect(await listening.next()).toBeUndefined();
      // The 2025 target's session of this listen was ended before the stream was (nothing runs after it).
      const own = gw.targets.notes.stats().sessions.filter((id) => !sessionsBefore.includes(id));
      expect(own).toHaveLength(1);
      expect(gw.targets.notes.stats().deletedSessions).toEqual(expect.arrayContaining(own));
    });
  }
});
