import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type CallToolResult,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  UrlElicitationRequiredError,
} from '@modelcontextprotocol/sdk/types.js';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { clickOnConsentPage } from '../support/consent-page';
import type { GatewayKind } from '../support/gateways';
import { initSession, type Json } from '../support/mcp-http';
import { plainSseEvents } from '../support/plain-sse';
import { withGateway } from '../support/with-gateway';

/**
 * The reference page's 2025-era client samples, ported line by line from Python (`requests` +
 * `sseclient`) to fetch with only the URL changed — every event parsed as JSON under the plain
 * parser's dispatch rules (test/support/plain-sse.ts: a priming event's empty data would throw, as
 * it does for the samples themselves; reference-samples-verbatim.test.ts runs them in Python) — and
 * the official v1 SDK client with elicitation, sampling and roots handlers. One target, so the samples' bare tool names resolve.
 */
// The function-URL handler runs in the Lambda runtime (the real one, locally); in-process alone it would add nothing.
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];

describe.each(kinds)('reference clients through the %s', (kind) => {
  const gw = withGateway({ logLevel: 'SILENT' }, { kind, targets: { demo: () => startDemoTarget() } });
  let gateway_url: string; // the samples' own name
  beforeAll(() => {
    gateway_url = gw.url;
  });

  /** `requests.post(url, headers=..., json=...)` */
  const requests_post = (url: string, headers: Record<string, string>, json: unknown) =>
    fetch(url, { method: 'POST', headers, body: JSON.stringify(json) });

  it('form mode sample (2025-06-18): initialize, stream tools/call, answer the elicitation in a new request', async () => {
    const printed: string[] = [];
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      Accept: 'text/event-stream',
      Authorization: 'Bearer YOUR_ACCESS_TOKEN',
    };

    // Step 1: Initialize with elicitation capability
    const init_response = await requests_post(gateway_url, headers, {
      jsonrpc: '2.0',
      id: 'init-request',
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: { elicitation: { form: {}, url: {} } },
        clientInfo: { name: 'my-agent', version: '1.0.0' },
      },
    });
    const session_id = init_response.headers.get('Mcp-Session-Id')!;
    headers['Mcp-Session-Id'] = session_id;
    headers['MCP-Protocol-Version'] = '2025-06-18';

    // Step 2: Call tool (streaming response)
    const response = await requests_post(gateway_url, headers, {
      jsonrpc: '2.0',
      id: 'tool-call-1',
      method: 'tools/call',
      params: { name: 'use_aws', arguments: { command: 'aws s3 rm s3://my-bucket/important-file' } },
    });

    // Step 3: Process SSE events
    let answerStatus = 0;
    // `sseclient.SSEClient(response).events()`, then `json.loads(event.data)`: every dispatched event parsed.
    for await (const event of plainSseEvents(response)) {
      const data = JSON.parse(event.data) as Json;
      if (data.method === 'elicitation/create') {
        const elicitation_id = data.id;
        printed.push(`Form elicitation received: ${data.params.message}`);
        // Step 4: Send elicitation response
        const answer = await requests_post(gateway_url, headers, {
          jsonrpc: '2.0',
          id: elicitation_id,
          result: { action: 'accept', content: { confirm: true } },
        });
        answerStatus = answer.status;
      } else if ('result' in data) {
        printed.push(`Tool result: ${JSON.stringify(data.result)}`);
        break;
      }
    }
    expect(answerStatus).toBe(202);
    expect(printed).toEqual([
      'Form elicitation received: Run `aws s3 rm s3://my-bucket/important-file`?',
      `Tool result: ${JSON.stringify({ content: [{ type: 'text', text: 'executed: aws s3 rm s3://my-bucket/important-file' }] })}`,
    ]);
  });

  it('URL mode sample (2025-11-25): the URL elicitation arrives on the stream and is answered by a new request', async () => {
    // The sample assumes an existing session ("session-abc123def456"); the test opens a real one.
    const existing = await initSession(gateway_url, { capabilities: { elicitation: { form: {}, url: {} } } });
    const opened: string[] = [];
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      Accept: 'text/event-stream',
      Authorization: 'Bearer YOUR_ACCESS_TOKEN',
      'MCP-Protocol-Version': '2025-11-25',
      'Mcp-Session-Id': existing.sessionId,
    };

    // Call tool that triggers URL elicitation
    const response = await requests_post(gateway_url, headers, {
      jsonrpc: '2.0',
      id: 'tool-call-2',
      method: 'tools/call',
      params: { name: 'access_github_repo', arguments: { repo: 'my-org/my-repo' } },
    });

    // Process SSE events
    let result: Json | undefined;
    // `sseclient.SSEClient(response).events()`, then `json.loads(event.data)`: every dispatched event parsed.
    for await (const event of plainSseEvents(response)) {
      const data = JSON.parse(event.data) as Json;
      if (data.method === 'elicitation/create') {
        const elicitation_id = data.id;
        const url = data.params.url;
        opened.push(url); // webbrowser.open(url)
        await clickOnConsentPage(url, 'allow'); // the user completes the page; input("Press Enter ...")
        // Send elicitation response
        await requests_post(gateway_url, headers, { jsonrpc: '2.0', id: elicitation_id, result: { action: 'accept' } });
      } else if ('result' in data) {
        result = data.result;
        break;
      }
    }
    // The demo target's own consent page (it used to be a github.example URL that does not resolve).
    expect(opened).toEqual([
      expect.stringMatching(new RegExp(`^${new URL(gw.targets.demo!.url).origin}/consent/[0-9a-f-]{36}$`)),
    ]);
    expect(result).toEqual({ content: [{ type: 'text', text: 'accessed my-org/my-repo' }] });
  });

  describe('the official v1 SDK client', () => {
    let client: Client;
    let asked: string[];

    beforeAll(async () => {
      asked = [];
      client = new Client(
        { name: 'sdk-v1-client', version: '1.0.0' },
        { capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: true } } },
      );
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params.message);
        if (request.params.mode === 'url') {
          await clickOnConsentPage(request.params.url, 'allow');
          return { action: 'accept' };
        }
        const action = /a(\d)/.exec(request.params.message)?.[1];
        // Answers arrive out of order on purpose: later calls answer first.
        await new Promise((resolve) => setTimeout(resolve, action ? (6 - Number(action)) * 25 : 0));
        return { action: 'accept', content: { confirm: true } };
      });
      client.setRequestHandler(CreateMessageRequestSchema, async () => ({
        role: 'assistant',
        model: 'sdk-model',
        content: { type: 'text', text: 'sampled text' },
      }));
      client.setRequestHandler(ListRootsRequestSchema, async () => ({
        roots: [{ uri: 'file:///workspace', name: 'ws' }],
      }));
      await client.connect(new StreamableHTTPClientTransport(new URL(gateway_url)));
    });
    afterAll(async () => {
      await client?.close();
    });

    const textOf = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;

    it('lists the aggregated tools and calls one', async () => {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('demo___use_aws');
      expect(textOf(await client.callTool({ name: 'demo___echo', arguments: { text: 'sdk' } }))).toBe('echo: sdk');
    });

    it('completes calls that elicit (form and URL), sample and list roots', async () => {
      expect(textOf(await client.callTool({ name: 'use_aws', arguments: { command: 'aws s3 ls' } }))).toBe(
        'executed: aws s3 ls',
      );
      expect(textOf(await client.callTool({ name: 'demo___access_github_repo', arguments: { repo: 'a/b' } }))).toBe(
        'accessed a/b',
      );
      expect(textOf(await client.callTool({ name: 'demo___sample', arguments: { prompt: 'hi' } }))).toBe(
        'sampled: sdk-model: sampled text',
      );
      expect(textOf(await client.callTool({ name: 'demo___list_roots', arguments: {} }))).toBe(
        'roots: file:///workspace',
      );
    });

    it('gives six parallel elicitations in one session each their own answer', async () => {
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          client.callTool({ name: 'demo___confirm_action', arguments: { action: `a${i}` } }),
        ),
      );
      expect(results.map(textOf)).toEqual(Array.from({ length: 6 }, (_, i) => `confirmed: a${i}`));
      expect(asked.filter((m) => m.startsWith('Confirm action'))).toHaveLength(6);
    });

    it('surfaces the -32042 error as the SDK’s UrlElicitationRequiredError', async () => {
      const resource = `sdk-${kind.replace(' ', '-')}`;
      const refused = await client
        .callTool({ name: 'demo___url_required', arguments: { resource } })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(UrlElicitationRequiredError);
      expect(refused).toMatchObject({
        code: -32042,
      });
      // The user completes the page the error names, then the client retries.
      await clickOnConsentPage((refused as UrlElicitationRequiredError).elicitations[0]!.url, 'allow');
      expect(textOf(await client.callTool({ name: 'demo___url_required', arguments: { resource } }))).toBe(
        `authorized ${resource}`,
      );
    });
  });
});
