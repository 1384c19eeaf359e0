import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createParser } from 'eventsource-parser';
import { startDemoTarget } from '../../examples/targets/demo-target';
import type { GatewayKind } from '../support/gateways';
import { eventually, initSession, type Json, post, sessionItems } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * Resumable streams (MCP 2025-11-25 transports, "Resumability and redelivery"): two local gateways on
 * one dynalite, as two Lambda instances of one deployment, raw HTTP so every byte the client sees is
 * checked. The local server signals a client that left; the deployment bundle in `--lambda` mode
 * (frozen between invocations) does not, as Lambda does not. A call's stream opens with a priming event, every event has an id of that one stream,
 * and a `GET` with `Last-Event-ID` on the other instance replays the rest and follows the call live.
 */

interface RawEvent {
  id?: string;
  data: string;
  message?: Json;
}

/** The events of an SSE response as sent (ids and empty data included), until it ends or `stop` says so. */
async function readEvents(res: Response, stop: (event: RawEvent) => boolean = () => false): Promise<RawEvent[]> {
  const events: RawEvent[] = [];
  let stopped = false;
  const parser = createParser({
    onEvent: (event) => {
      if (stopped) return;
      const raw: RawEvent = { id: event.id, data: event.data };
      if (event.data) raw.message = JSON.parse(event.data);
      events.push(raw);
      if (stop(raw)) stopped = true;
    },
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  try {
    while (!stopped) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(value);
    }
  } finally {
    // Leaving early drops the connection, as a network failure would.
    await reader.cancel().catch(() => undefined);
  }
  return events;
}

const ALL = { elicitation: { form: {} } };
const accept = (id: unknown, content: Json) => ({ jsonrpc: '2.0', id, result: { action: 'accept', content } });

// The local server, and the deployment bundle in execution environments frozen between invocations.
const KINDS: GatewayKind[] = ['local server', 'lambda runtime'];

describe.each(KINDS)('through the %s', (kind) => {
  describe('resumable streams across two instances', () => {
    // The test's client is trusted to resume: its streams open with a priming event (legacy/release-policy.ts).
    const gw = withGateway(
      { logLevel: 'SILENT', streamLogRetainSeconds: 30, streamReleaseClients: [{ name: 'test' }] },
      { kind, targets: { demo: () => startDemoTarget() }, instances: 2 },
    );
    const a = () => gw.instances[0]!.url;
    const b = () => gw.instances[1]!.url;
    const resume = (url: string, headers: Record<string, string>, lastEventId: string) =>
      fetch(url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream', 'last-event-id': lastEventId } });
    const call = (url: string, headers: Record<string, string>, id: string, name: string, args: Json = {}) =>
      post(url, headers, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

    it('opens a 2025-11-25 call stream with a priming event (an id, empty data) and puts an id of that stream on every event', async () => {
      const { headers } = await initSession(a(), { capabilities: ALL });
      const res = await call(a(), headers, 'ids', 'demo___use_aws', { command: 'ids' });
      const events = await readEvents(res, (event) => {
        if (event.message?.method === 'elicitation/create') {
          void post(b(), headers, accept(event.message.id, { confirm: true }));
        }
        return false;
      });
      expect(events[0]).toEqual({ id: expect.stringMatching(/^[\w-]{16}\.0$/), data: '' });
      const streamId = events[0]!.id!.split('.')[0];
      expect(events.map((e) => e.id)).toEqual(events.map((_, seq) => `${streamId}.${seq}`));
      expect(events.at(-1)!.message).toMatchObject({ id: 'ids', result: { content: [{ text: 'executed: ids' }] } });
    });

    it('gives a 2025-06-18 session no priming event and no ids (older clients may not take empty data)', async () => {
      const { headers } = await initSession(a(), { capabilities: ALL, protocolVersion: '2025-06-18' });
      const res = await call(a(), headers, 'old', 'demo___use_aws', { command: 'old' });
      const events = await readEvents(res, (event) => {
        if (event.message?.method === 'elicitation/create')
          void post(b(), headers, accept(event.message.id, { confirm: true }));
        return false;
      });
      expect(events.every((e) => e.id === undefined && e.data !== '')).toBe(true);
      expect(events.at(-1)!.message).toMatchObject({ id: 'old', result: { content: [{ text: 'executed: old' }] } });
    });

    it('replays from the middle on the other instance, then follows the call live to its response; the table keeps only its end', async () => {
      const { headers, sessionId } = await initSession(a(), { capabilities: ALL });
      const res = await call(a(), headers, 'multi', 'demo___multi_elicit');
      // Read on A up to the second question, answering the first through B; then the connection drops.
      let asked = 0;
      const onA = await readEvents(res, (event) => {
        if (event.message?.method !== 'elicitation/create') return false;
        asked++;
        if (asked === 1) void post(b(), headers, accept(event.message.id, { name: 'Ada' }));
        return asked === 2;
      });
      const [priming, first, second] = onA;
      expect(second!.message!.params.message).toContain('How old are you, Ada?');

      // The client reconnects to B with the first question's id: it gets the second question again (not the first).
      const resumed = await resume(b(), headers, first!.id!);
      expect(resumed.status).toBe(200);
      expect(resumed.headers.get('content-type')).toContain('text/event-stream');
      const onB = await readEvents(resumed, (event) => {
        if (event.message?.method === 'elicitation/create')
          void post(a(), headers, accept(event.message.id, { age: 36 }));
        return false;
      });
      // A priming event with the id it resumed from first (so a client has an id even if nothing new comes).
      expect(onB.map((e) => e.id)).toEqual([first!.id, second!.id, `${priming!.id!.split('.')[0]}.3`]);
      expect(onB[0]!.data).toBe('');
      expect(onB[1]!.message).toEqual(second!.message);
      expect(onB[2]!.message).toMatchObject({ id: 'multi', result: { content: [{ text: 'hello Ada, 36' }] } });

      // After the call: its end, kept for streamLogRetainSeconds, and its head (the request it answered,
      // marked ended, for as long as the session); no pending records.
      const left = await sessionItems(gw.dynamodbEndpoint, sessionId);
      const events = left.filter((item) => String(item.sk).startsWith('E#'));
      expect(left.filter((item) => String(item.sk).startsWith('P#'))).toEqual([]);
      expect(events).toHaveLength(2);
      expect(events[0]).toMatchObject({ seq: 0, data: '', requestId: 'multi', ended: true });
      expect(events[1]).toMatchObject({ end: true, seq: 3 });
      expect(events[1]!.expiresAt).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 30);

      // A client that lost the connection right before the response still gets it, from any instance.
      const late = await readEvents(await resume(a(), headers, priming!.id!));
      expect(late.filter((e) => e.data !== '').map((e) => e.message?.id)).toEqual(['multi']);
    });

    it("answers a Last-Event-ID of another session, of an unknown stream or of no stream with 400 and nothing of any stream; an empty one opens the session's own GET stream", async () => {
      const mine = await initSession(a(), { capabilities: ALL });
      const theirs = await initSession(a(), { capabilities: ALL });
      const res = await call(a(), theirs.headers, 'theirs', 'demo___use_aws', { command: 'theirs' });
      const seen = await readEvents(res, (event) => event.message?.method === 'elicitation/create');
      const theirId = seen[0]!.id!;

      for (const id of [theirId, 'AAAAAAAAAAAAAAAA.0', 'not-an-event-id']) {
        const refused = await resume(b(), mine.headers, id);
        expect(refused.status).toBe(400);
        const body = await refused.text();
        expect(body).not.toContain('elicitation');
        expect(JSON.parse(body).error.code).toBe(-32600);
      }
      // An empty Last-Event-ID names no event (an EventSource has none before its first id): the session's own
      // GET stream, which is not theirs — it is let go at once (it would be held clientStreamHoldSeconds).
      const own = await resume(b(), mine.headers, '');
      expect(own.status).toBe(200);
      expect(own.headers.get('content-type')).toContain('text/event-stream');
      await own.body?.cancel();
      // A 2026-07-28 request has no resumption: 405 as any GET.
      const modern = await fetch(b(), {
        headers: { ...theirs.headers, 'mcp-protocol-version': '2026-07-28', 'last-event-id': theirId },
      });
      expect(modern.status).toBe(405);
      expect(await modern.text()).not.toContain('elicitation');
      // Their own reconnect still works.
      const theirs2 = await readEvents(await resume(b(), theirs.headers, theirId), (event) => {
        if (event.message?.method === 'elicitation/create')
          void post(b(), theirs.headers, accept(event.message.id, { confirm: false }));
        return false;
      });
      expect(theirs2.at(-1)!.message).toMatchObject({
        id: 'theirs',
        result: { content: [{ text: 'not executed (confirm false)' }] },
      });
    });

    it('removes the event log with the session on DELETE', async () => {
      const { headers, sessionId } = await initSession(a(), { capabilities: ALL });
      const res = await call(a(), headers, 'del', 'demo___use_aws', { command: 'del' });
      const seen = await readEvents(res, (event) => event.message?.method === 'elicitation/create');
      const before = await sessionItems(gw.dynamodbEndpoint, sessionId);
      expect(before.some((i) => String(i.sk).startsWith('E#'))).toBe(true);
      const sessionExpiry = before.find((i) => i.sk === 'SESSION')!.expiresAt as number;
      expect((await fetch(b(), { method: 'DELETE', headers })).status).toBe(200);
      // The call, still running on A, ends once its target session is gone, and may have kept its end by
      // then (expiring within streamLogRetainSeconds) and marked its stream's head ended (a batch write
      // cannot be made conditional on the session; it expires no later than the session would have):
      // nothing else of the session is left.
      const left = await sessionItems(gw.dynamodbEndpoint, sessionId);
      const endOrHead = (item: Record<string, unknown>) =>
        String(item.sk).startsWith('E#') &&
        (item.end === true || (item.seq === 0 && item.ended === true && Number(item.expiresAt) <= sessionExpiry));
      expect(left.filter((item) => !endOrHead(item))).toEqual([]);
      expect((await resume(a(), headers, seen[0]!.id!)).status).toBe(404);
    });
  });

  describe('the official SDK clients', () => {
    const gw = withGateway({ logLevel: 'SILENT' }, { kind, targets: { demo: () => startDemoTarget() }, instances: 2 });
    const reconnection = {
      initialReconnectionDelay: 100,
      maxReconnectionDelay: 1000,
      reconnectionDelayGrowFactor: 2,
      maxRetries: 2,
    };

    /** A client of `sdk` whose call answers the question with confirm: true; the network is `network`. */
    async function connect(sdk: 'v1 (1.32)' | 'v2 (2.4, 2025-11-25)', network: typeof fetch) {
      const info = { name: `resume ${sdk}`, version: '1.0.0' };
      const capabilities = { elicitation: { form: {} } };
      const answer = { action: 'accept' as const, content: { confirm: true } };
      if (sdk === 'v1 (1.32)') {
        const client = new Client(info, { capabilities });
        client.setRequestHandler(ElicitRequestSchema, async () => answer);
        await client.connect(
          new StreamableHTTPClientTransport(new URL(gw.url), { fetch: network, reconnectionOptions: reconnection }),
        );
        return {
          call: async (command: string) =>
            (
              await client.request(
                { method: 'tools/call', params: { name: 'demo___use_aws', arguments: { command } } },
                CallToolResultSchema,
              )
            ).content,
          close: () => client.close(),
        };
      }
      const client = new V2Client(info, { capabilities, versionNegotiation: { mode: 'legacy' } });
      client.setRequestHandler('elicitation/create', async () => answer);
      await client.connect(new V2Transport(new URL(gw.url), { fetch: network, reconnectionOptions: reconnection }));
      return {
        call: async (command: string) =>
          (await client.callTool({ name: 'demo___use_aws', arguments: { command } })).content,
        close: () => client.close(),
      };
    }

    it.each(['v1 (1.32)', 'v2 (2.4, 2025-11-25)'] as const)(
      'the %s client reconnects after its connection dropped mid-call, to another instance, and gets the result',
      async (sdk) => {
        const resumes: Array<{ url: string; lastEventId: string | null }> = [];
        // The POST stream of the call is cut right after the question arrives, as a network failure cuts it;
        // the client's GETs go to the other instance, as a new connection may reach any Lambda instance.
        const network: typeof fetch = async (input, init) => {
          if ((init?.method ?? 'GET') === 'GET') {
            resumes.push({ url: gw.instances[1]!.url, lastEventId: new Headers(init?.headers).get('last-event-id') });
            return fetch(gw.instances[1]!.url, init);
          }
          const res = await fetch(input, init);
          if (
            !String(init?.body).includes('tools/call') ||
            !res.headers.get('content-type')?.includes('event-stream')
          ) {
            return res;
          }
          const reader = res.body!.getReader();
          const decoder = new TextDecoder();
          let text = '';
          const cut = new ReadableStream<Uint8Array>({
            async pull(controller) {
              const { done, value } = await reader.read();
              if (done) return controller.close();
              controller.enqueue(value);
              text += decoder.decode(value, { stream: true });
              if (text.includes('elicitation/create') && text.endsWith('\n\n')) {
                await reader.cancel();
                controller.error(new TypeError('terminated: the connection was lost'));
              }
            },
          });
          return new Response(cut, { status: res.status, headers: res.headers });
        };
        const client = await connect(sdk, network);
        try {
          expect(await client.call('sdk')).toEqual([{ type: 'text', text: 'executed: sdk' }]);
          // A first GET without Last-Event-ID (the standalone stream, after initialize) gets 405; then the resume.
          expect(resumes.filter((r) => r.lastEventId !== null)).toEqual([
            { url: gw.instances[1]!.url, lastEventId: expect.stringMatching(/^[\w-]{16}\.1$/) },
          ]);
        } finally {
          await client.close();
        }
      },
    );
  });

  describe('an abandoned call', () => {
    const gw = withGateway(
      {
        logLevel: 'SILENT',
        pendingRequestTimeoutSeconds: 1,
        streamLogRetainSeconds: 20,
        streamReleaseClients: [{ name: 'test' }],
      },
      { kind, targets: { demo: () => startDemoTarget() } },
    );

    it('goes on after its client left, ends by the pending timeout, and leaves only its end, expiring within the retention', async () => {
      const { headers, sessionId } = await initSession(gw.url, { capabilities: ALL });
      const res = await post(gw.url, headers, {
        jsonrpc: '2.0',
        id: 'gone',
        method: 'tools/call',
        params: { name: 'demo___use_aws', arguments: { command: 'gone' } },
      });
      const seen = await readEvents(res, (event) => event.message?.method === 'elicitation/create');
      // The client never comes back: the call ends with -32001 at the pending timeout and its stream's end is kept.
      let items: Json[] = [];
      await eventually(async () => {
        items = await sessionItems(gw.dynamodbEndpoint, sessionId);
        expect(items.some((item) => item.end === true)).toBe(true);
      }, 10_000);
      // Its end, and its head (the request it answered, marked ended).
      const left = items.filter((item) => item.sk !== 'SESSION' && !String(item.sk).startsWith('T#'));
      expect(left).toHaveLength(2);
      expect(left[0]).toMatchObject({ seq: 0, requestId: 'gone', ended: true });
      expect(left[1]).toMatchObject({ sk: expect.stringMatching(/^E#/), end: true });
      expect(left[1]!.expiresAt).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 20);
      expect(JSON.parse(left[1]!.data)).toMatchObject({ id: 'gone', error: { code: -32001 } });
      expect(gw.targets.demo.stats().cancelledRequestIds).toContain('c.s.gone');
      // What a reconnect gets: the call's end (the question it missed is stale by now).
      const resumed = await readEvents(
        await fetch(gw.url, { headers: { ...headers, accept: 'text/event-stream', 'last-event-id': seen[0]!.id! } }),
      );
      expect(resumed.filter((e) => e.data !== '').map((e) => e.message?.error?.code)).toEqual([-32001]);
    });
  });
});
