import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { type GatewayUnderTest, startGateway } from '../support/gateways';
import { eventually, initSession, type Json, post, sessionItems, sseEvents } from '../support/mcp-http';
import { startV1NotifyingServer, type V1NotifyingServer } from '../support/servers/v1-notifying-server';

/**
 * A 2025 client's standalone GET stream through the gateway: what targets (real v1 SDK servers) send
 * outside calls reaches the client — list changes, resource updates after `resources/subscribe`,
 * log messages, and requests tied to no call, whose answer reaches the target from another instance.
 * Two local gateway instances share one DynamoDB; the official v1 client opens its GET stream by
 * itself after initialize.
 */

// Held long and retried soon (not the polling defaults: 5 s, then 30 s away), so a test sees one stream.
const CONFIG = {
  logLevel: 'SILENT' as const,
  pendingRequestTimeoutSeconds: 30,
  clientStreamHoldSeconds: 60,
  clientStreamRetryMs: 1000,
};

/** A v1 client whose GET stream goes to `getUrl` and every POST/DELETE to `postUrl` (two instances). */
async function connectV1(getUrl: string, postUrl: string, capabilities: Json = {}) {
  const gets: number[] = [];
  const routed: typeof fetch = async (_input, init) => {
    const isGet = (init?.method ?? 'GET') === 'GET';
    if (isGet) gets.push(Date.now());
    return fetch(isGet ? getUrl : postUrl, init);
  };
  const client = new Client({ name: 'get-stream-test', version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(postUrl), { fetch: routed });
  await client.connect(transport);
  return { client, transport, gets };
}

/**
 * The v1 client opens its GET stream in the background, in parallel with its next requests: what a
 * target sends before the gateway's GET to it is open is dropped by a target without an event store
 * (as it is for a direct client whose GET is not open yet). Tests wait for it where that matters.
 */
async function targetStreamOpen(
  dynamo: CountedDynamo,
  target: V1NotifyingServer,
  targetName: string,
  v1: { client: Client; transport: StreamableHTTPClientTransport },
): Promise<void> {
  await v1.client.listTools(); // every target session exists from here
  const items = await sessionItems(dynamo.endpoint, v1.transport.sessionId!);
  const targetSessionId = items.find((i) => i.sk === `T#${targetName}`)?.targetSessionId;
  await eventually(() => expect(target.stats().liveGetStreams).toContain(targetSessionId));
}

function getStream(url: string, headers: Record<string, string>, extra: Record<string, string> = {}) {
  return fetch(url, {
    method: 'GET',
    headers: {
      accept: 'text/event-stream',
      'mcp-session-id': headers['mcp-session-id']!,
      'mcp-protocol-version': headers['mcp-protocol-version']!,
      ...extra,
    },
  });
}

/** The raw SSE text of a stream until it ends. */
async function readToEnd(res: Response): Promise<string> {
  return res.text();
}

describe('the client GET stream through the gateway (v1 SDK server targets)', () => {
  let dynamo: CountedDynamo;
  let notes: V1NotifyingServer;
  let other: V1NotifyingServer;
  let a: GatewayUnderTest;
  let b: GatewayUnderTest;

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    notes = await startV1NotifyingServer();
    other = await startV1NotifyingServer();
    const config = {
      ...CONFIG,
      targets: [
        { name: 'notes', url: notes.url },
        { name: 'other', url: other.url },
      ],
    };
    a = await startGateway('local server', config, dynamo.endpoint, { keepAliveMs: 500 });
    b = await startGateway('local server', config, dynamo.endpoint, { keepAliveMs: 500 });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await notes?.close();
    await other?.close();
    await dynamo?.close();
  });

  it('initialize declares list changes and resource subscriptions', async () => {
    const { result } = await initSession(a.url);
    expect(result.capabilities).toMatchObject({
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
    });
  });

  it("the v1 client gets a target's resources/updated after subscribing, and its tools/list_changed", async () => {
    const v1 = await connectV1(a.url, b.url);
    const { client, gets } = v1;
    const updated: string[] = [];
    let listChanged = 0;
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void listChanged++);
    try {
      await eventually(() => expect(gets.length).toBe(1));
      await client.subscribeResource({ uri: 'note://greeting' });
      expect(Object.values(notes.stats().subscribed)).toContainEqual(['note://greeting']);
      // Outside any call: only the target session's GET stream carries it.
      await targetStreamOpen(dynamo, notes, 'notes', v1);
      await notes.touch('note://greeting');
      await eventually(() => expect(updated).toEqual(['note://greeting']));

      await client.callTool({ name: 'notes___add_tool', arguments: { name: 'fresh' } });
      await eventually(() => expect(listChanged).toBeGreaterThanOrEqual(1));
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('notes___fresh');

      await client.unsubscribeResource({ uri: 'note://greeting' });
      expect(Object.values(notes.stats().subscribed)).toContainEqual([]);
    } finally {
      await client.close();
    }
  });

  it('a request tied to no call reaches the client on the GET stream; its answer reaches the target from the other instance', async () => {
    const v1 = await connectV1(a.url, b.url, { elicitation: { form: {} } });
    const { client } = v1;
    const asked: Json[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request);
      return { action: 'accept', content: { stars: 5 } };
    });
    const before = notes.stats().laterAnswers.length;
    try {
      await targetStreamOpen(dynamo, notes, 'notes', v1);
      const result = await client.callTool({ name: 'notes___ask_later', arguments: {} });
      expect((result.content as Json[])[0]?.text).toBe('will ask');
      await eventually(() => expect(notes.stats().laterAnswers.length).toBe(before + 1));
      expect(asked[0]?.params).toMatchObject({ message: 'Rate the gateway' });
      expect(notes.stats().laterAnswers[before]).toEqual({ action: 'accept', content: { stars: 5 } });
      // Its record goes once delivered: no call's end would remove it.
      await eventually(async () => {
        const items = await sessionItems(dynamo.endpoint, v1.transport.sessionId!);
        expect(items.filter((i) => String(i.sk).startsWith('P#'))).toEqual([]);
      });
    } finally {
      await client.close();
    }
  });

  it('log messages on the GET stream follow the level the session set', async () => {
    const v1 = await connectV1(a.url, b.url);
    const { client } = v1;
    const logged: Json[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logged.push(n.params));
    try {
      await targetStreamOpen(dynamo, notes, 'notes', v1); // the target sessions exist, so setLevel reaches them
      await client.setLoggingLevel('warning');
      await client.callTool({ name: 'notes___log', arguments: { level: 'info', data: 'quiet' } });
      await client.callTool({ name: 'notes___log', arguments: { level: 'error', data: 'loud' } });
      await eventually(() => expect(logged.map((l) => l.data)).toContain('loud'));
      expect(logged.map((l) => l.data)).not.toContain('quiet');
    } finally {
      await client.close();
    }
  });

  it('resources/subscribe to a URI no target has → -32002 Resource not found', async () => {
    const { headers } = await initSession(a.url);
    const res = await post(a.url, headers, {
      jsonrpc: '2.0',
      id: 1,
      method: 'resources/subscribe',
      params: { uri: 'note://nowhere' },
    });
    const body = (await res.json()) as Json;
    expect(body.error).toMatchObject({ code: -32002, message: 'Resource not found: note://nowhere' });
  });

  it('a second GET stream of the session is refused with 409, on this instance and on the other', async () => {
    const { headers } = await initSession(a.url);
    const first = await getStream(a.url, headers);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toContain('text/event-stream');
    const again = await getStream(a.url, headers);
    expect(again.status).toBe(409);
    const elsewhere = await getStream(b.url, headers);
    expect(elsewhere.status).toBe(409);
    await first.body?.cancel();
    await again.body?.cancel();
    await elsewhere.body?.cancel();
  });

  it('a GET without text/event-stream in Accept is 406; without a session 400; a foreign session 404', async () => {
    const { headers } = await initSession(a.url);
    const noSse = await fetch(a.url, { method: 'GET', headers: { accept: 'application/json', ...headers } });
    expect(noSse.status).toBe(406);
    const noSession = await fetch(a.url, { method: 'GET', headers: { accept: 'text/event-stream' } });
    expect(noSession.status).toBe(400);
    const unknown = await fetch(a.url, {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'mcp-session-id': 'x'.repeat(43) },
    });
    expect(unknown.status).toBe(404);
  });

  it('DELETE ends the GET stream, on the instance holding it and from the other instance', async () => {
    for (const deleteAt of [a, b]) {
      const { headers } = await initSession(a.url);
      await post(a.url, headers, { jsonrpc: '2.0', id: 1, method: 'tools/list' }); // opens the target sessions
      const stream = await getStream(a.url, headers);
      expect(stream.status).toBe(200);
      await eventually(() =>
        expect(notes.stats().liveGetStreams.length + other.stats().liveGetStreams.length).toBeGreaterThan(0),
      );
      const ended = readToEnd(stream);
      const res = await fetch(deleteAt.url, { method: 'DELETE', headers });
      expect(res.status).toBe(200);
      const text = await ended;
      expect(text).not.toContain('retry:');
      expect(await sessionItems(dynamo.endpoint, headers['mcp-session-id']!)).toEqual([]);
    }
  });
});

describe('a bounded client GET stream (hold 1 s)', () => {
  let dynamo: CountedDynamo;
  let notes: V1NotifyingServer;
  let gateway: GatewayUnderTest;

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    notes = await startV1NotifyingServer({ eventStore: true });
    gateway = await startGateway(
      'local server',
      {
        ...CONFIG,
        targets: [{ name: 'notes', url: notes.url }],
        clientStreamHoldSeconds: 1,
        clientStreamRetryMs: 300,
      },
      dynamo.endpoint,
      { keepAliveMs: 500 },
    );
  });
  afterAll(async () => {
    await gateway?.close();
    await notes?.close();
    await dynamo?.close();
  });

  it('ends with an SSE retry, keeps where the target stream stopped, and the next GET resumes it (what was sent in between is replayed)', async () => {
    const { headers, sessionId } = await initSession(gateway.url);
    await post(gateway.url, headers, {
      jsonrpc: '2.0',
      id: 1,
      method: 'resources/subscribe',
      params: { uri: 'note://greeting' },
    });
    const first = await getStream(gateway.url, headers);
    expect(first.status).toBe(200);
    await eventually(() => expect(notes.stats().liveGetStreams).toHaveLength(1));
    await notes.touch('note://greeting'); // gives the target stream an event id
    const text = await readToEnd(first);
    expect(text).toContain('notifications/resources/updated');
    expect(text).toMatch(/retry: 300\n\n$/);
    const items = await sessionItems(dynamo.endpoint, sessionId);
    expect(items.find((i) => i.sk === 'T#notes')?.lastEventId).toEqual(expect.any(String));
    expect(items.find((i) => i.sk === 'G#stream')).toBeUndefined();

    // Sent while no client stream is open: the target keeps it in its event store.
    await eventually(() => expect(notes.stats().liveGetStreams).toHaveLength(0));
    await notes.touch('note://greeting');
    const second = await getStream(gateway.url, headers);
    expect(second.status).toBe(200);
    const replayed: Json[] = [];
    for await (const event of sseEvents(second)) {
      if (event.message) replayed.push(event.message);
      if (replayed.length === 1) break;
    }
    expect(replayed[0]).toMatchObject({
      method: 'notifications/resources/updated',
      params: { uri: 'note://greeting' },
    });
    expect(notes.stats().lastEventIds).toHaveLength(1);
  });

  it("the v1 client reconnects after the stream's end and goes on receiving", async () => {
    const { client, gets } = await connectV1(gateway.url, gateway.url);
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
    try {
      await client.subscribeResource({ uri: 'note://greeting' });
      await eventually(() => expect(gets.length).toBeGreaterThanOrEqual(2), 5000);
      await eventually(() => expect(notes.stats().liveGetStreams.length).toBeGreaterThan(0));
      await notes.touch('note://greeting');
      await eventually(() => expect(updated).toContain('note://greeting'));
    } finally {
      await client.close();
    }
  });
});

describe('the client GET stream in the Lambda mode (function timeout 6 s, hold 60 s)', () => {
  let dynamo: CountedDynamo;
  let notes: V1NotifyingServer;
  let gateway: GatewayUnderTest;

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    notes = await startV1NotifyingServer();
    gateway = await startGateway(
      'lambda runtime',
      { ...CONFIG, targets: [{ name: 'notes', url: notes.url }], clientStreamRetryMs: 250 },
      dynamo.endpoint,
      { keepAliveMs: 500, timeoutMs: 6000 },
    );
  });
  afterAll(async () => {
    await gateway?.close();
    await notes?.close();
    await dynamo?.close();
  });

  it('ends before the function deadline with a retry (not cut by the timeout), and the stream item is released', async () => {
    const { headers, sessionId } = await initSession(gateway.url);
    const stream = await getStream(gateway.url, headers);
    expect(stream.status).toBe(200);
    const text = await readToEnd(stream);
    expect(text).toMatch(/retry: 250\n\n$/);
    expect((await sessionItems(dynamo.endpoint, sessionId)).find((i) => i.sk === 'G#stream')).toBeUndefined();
    // The reconnect is served (not 409).
    const again = await getStream(gateway.url, headers);
    expect(again.status).toBe(200);
    await again.body?.cancel();
  });
});
