import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { configureMetrics } from '../../lambda/observability/metrics';
import { callAndAnswerIn, type InProcessGateway, inProcessGateway } from '../support/in-process';
import { recordingLogger } from '../support/legacy-deps';
import { eventually, type Json, type SseEvent, sseEvents } from '../support/mcp-http';

/**
 * Sessions and the relay through the gateway core in-process (in-memory session store), with the demo
 * target as a real MCP server on loopback: initialize, a relayed call, an elicitation answered through
 * another instance (a second core on the same store), the exchange's deadline and the client going away.
 */

const ALL = { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: true } };
const accept = { result: { action: 'accept', content: { confirm: true } } };

let demo: DemoTarget;
let gateway: InProcessGateway;
let other: InProcessGateway;

beforeAll(async () => {
  demo = await startDemoTarget();
  gateway = inProcessGateway({ targets: [{ name: 'demo', url: demo.url }] }, { keepAliveMs: 50 });
  other = gateway.another();
});
afterAll(async () => demo?.close());

describe('initialize', () => {
  it('mints a visible-ASCII session id and stores the session with its capabilities and an absolute expiry', async () => {
    const before = Math.floor(Date.now() / 1000);
    const { sessionId, result } = await gateway.initSession({ capabilities: { elicitation: { form: {} } } });
    expect(sessionId).toMatch(/^[\x21-\x7e]{43,}$/);
    expect(result).toMatchObject({ protocolVersion: '2025-11-25', serverInfo: { name: 'mcp-gateway' } });
    const stored = await gateway.store.loadSession(sessionId);
    expect(stored?.session).toMatchObject({
      principal: 'anonymous',
      clientCapabilities: { elicitation: { form: {} } },
    });
    expect(stored!.session.expiresAt - before).toBeGreaterThanOrEqual(3600);
    expect(stored!.session.expiresAt - stored!.session.createdAt).toBe(3600);
  });

  it('answers the requested version when it serves it, else its latest', async () => {
    for (const [requested, answered] of [
      ['2025-06-18', '2025-06-18'],
      ['2025-03-26', '2025-03-26'],
      ['2099-01-01', '2025-11-25'],
      ['2024-11-05', '2025-11-25'],
    ]) {
      expect((await gateway.initSession({ protocolVersion: requested })).result.protocolVersion).toBe(answered);
    }
  });

  it('binds the session to the platform principal: another caller presenting it gets 404', async () => {
    const res = await gateway.post(
      {},
      {
        jsonrpc: '2.0',
        id: 'i',
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      },
      { platformPrincipal: 'arn:aws:iam::123456789012:user/alice' },
    );
    const headers = { 'mcp-session-id': res.headers.get('mcp-session-id')! };
    await res.body?.cancel();
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const own = await gateway.post(headers, ping, { platformPrincipal: 'arn:aws:iam::123456789012:user/alice' });
    expect(own.status).toBe(200);
    await own.body?.cancel();
    expect(
      (await gateway.post(headers, ping, { platformPrincipal: 'arn:aws:iam::123456789012:role/bob' })).status,
    ).toBe(404);
    expect((await gateway.post(headers, ping)).status).toBe(404);
  });

  it("answers another principal's reconnect (GET with Last-Event-ID) with 404 and nothing of the stream", async () => {
    const alice = { platformPrincipal: 'arn:aws:iam::123456789012:user/alice' };
    const init = await gateway.post(
      {},
      {
        jsonrpc: '2.0',
        id: 'i',
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: ALL, clientInfo: { name: 't', version: '1' } },
      },
      alice,
    );
    const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')! };
    await init.body?.cancel();
    const call = { name: 'demo___use_aws', arguments: { command: 'mine' } };
    const res = await gateway.post(headers, { jsonrpc: '2.0', id: 'mine', method: 'tools/call', params: call }, alice);
    const text = await readUntil(res, 'elicitation/create');
    // The question's own id (a client not known to resume gets no priming event before it).
    const questionId = /^id: (\S+)$/m.exec(text)![1]!;
    const asked = /"id":"(gw-[\w-]+)"/.exec(text)![1];
    const resume = (exchange: { platformPrincipal?: string }) =>
      gateway.fetch(
        '/mcp',
        { method: 'GET', headers: { ...headers, accept: 'text/event-stream', 'last-event-id': questionId } },
        exchange,
      );
    for (const other of [{ platformPrincipal: 'arn:aws:iam::123456789012:role/bob' }, {}]) {
      const refused = await resume(other);
      expect(refused.status).toBe(404);
      expect(await refused.text()).not.toContain('elicitation');
    }
    // Alice's own reconnect follows the call past her question; her answer ends it there.
    const following = await resume(alice);
    expect(following.status).toBe(200);
    const answered = await gateway.post(headers, { jsonrpc: '2.0', id: asked, result: { action: 'decline' } }, alice);
    expect(answered.status).toBe(202);
    const rest = await readUntil(following, '"id":"mine"');
    expect(rest).toContain('"id":"mine"');
    expect(rest).not.toContain('Run `mine`?');
  });
});

/** The raw SSE text of a response up to the first chunk containing `marker` (then the body is dropped). */
async function readUntil(res: Response, marker: string): Promise<string> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  try {
    while (!text.includes(marker)) {
      const { done, value } = await reader.read();
      if (done) break;
      text += value;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return text;
}

describe('a relayed call', () => {
  it('reaches the demo target, opens one target session lazily, and keeps it in the store', async () => {
    const { headers, sessionId } = await gateway.initSession();
    expect((await gateway.store.loadSession(sessionId))?.targets.size).toBe(0);
    const first = await gateway.call(headers, 1, 'tools/call', { name: 'demo___echo', arguments: { text: 'hi' } });
    expect(first.result.content).toEqual([{ type: 'text', text: 'echo: hi' }]);
    const initsBefore = demo.stats().initializeCount;
    const second = await other.call(headers, 2, 'tools/call', { name: 'demo___echo', arguments: { text: 'again' } });
    expect(second.result.content[0].text).toBe('echo: again');
    expect(demo.stats().initializeCount).toBe(initsBefore); // the other instance reused the stored target session
    expect((await gateway.store.loadSession(sessionId))?.targets.get('demo')?.targetSessionId).toEqual(
      expect.any(String),
    );
  });

  it('serves a session initialized on one instance from another', async () => {
    const { headers } = await gateway.initSession();
    const { result } = await other.call(headers, 1, 'tools/list');
    expect(result.tools.map((tool: Json) => tool.name)).toEqual(expect.arrayContaining(['demo___echo']));
  });

  it('takes the answer to an elicitation on another instance, once; the stream of the first carries the result', async () => {
    const { headers, sessionId } = await gateway.initSession({ capabilities: ALL });
    const statuses: number[] = [];
    const call = await callAndAnswerIn(
      gateway,
      headers,
      { id: 7, params: { name: 'demo___use_aws', arguments: { command: 'ls' } } },
      async (asked) => {
        expect(gateway.store.pendingRecords(sessionId).find((r) => r.gatewayId === asked.id)).toMatchObject({
          status: 'pending',
          target: 'demo',
          clientRequestId: 7,
        });
        return accept;
      },
      { answerTo: other },
    );
    expect(call.messages[0]).toMatchObject({ method: 'elicitation/create', id: expect.stringMatching(/^gw-/) });
    expect(call.answerStatuses).toEqual([202]);
    expect(call.response).toEqual({
      jsonrpc: '2.0',
      id: 7,
      result: { content: [{ type: 'text', text: 'executed: ls' }] },
    });
    const duplicate = await gateway.post(headers, { jsonrpc: '2.0', id: call.messages[0].id, ...accept });
    statuses.push(duplicate.status, (await duplicate.json()).error.code);
    expect(statuses).toEqual([400, -32600]);
    await eventually(async () => expect(gateway.store.pendingRecords(sessionId)).toHaveLength(0));
  });

  it("refuses another session's answer and an id that was never sent, with 400 and -32600", async () => {
    const { headers } = await gateway.initSession({ capabilities: ALL });
    const stranger = await gateway.initSession({ capabilities: ALL });
    const refused: Array<[number, number]> = [];
    const call = await callAndAnswerIn(
      gateway,
      headers,
      { id: 'x', params: { name: 'demo___use_aws', arguments: { command: 'x' } } },
      async (asked) => {
        for (const [from, id] of [
          [stranger.headers, asked.id],
          [headers, 'gw-AAAAAAAAAAAAAAAAAAAAAA'],
        ] as const) {
          const res = await other.post(from, { jsonrpc: '2.0', id, ...accept });
          refused.push([res.status, (await res.json()).error.code]);
        }
        return accept;
      },
    );
    expect(refused).toEqual([
      [400, -32600],
      [400, -32600],
    ]);
    expect(call.response.result.content[0].text).toBe('executed: x');
  });

  it('sends keep-alive comments while the client thinks, and relays the answer it then gives', async () => {
    const { headers } = await gateway.initSession({ capabilities: ALL });
    const res = await gateway.post(headers, {
      jsonrpc: '2.0',
      id: 'k',
      method: 'tools/call',
      params: { name: 'demo___use_aws', arguments: { command: 'k' } },
    });
    // The client answers only after two keep-alives (50 ms apart) arrived while it was thinking.
    let asked: Json | undefined;
    let commentsWhileAsked = 0;
    let last: Json | undefined;
    for await (const event of sseEvents(res)) {
      if (event.message?.method === 'elicitation/create') asked = event.message;
      else if (event.message) last = event.message;
      if (asked && event.comment !== undefined && ++commentsWhileAsked === 2) {
        const answer = await other.post(headers, { jsonrpc: '2.0', id: asked.id, ...accept });
        expect(answer.status).toBe(202);
      }
    }
    expect(commentsWhileAsked).toBeGreaterThanOrEqual(2);
    expect(last).toEqual({ jsonrpc: '2.0', id: 'k', result: { content: [{ type: 'text', text: 'executed: k' }] } });
  });
});

describe('the end of a call', () => {
  it("ends a call that would outlive the exchange's deadline with a retryable -32001 and cancels it at the target", async () => {
    const { headers } = await gateway.initSession();
    // The tool would take 20 s: the error (not its result) is the deadline's.
    const call = await callAndAnswerIn(
      gateway,
      headers,
      { id: 'deadline', params: { name: 'demo___slow', arguments: { ms: 20_000 } } },
      () => accept,
      // Long enough for the call to reach the target first on a loaded machine (300 ms was not: nothing
      // was there to cancel), far below the tool's 20 s.
      { exchange: { deadlineMs: 3000 } },
    );
    expect(call.response.error).toMatchObject({ code: -32001, data: { retryable: true } });
    await eventually(() => expect(demo.stats().cancelledRequestIds).toContain('c.s.deadline'));
  });

  // Before 2025-11-25 the stream cannot be resumed: nobody could ever get the result, so the call ends.
  it('removes the pending records and cancels at the target when a 2025-06-18 client goes away', async () => {
    const { headers, sessionId } = await gateway.initSession({ capabilities: ALL, protocolVersion: '2025-06-18' });
    const client = new AbortController();
    const res = await gateway.post(
      headers,
      {
        jsonrpc: '2.0',
        id: 'gone',
        method: 'tools/call',
        params: { name: 'demo___use_aws', arguments: { command: 'x' } },
      },
      { signal: client.signal },
    );
    for await (const event of sseEvents(res)) {
      if (event.message?.method !== 'elicitation/create') continue;
      expect(gateway.store.pendingRecords(sessionId)).toHaveLength(1);
      break; // leaving the loop cancels the body
    }
    client.abort();
    await eventually(async () => expect(gateway.store.pendingRecords(sessionId)).toHaveLength(0));
    await eventually(() => expect(demo.stats().cancelledRequestIds).toContain('c.s.gone'));
  });

  // 2025-11-25 transports: a disconnect is not a cancellation; the stream is resumable, so the call waits on.
  it('lets the call of a 2025-11-25 client that went away go on: its request stays pending and its events are kept', async () => {
    // A core of its own, with a logger: the relay says when it saw the client leave.
    const logger = recordingLogger();
    const watched = inProcessGateway({ targets: [{ name: 'demo', url: demo.url }] }, { keepAliveMs: 50, logger });
    const { headers, sessionId } = await watched.initSession({ capabilities: ALL });
    const client = new AbortController();
    const res = await watched.post(
      headers,
      {
        jsonrpc: '2.0',
        id: 'away',
        method: 'tools/call',
        params: { name: 'demo___use_aws', arguments: { command: 'away' } },
      },
      { signal: client.signal },
    );
    let asked: SseEvent | undefined;
    for await (const event of sseEvents(res)) {
      if (event.message?.method !== 'elicitation/create') continue;
      asked = event;
      break; // leaving the loop cancels the body
    }
    client.abort();
    // The relay saw the client leave, and goes on.
    const wentOn = "the client's stream closed; the call goes on for its reconnect";
    await eventually(() => expect(logger.messages('info')).toContain(wentOn));
    expect(watched.store.pendingRecords(sessionId)).toHaveLength(1);
    expect(demo.stats().cancelledRequestIds).not.toContain('c.s.away');
    expect(watched.store.keysOf(sessionId).filter((sk) => sk.startsWith('E#'))).toHaveLength(2); // head + question
    // The answer still reaches the target; the call ends and only its end (and its head) is left.
    const answered = await watched.post(headers, {
      jsonrpc: '2.0',
      id: asked!.message!.id,
      result: { action: 'decline' },
    });
    expect(answered.status).toBe(202);
    await eventually(() => expect(watched.store.pendingRecords(sessionId)).toHaveLength(0));
    expect(watched.store.keysOf(sessionId).filter((sk) => sk.startsWith('E#'))).toHaveLength(2);
    // Nothing cancelled it while its client was away: its kept end is the tool's own result.
    const [streamId] = asked!.id!.split('.');
    const kept = await watched.store.readStream(sessionId, streamId!, 1);
    expect(kept.map((event) => event.data && JSON.parse(event.data))).toEqual([
      { jsonrpc: '2.0', id: 'away', result: { content: [{ type: 'text', text: 'not executed (decline)' }] } },
    ]);
    expect(demo.stats().cancelledRequestIds).not.toContain('c.s.away');
  });
});

describe('the GatewayErrors metric of a relayed call', () => {
  /** The GatewayErrors codes written while `fn` runs, with metrics on as in Lambda. */
  async function gatewayErrorsOf(fn: () => Promise<unknown>): Promise<string[]> {
    configureMetrics({ enabled: true, namespace: 'Test' });
    const lines: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      await fn();
    } finally {
      spy.mockRestore();
      configureMetrics({});
    }
    return lines
      .flatMap((chunk) => chunk.split('\n'))
      .filter((line) => line.includes('"GatewayErrors"'))
      .map((line) => JSON.parse(line).code);
  }

  it("counts the gateway's refusal of a request the client did not declare, sent to the target (the client's call succeeds)", async () => {
    const { headers } = await gateway.initSession({ capabilities: {} });
    let text = '';
    const codes = await gatewayErrorsOf(async () => {
      const message = await gateway.call(headers, 'undeclared', 'tools/call', {
        name: 'demo___request_anyway',
        arguments: { kind: 'sampling' },
      });
      text = message.result.content[0].text;
    });
    expect(text).toMatch(/^refused: MCP error -32601/);
    expect(codes).toEqual(['-32601']);
  });

  it('counts nothing for a call the target answers', async () => {
    const { headers } = await gateway.initSession({ capabilities: {} });
    const codes = await gatewayErrorsOf(async () => {
      const message = await gateway.call(headers, 'ok', 'tools/call', {
        name: 'demo___echo',
        arguments: { text: 'x' },
      });
      expect(message.result).toBeDefined();
    });
    expect(codes).toEqual([]);
  });
});
