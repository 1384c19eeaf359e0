import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import type { CountedDynamo } from '../support/dynamo';
import type { GatewayKind } from '../support/gateways';
import { initSession, type Json, post, readMessage, sessionItems, sseEvents } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * The 2025-era client face (foundation issue): sessions in DynamoDB, aggregation over two real
 * targets, routing, the transport's HTTP rules and bad input. Every test runs through the local
 * server and through the Lambda handler behind the local function-URL invoker.
 */
const kinds: GatewayKind[] = ['local server', 'lambda handler', 'lambda runtime'];

describe.each(kinds)('2025-era sessions through the %s', (kind) => {
  const gw = withGateway(
    { logLevel: 'SILENT' },
    {
      kind,
      targets: {
        demo: () => startDemoTarget({ name: 'demo-one' }),
        second: () => startDemoTarget({ name: 'demo-two' }),
        gone: 'http://127.0.0.1:9/mcp',
      },
    },
  );
  let dynamo: CountedDynamo;
  let demo: DemoTarget;
  let url: string;
  beforeAll(() => {
    ({ dynamo, url } = gw);
    demo = gw.targets.demo;
  });

  const call = async (headers: Record<string, string>, id: number | string, method: string, params?: Json) =>
    readMessage(await post(url, headers, { jsonrpc: '2.0', id, method, ...(params ? { params } : {}) }));

  describe('initialize', () => {
    it('mints an unguessable visible-ASCII session id and stores the session with an absolute expiry', async () => {
      const before = Math.floor(Date.now() / 1000);
      const { sessionId, result } = await initSession(url, { capabilities: { elicitation: { form: {} } } });
      expect(sessionId).toMatch(/^[\x21-\x7e]{43,}$/); // 256 bits in base64url
      expect(result.protocolVersion).toBe('2025-11-25');
      expect(result.serverInfo.name).toBe('mcp-gateway');
      const items = await sessionItems(dynamo.endpoint, sessionId);
      const session = items.find((item) => item.sk === 'SESSION')!;
      expect(session.clientCapabilities).toEqual({ elicitation: { form: {} } });
      expect(session.expiresAt - before).toBeGreaterThanOrEqual(3600);
      expect(session.expiresAt - before).toBeLessThanOrEqual(3602);
    });

    it('answers with the requested version when supported, else its latest', async () => {
      expect((await initSession(url, { protocolVersion: '2025-06-18' })).result.protocolVersion).toBe('2025-06-18');
      expect((await initSession(url, { protocolVersion: '2025-03-26' })).result.protocolVersion).toBe('2025-03-26');
      expect((await initSession(url, { protocolVersion: '2099-01-01' })).result.protocolVersion).toBe('2025-11-25');
      expect((await initSession(url, { protocolVersion: '2024-11-05' })).result.protocolVersion).toBe('2025-11-25');
    });

    it('needs no notifications/initialized before serving, and accepts it with 202', async () => {
      const { headers } = await initSession(url);
      expect((await call(headers, 1, 'ping')).result).toEqual({});
      const res = await post(url, headers, { jsonrpc: '2.0', method: 'notifications/initialized' });
      expect(res.status).toBe(202);
      expect(await res.text()).toBe('');
    });

    it('serves an Accept that lists only text/event-stream as SSE', async () => {
      const res = await post(
        url,
        { accept: 'text/event-stream' },
        {
          jsonrpc: '2.0',
          id: 'init-request',
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        },
      );
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      expect(res.headers.get('mcp-session-id')).toBeTruthy();
      expect((await readMessage(res)).result.protocolVersion).toBe('2025-06-18');
    });
  });

  describe('aggregation and routing', () => {
    let headers: Record<string, string>;
    beforeAll(async () => {
      headers = (await initSession(url)).headers;
    });

    it('lists the tools of every reachable target under target___tool names', async () => {
      const { result } = await call(headers, 1, 'tools/list');
      const names: string[] = result.tools.map((t: Json) => t.name);
      expect(names).toEqual(
        expect.arrayContaining(['demo___echo', 'demo___use_aws', 'second___echo', 'second___use_aws']),
      );
      expect(names.filter((n) => n.startsWith('gone___'))).toEqual([]);
      expect(result.nextCursor).toBeUndefined();
    });

    it('routes a prefixed tool name to its target', async () => {
      const { result } = await call(headers, 2, 'tools/call', { name: 'second___echo', arguments: { text: 'hi' } });
      expect(result.content[0].text).toBe('echo: hi');
    });

    it('refuses a bare name two targets share, naming the candidates', async () => {
      const { error } = await call(headers, 3, 'tools/call', { name: 'echo', arguments: { text: 'x' } });
      expect(error.code).toBe(-32602);
      expect(error.data.candidates).toEqual(['demo___echo', 'second___echo']);
    });

    it('refuses an unknown tool with -32602', async () => {
      const { error } = await call(headers, 4, 'tools/call', { name: 'demo___nope', arguments: {} });
      expect(error.code).toBe(-32602);
    });

    it('names DependencyFailedException and the target when a target is unreachable, while others keep working', async () => {
      const failed = await call(headers, 5, 'tools/call', { name: 'gone___anything', arguments: {} });
      expect(failed.error.message).toContain('DependencyFailedException');
      expect(failed.error.data).toMatchObject({ type: 'DependencyFailedException', target: 'gone' });
      const ok = await call(headers, 6, 'tools/call', { name: 'demo___echo', arguments: { text: 'still here' } });
      expect(ok.result.content[0].text).toBe('echo: still here');
    });

    it('aggregates prompts and routes prompts/get', async () => {
      const { result } = await call(headers, 7, 'prompts/list');
      expect(result.prompts.map((p: Json) => p.name)).toEqual(
        expect.arrayContaining(['demo___greeting', 'second___greeting']),
      );
      const got = await call(headers, 8, 'prompts/get', { name: 'demo___greeting', arguments: { name: 'Ada' } });
      expect(got.result.messages[0].content.text).toBe('Hello, Ada!');
    });

    it('keeps resource URIs, lets the first target win on duplicates, and routes resources/read', async () => {
      const { result } = await call(headers, 9, 'resources/list');
      expect(result.resources.filter((r: Json) => r.uri === 'demo://readme')).toHaveLength(1);
      const templates = await call(headers, 10, 'resources/templates/list');
      expect(templates.result.resourceTemplates.map((t: Json) => t.uriTemplate)).toEqual(['demo://items/{id}']);
      const read = await call(headers, 11, 'resources/read', { uri: 'demo://items/7' });
      expect(read.result.contents[0].text).toBe('item 7');
    });

    it('routes completion/complete and logging/setLevel', async () => {
      const completion = await call(headers, 12, 'completion/complete', {
        ref: { type: 'ref/resource', uri: 'demo://items/{id}' },
        argument: { name: 'id', value: '2' },
      });
      expect(completion.result.completion.values).toEqual(['2']);
      const level = await call(headers, 13, 'logging/setLevel', { level: 'warning' });
      expect(level.result).toEqual({});
      const bad = await call(headers, 14, 'logging/setLevel', { level: 'loud' });
      expect(bad.error.code).toBe(-32602);
    });

    it('refuses a list cursor it never issued', async () => {
      expect((await call(headers, 15, 'tools/list', { cursor: 'forged' })).error.code).toBe(-32602);
    });
  });

  describe('upstream sessions', () => {
    it('opens one target session per gateway session lazily, keeps its id in DynamoDB, and reuses it', async () => {
      const { headers, sessionId } = await initSession(url);
      expect((await sessionItems(dynamo.endpoint, sessionId)).map((i) => i.sk)).toEqual(['SESSION']);
      const initsBefore = demo.stats().initializeCount;
      await call(headers, 1, 'tools/call', { name: 'demo___echo', arguments: { text: 'a' } });
      await call(headers, 2, 'tools/call', { name: 'demo___echo', arguments: { text: 'b' } });
      expect(demo.stats().initializeCount).toBe(initsBefore + 1);
      const target = (await sessionItems(dynamo.endpoint, sessionId)).find((i) => i.sk === 'T#demo')!;
      expect(target.targetSessionId).toEqual(expect.any(String));
      expect(target.protocolVersion).toBe('2025-11-25');
    });

    it('costs one DynamoDB request per call once the target session exists', async () => {
      const { headers } = await initSession(url);
      await call(headers, 1, 'tools/call', { name: 'demo___echo', arguments: { text: 'warm' } });
      dynamo.reset();
      await call(headers, 2, 'tools/call', { name: 'demo___echo', arguments: { text: 'steady' } });
      expect(Object.fromEntries(dynamo.counts)).toEqual({ Query: 1 });
    });

    it('keeps connections to targets alive across calls', async () => {
      const { headers } = await initSession(url);
      await call(headers, 0, 'tools/call', { name: 'demo___echo', arguments: { text: 'warm' } });
      const before = demo.stats();
      for (let i = 1; i <= 10; i++)
        await call(headers, i, 'tools/call', { name: 'demo___echo', arguments: { text: `${i}` } });
      // Ten calls, sequential: a pooled connection serves them (a second one at most, if the pool rotated).
      // Each call also listens on the target session's GET stream (the target declared logging; the
      // request accepts SSE), which holds a connection of its own until the call ends.
      const after = demo.stats();
      expect(after.getRequests - before.getRequests).toBe(10);
      expect(after.connections - before.connections - (after.getRequests - before.getRequests)).toBeLessThanOrEqual(1);
      // A request that takes JSON only cannot carry what the GET stream brings: no GET, nothing but the pool.
      const jsonOnly = { ...headers, accept: 'application/json' };
      for (let i = 11; i <= 20; i++)
        await call(jsonOnly, i, 'tools/call', { name: 'demo___echo', arguments: { text: `${i}` } });
      expect(demo.stats().getRequests).toBe(after.getRequests);
      expect(demo.stats().connections - after.connections).toBeLessThanOrEqual(1);
    });

    it('re-initializes a target session transparently when the target answers 404', async () => {
      const { headers, sessionId } = await initSession(url);
      await call(headers, 1, 'tools/call', { name: 'demo___echo', arguments: { text: 'one' } });
      const oldId = (await sessionItems(dynamo.endpoint, sessionId)).find((i) => i.sk === 'T#demo')!.targetSessionId;
      demo.dropSessions();
      const { result } = await call(headers, 2, 'tools/call', { name: 'demo___echo', arguments: { text: 'two' } });
      expect(result.content[0].text).toBe('echo: two');
      const newId = (await sessionItems(dynamo.endpoint, sessionId)).find((i) => i.sk === 'T#demo')!.targetSessionId;
      expect(newId).not.toBe(oldId);
    });

    it('declares to the target only the capabilities the client declared, filtered by version', async () => {
      // 2025-06-18 has no URL mode: a client that declares it still cannot be sent a URL elicitation.
      const { headers, sessionId } = await initSession(url, {
        protocolVersion: '2025-06-18',
        capabilities: { elicitation: { form: {}, url: {} }, sampling: {} },
      });
      await call(headers, 1, 'tools/call', { name: 'demo___echo', arguments: { text: 'x' } });
      const target = (await sessionItems(dynamo.endpoint, sessionId)).find((i) => i.sk === 'T#demo')!;
      expect(target.declaredCapabilities).toEqual({ elicitation: { form: {} }, sampling: {} });
      const none = await initSession(url);
      const res = await call(none.headers, 2, 'tools/call', { name: 'demo___use_aws', arguments: { command: 'ls' } });
      expect(res.result.content[0].text).toBe('elicitation unavailable: Client does not support form elicitation.');
    });
  });

  describe('HTTP rules', () => {
    it('answers 400 without a session id, 404 for an unknown one, and 404 after DELETE', async () => {
      const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
      expect((await post(url, {}, ping)).status).toBe(400);
      expect((await post(url, { 'mcp-session-id': 'no-such-session' }, ping)).status).toBe(404);
      const { headers, sessionId } = await initSession(url);
      await call(headers, 1, 'tools/call', { name: 'demo___echo', arguments: { text: 'x' } });
      const deleted = await fetch(url, { method: 'DELETE', headers });
      expect(deleted.status).toBe(200);
      expect(await sessionItems(dynamo.endpoint, sessionId)).toEqual([]);
      expect((await post(url, headers, ping)).status).toBe(404);
    });

    it('answers 400 to an invalid MCP-Protocol-Version', async () => {
      const { headers } = await initSession(url);
      const res = await post(
        url,
        { ...headers, 'mcp-protocol-version': '1999-01-01' },
        { jsonrpc: '2.0', id: 1, method: 'ping' },
      );
      expect(res.status).toBe(400);
    });

    it("answers GET with the session's standalone stream (SSE)", async () => {
      const { headers } = await initSession(url);
      const res = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      await res.body?.cancel();
    });

    it('answers POSTed notifications with 202', async () => {
      const { headers } = await initSession(url);
      const res = await post(url, headers, { jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
      expect(res.status).toBe(202);
    });
  });

  describe('bad input', () => {
    it('answers malformed JSON with -32700', async () => {
      const res = await post(url, {}, '{"jsonrpc": "2.0", "id": 1,');
      expect(res.status).toBe(400);
      expect((await res.json()).error.code).toBe(-32700);
    });

    it.each([
      ['a batch', [{ jsonrpc: '2.0', id: 1, method: 'ping' }]],
      ['a wrong version', { jsonrpc: '1.0', id: 1, method: 'ping' }],
      ['a number', 42],
      ['a method that is not a string', { jsonrpc: '2.0', id: 1, method: 7 }],
      ['an object id', { jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }],
    ])('answers %s with -32600', async (_label, body) => {
      const res = await post(url, {}, body);
      expect(res.status).toBe(400);
      expect((await res.json()).error.code).toBe(-32600);
    });

    it('answers an unknown method with -32601', async () => {
      const { headers } = await initSession(url);
      expect((await call(headers, 1, 'tools/frobnicate')).error.code).toBe(-32601);
    });

    it('refuses an oversized body with 413', async () => {
      const res = await post(
        url,
        {},
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(5 * 1024 * 1024) } }),
      );
      expect(res.status).toBe(413);
    });

    // In AWS the function URL owns the Host header; the check (DNS rebinding) is the local server's.
    it('checks Host and Origin on the local server, and leaves Host to the function URL in Lambda', async () => {
      // The local front ends (node:http, and the Lambda mode's function URL) check; the handler alone does not (400 = no session).
      const refused = kind === 'lambda handler' ? 400 : 403;
      const { request } = await import('node:http');
      const statusWith = (headers: Record<string, string>) =>
        new Promise<number>((resolve, reject) => {
          const target = new URL(url);
          const req = request(
            {
              host: target.hostname,
              port: target.port,
              path: target.pathname,
              method: 'POST',
              headers: { 'content-type': 'application/json', ...headers },
            },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            },
          );
          req.on('error', reject);
          req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
        });
      const port = new URL(url).port;
      expect(await statusWith({ host: 'attacker.example' })).toBe(refused);
      expect(await statusWith({ host: `attacker.example:${port}` })).toBe(refused);
      expect(await statusWith({ host: `localhost:${port}`, origin: 'http://attacker.example' })).toBe(refused);
      expect(await statusWith({ host: `localhost:${port}`, origin: `http://localhost:${port}` })).toBe(400); // allowed; 400 = no session
    });

    it('refuses a non-JSON content type with 415', async () => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hi' });
      expect(res.status).toBe(415);
    });

    it('answers a quick relayed call as JSON to a client that takes both, and as SSE to one that takes only SSE', async () => {
      const { headers } = await initSession(url);
      const quick = await post(url, headers, {
        jsonrpc: '2.0',
        id: 'call',
        method: 'tools/call',
        params: { name: 'demo___echo', arguments: { text: 's' } },
      });
      expect(quick.headers.get('content-type')).toContain('application/json');
      expect(await quick.json()).toEqual({
        jsonrpc: '2.0',
        id: 'call',
        result: { content: [{ type: 'text', text: 'echo: s' }] },
      });
      const res = await post(
        url,
        { ...headers, accept: 'text/event-stream' },
        { jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'demo___echo', arguments: { text: 's' } } },
      );
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const messages: Json[] = [];
      for await (const event of sseEvents(res)) if (event.message) messages.push(event.message);
      expect(messages).toEqual([
        { jsonrpc: '2.0', id: 'call', result: { content: [{ type: 'text', text: 'echo: s' }] } },
      ]);
    });
  });
});
