import { startDemoTarget } from '../../examples/targets/demo-target';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { meta, modernHeaders } from '../modern/helpers';
import type { GatewayKind } from '../support/gateways';
import { initSession } from '../support/mcp-http';
import { startWireRecorder, type WireRecorder } from '../support/wire-recorder';
import { withGateway } from '../support/with-gateway';

/**
 * JSON-RPC 2.0 §5: a response carries the request's id. The gateway keeps the id's JSON text — a
 * number beyond 2^53 or -0 comes back as written, in both eras, as JSON and as SSE — derives the
 * target's id from it exactly, and refuses ids longer than 256 characters before anything is sent.
 */
// The function-URL handler runs in the Lambda runtime (the real one, locally); in-process alone it would add nothing.
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];
const BIG = '9007199254740993'; // 2^53 + 1: JSON.parse makes it …992

/** The raw body of a POST whose JSON is given as text (so the id's text is exactly what is sent). */
async function postText(url: string, headers: Record<string, string>, body: string, accept?: string) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: accept ?? 'application/json', ...headers },
    body,
  });
}

/**
 * The data of the first message event of an SSE response, as text (the stream is read to its end). A
 * resumable stream (2025-11-25 sessions) opens with a priming event, an id and empty data and no
 * `event:` line (spec, transports, "Resumability and redelivery"): it is not a message.
 */
async function sseData(res: Response): Promise<string> {
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  const data = /^event: message\ndata: (.*)$/m.exec(await res.text())?.[1];
  if (data === undefined) throw new Error('no event');
  return data;
}

describe.each(kinds)('request ids through the %s', (kind) => {
  const gw = withGateway(
    (t) => ({
      logLevel: 'SILENT',
      targets: [
        { name: 'demo', url: t.demo.url },
        { name: 'modern', url: t.modern.url },
      ],
    }),
    {
      kind,
      targets: {
        demoTarget: () => startDemoTarget(),
        modernTarget: () => startModernDemoTarget(),
        demo: (earlier: Record<string, { url: string }>) => startWireRecorder(earlier.demoTarget!.url),
        modern: (earlier: Record<string, { url: string }>) => startWireRecorder(earlier.modernTarget!.url),
      },
    },
  );
  const demoWire = () => gw.targets.demo as WireRecorder;

  const call = (id: string, name = 'demo___echo') =>
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":{"text":"x"}}}`;

  it('2025 session: a number id beyond 2^53 and -0 come back exactly, as JSON and as SSE; the target gets c.n.<the same digits>', async () => {
    const { headers } = await initSession(gw.url);
    const json = await (await postText(gw.url, headers, call(BIG))).text();
    expect(json).toContain(`"id":${BIG},`);
    expect(JSON.parse(json).result.content[0].text).toBe('echo: x');
    const sse = await sseData(await postText(gw.url, headers, call('-0'), 'text/event-stream'));
    expect(sse).toMatch(/^\{"jsonrpc":"2\.0","id":-0,"result":/);
    const ids = demoWire()
      .posts('tools/call')
      .map((request) => request.body.id);
    expect(ids).toEqual(expect.arrayContaining([`c.n.${BIG}`, 'c.n.-0']));
    // An error the gateway authors carries it too (an unknown tool: -32602 in band).
    const unknown = await (await postText(gw.url, headers, call(BIG, 'demo___nope'))).text();
    expect(unknown).toMatch(new RegExp(`^\\{"jsonrpc":"2\\.0","id":${BIG},"error":\\{"code":-32602`));
  });

  it('2026-07-28 requests (a 2026 target and a 2025 one): the id comes back exactly', async () => {
    const body = (id: string, name: string) =>
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":{"text":"x"},"_meta":${JSON.stringify(meta())}}}`;
    for (const name of ['modern___echo', 'demo___echo']) {
      const res = await postText(gw.url, modernHeaders('tools/call', name), body(BIG, name));
      const text = await res.text();
      expect(res.status).toBe(200);
      expect(text).toContain(`"id":${BIG},`);
      const negative = await (await postText(gw.url, modernHeaders('tools/call', name), body('-0', name))).text();
      expect(negative).toMatch(/^\{"jsonrpc":"2\.0","id":-0,/);
    }
  });

  it('a string id over 256 characters is refused with -32600 before anything reaches a target; 256 is served', async () => {
    const { headers } = await initSession(gw.url);
    const before = demoWire().posts('tools/call').length;
    const long = await postText(gw.url, headers, call(JSON.stringify('x'.repeat(257))));
    expect(long.status).toBe(400);
    expect(await long.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Invalid Request: a request id is at most 256 characters' },
    });
    const million = await postText(gw.url, headers, call(JSON.stringify('y'.repeat(1_000_000))));
    expect(million.status).toBe(400);
    expect(demoWire().posts('tools/call').length).toBe(before);
    const fits = await postText(gw.url, headers, call(JSON.stringify('z'.repeat(256))));
    expect(fits.status).toBe(200);
    expect((await fits.json()).id).toBe('z'.repeat(256));
    expect(demoWire().posts('tools/call').at(-1)?.body.id).toBe(`c.s.${'z'.repeat(256)}`);
  });
});
