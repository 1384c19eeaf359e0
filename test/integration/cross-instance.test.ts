import { startDemoTarget } from '../../examples/targets/demo-target';
import { startGatewayProcess } from '../support/gateways';
import {
  callAndAnswer,
  initSession,
  initSessionRetrying,
  type Json,
  post,
  readMessage,
  sseEvents,
} from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * Two gateway processes sharing one DynamoDB endpoint behave like two Lambda instances of one
 * deployment: a session from one is served by the other, and an elicitation streamed by one is
 * answered through the other.
 */
describe('two gateway processes sharing one DynamoDB endpoint', () => {
  let a: Awaited<ReturnType<typeof startGatewayProcess>>;
  let b: Awaited<ReturnType<typeof startGatewayProcess>>;
  const ALL = { elicitation: { form: {}, url: {} }, sampling: {} };
  // Declared before the fixture: the processes stop before the fixture closes the target and DynamoDB.
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  // DynamoDB and the demo target; the two gateways are processes of their own (`npm start`), started here.
  const gw = withGateway({}, { targets: { demo: () => startDemoTarget() }, instances: 0 });
  beforeAll(async () => {
    [a, b] = await Promise.all([
      startGatewayProcess(gw.config, gw.dynamodbEndpoint, { logLevel: 'DEBUG' }),
      startGatewayProcess(gw.config, gw.dynamodbEndpoint),
    ]);
  }, 60_000);

  it('serves a session initialized on one process from the other', async () => {
    const { headers } = await initSession(a.url);
    const res = await post(b.url, headers, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'demo___echo', arguments: { text: 'from b' } },
    });
    expect((await readMessage(res)).result.content[0].text).toBe('echo: from b');
    const deleted = await fetch(b.url, { method: 'DELETE', headers });
    expect(deleted.status).toBe(200);
    expect((await post(a.url, headers, { jsonrpc: '2.0', id: 2, method: 'ping' })).status).toBe(404);
  });

  it('streams the call from one process and takes the answer on the other; wrong ids and duplicates get -32600', async () => {
    const { headers } = await initSession(a.url, { capabilities: ALL });
    const res = await post(a.url, headers, {
      jsonrpc: '2.0',
      id: 'x',
      method: 'tools/call',
      params: { name: 'demo___use_aws', arguments: { command: 'cross' } },
    });
    const seen: Json[] = [];
    const statuses: Array<[number, number?]> = [];
    for await (const event of sseEvents(res)) {
      if (!event.message) continue;
      seen.push(event.message);
      if (event.message.method === 'elicitation/create') {
        const answer = (id: unknown) => ({
          jsonrpc: '2.0',
          id,
          result: { action: 'accept', content: { confirm: true } },
        });
        const wrong = await post(b.url, headers, answer('gw-wrong'));
        statuses.push([wrong.status, (await wrong.json()).error.code]);
        const right = await post(b.url, headers, answer(event.message.id));
        statuses.push([right.status]);
        const duplicate = await post(a.url, headers, answer(event.message.id));
        statuses.push([duplicate.status, (await duplicate.json()).error.code]);
      }
      if (event.message.id === 'x' && !event.message.method) break;
    }
    expect(statuses).toEqual([[400, -32600], [202], [400, -32600]]);
    expect(seen[seen.length - 1].result.content[0].text).toBe('executed: cross');
  });

  it('completes twenty concurrent sessions spread over both processes with nothing lost or crossed', async () => {
    const runs = Array.from({ length: 20 }, async (_, i) => {
      const [streamer, answerer] = i % 2 === 0 ? [a, b] : [b, a];
      const { headers } = await initSessionRetrying(streamer.url, { capabilities: ALL });
      const call = await callAndAnswer(
        streamer.url,
        headers,
        { id: `s${i}`, params: { name: 'demo___multi_elicit', arguments: {} } },
        (asked) => ({
          result: {
            action: 'accept',
            content: 'name' in asked.params.requestedSchema.properties ? { name: `user${i}` } : { age: i },
          },
        }),
        { answerUrl: answerer.url },
      );
      expect(call.answerStatuses).toEqual([202, 202]);
      return call.response.result.content[0].text;
    });
    expect(await Promise.all(runs)).toEqual(Array.from({ length: 20 }, (_, i) => `hello user${i}, ${i}`));
  });

  it('logs structured JSON with session, target and method, and never the bearer token', async () => {
    const token = 'secret-token-that-must-not-be-logged';
    const { headers, sessionId } = await initSession(a.url, {
      capabilities: ALL,
      headers: { authorization: `Bearer ${token}` },
    });
    await callAndAnswer(
      a.url,
      headers,
      { id: 'log', params: { name: 'demo___use_aws', arguments: { command: 'ls' } } },
      () => ({
        result: { action: 'accept', content: { confirm: true } },
      }),
    );
    const lines = a
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'));
    const relayed = lines
      .map((line) => JSON.parse(line))
      .find((entry) => entry.message === 'relayed a server request' && entry.sessionId === sessionId);
    expect(relayed).toMatchObject({
      level: 'INFO',
      service: 'mcp-gateway',
      sessionId,
      target: 'demo',
      method: 'tools/call',
    });
    expect(a.output()).not.toContain(token);
  });
});
