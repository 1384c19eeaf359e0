import { createMcpHandler, type McpHttpHandler, McpServer } from '@modelcontextprotocol/server';
import { startDemoTarget } from '../../examples/targets/demo-target';
import type { GatewayKind } from '../support/gateways';
import { type Json, post, type SseEvent, sseEvents } from '../support/mcp-http';
import { serveFetch } from '../support/servers/serve-fetch';
import { withGateway } from '../support/with-gateway';

/**
 * `subscriptions/listen` (2026-07-28) through the gateway: the gateway listens at each 2026-07-28
 * target that can honour part of the filter and acknowledges exactly what they acknowledged; what a
 * target announces reaches the listening client stamped with the client's subscription id, and only
 * that client; the stream ends with the `complete` result. The targets are official v2 SDK servers
 * whose own listen router (`createMcpHandler`) serves the listens; a 2025 target is aggregated too, and
 * left out of what is acknowledged.
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

function listenRequest(id: string, notifications: Json) {
  return {
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: {
      notifications,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientInfo': { name: 'listen-test', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
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
        { name: 'demo', url: t.demo.url, era: 'legacy' },
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
        demo: () => startDemoTarget(),
      },
    },
  );

  it('declares tools.listChanged in server/discover, as its 2026-07-28 targets do', async () => {
    const res = await post(
      gw.url,
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'server/discover' },
      { ...listenRequest('d', {}), method: 'server/discover', params: { _meta: listenRequest('d', {}).params._meta } },
    );
    const body = (await res.json()) as Json;
    expect(body.result.capabilities.tools).toEqual({ listChanged: true });
    // Only the 2025 demo target has resources: their changes reach 2025 sessions, not a listen.
    expect(body.result.capabilities.resources).toEqual({});
  });

  it("acknowledges exactly what the targets honour, and relays a target's change to the listening client only, stamped with its subscription id", async () => {
    const stop = new AbortController();
    const listening = await listen(
      gw.url,
      'listen-1',
      { toolsListChanged: true, resourceSubscriptions: ['demo://nowhere'] },
      stop.signal,
    );
    const other = await listen(gw.url, 'listen-2', { resourcesListChanged: true }, stop.signal);
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
      const listening = await listen(gw.url, 'listen-deadline', { toolsListChanged: true });
      expect(await listening.next()).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });
      const last = await listening.next();
      expect(last).toMatchObject({ id: 'listen-deadline', result: { resultType: 'complete' } });
      expect(await listening.next()).toBeUndefined();
    });
  }
});
