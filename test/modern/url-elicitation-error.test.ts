import { createServer } from 'node:http';
import type { LocalGateway } from '../../dev/local-gateway';
import { listen } from '../support/loopback';
import { type Json, modernCall, startGateway } from './helpers';

/**
 * A 2026-07-28 target answering -32042 (URL elicitation required). 2026-07-28 has no such error, but
 * SDK servers still send it there: the Python SDK (`mcp` 2.3) answers a 2026-07-28 `tools/call` whose
 * tool raises `UrlElicitationRequiredError` with exactly the error below (checked against it; the
 * TypeScript v2 SDK refuses to send it on 2026-07-28). The gateway makes it the URL round it makes of
 * a 2025 target's -32042, and the retry re-issues the call.
 */

jest.setTimeout(20_000);

const calls: Json[] = [];
let target: { base: string; close(): Promise<void> };
let gateway: LocalGateway;

/** The Python SDK's wire answers, trimmed to what the gateway reads. */
function answer(message: Json): Json {
  const ok = (result: Json) => ({ jsonrpc: '2.0', id: message.id, result: { resultType: 'complete', ...result } });
  switch (message.method) {
    case 'server/discover':
      return ok({
        supportedVersions: ['2026-07-28'],
        capabilities: { tools: {} },
        serverInfo: { name: 'py-url', version: '1' },
      });
    case 'tools/list':
      return ok({
        tools: [
          { name: 'read_private', inputSchema: { type: 'object', properties: { resource: { type: 'string' } } } },
        ],
      });
    case 'tools/call': {
      calls.push(message.params);
      const resource = message.params.arguments.resource;
      if (calls.filter((c) => c.arguments.resource === resource).length > 1)
        return ok({ content: [{ type: 'text', text: `contents of ${resource}` }], isError: false });
      return {
        jsonrpc: '2.0',
        id: message.id,
        error: {
          code: -32042,
          message: 'URL elicitation required',
          data: {
            elicitations: [
              {
                mode: 'url',
                message: `Grant access to ${resource}`,
                url: `https://auth.example/grant?resource=${resource}`,
                elicitationId: 'e1',
              },
            ],
          },
        },
      };
    }
    default:
      return { jsonrpc: '2.0', id: message.id ?? null, error: { code: -32601, message: 'Method not found' } };
  }
}

beforeAll(async () => {
  target = await listen(
    createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const message = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Json;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer(message)));
      });
    }),
  );
  gateway = await startGateway({ targets: [{ name: 'py', url: `${target.base}/mcp` }] });
});
afterAll(async () => {
  await gateway?.close();
  await target?.close();
});

test('-32042 from a 2026-07-28 target becomes a URL input_required round; the retry re-issues the call without the answers', async () => {
  const first = await modernCall(
    gateway.url,
    'tools/call',
    { name: 'py___read_private', arguments: { resource: 'r1' } },
    'a',
  );
  expect(first.status).toBe(200);
  expect(first.body.result).toMatchObject({
    resultType: 'input_required',
    inputRequests: {
      url_0: {
        method: 'elicitation/create',
        params: { mode: 'url', message: 'Grant access to r1', url: 'https://auth.example/grant?resource=r1' },
      },
    },
  });
  const retry = await modernCall(
    gateway.url,
    'tools/call',
    {
      name: 'py___read_private',
      arguments: { resource: 'r1' },
      inputResponses: { url_0: { action: 'accept' } },
      requestState: first.body.result.requestState,
    },
    'b',
  );
  expect(retry.body.result).toMatchObject({
    resultType: 'complete',
    content: [{ type: 'text', text: 'contents of r1' }],
  });
  // The target sees the same call again: no answers to requests it never made, no state it never gave.
  expect(calls.map((c) => [c.inputResponses, c.requestState])).toEqual([
    [undefined, undefined],
    [undefined, undefined],
  ]);
});
