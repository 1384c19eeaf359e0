import { type ModernDemoTarget, startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { clickOnConsentPage } from '../support/consent-page';
import { type Json, withModernGateway } from './helpers';

/**
 * The reference page's two 2026-07-28 Python samples (form: use_aws; URL: access_github_repo),
 * ported line by line to fetch: same headers, same bodies, same control flow; only `gateway_url`
 * differs. The target is a modern-only v2 SDK server; DynamoDB is unreachable throughout.
 */

jest.setTimeout(30_000);

// One target, names unprefixed ('conditional'), so the sample's bare tool names are the exposed ones.
const gw = withModernGateway({ toolNamePrefix: 'conditional' }, { targets: { aws: () => startModernDemoTarget() } });
let target: ModernDemoTarget;
let gateway_url: string; // the sample's own name

beforeAll(() => {
  target = gw.targets.aws;
  gateway_url = gw.url;
});

/** `requests.post(url, headers=headers, json=body).json()` */
async function requestsPostJson(url: string, headers: Record<string, string>, json: unknown): Promise<Json> {
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify(json),
    signal: AbortSignal.timeout(15_000),
  });
  return (await res.json()) as Json;
}

test('form mode sample (2026-07-28): input_required, then the retry completes', async () => {
  const printed: string[] = [];
  const print = (line: string) => printed.push(line);

  const META = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'my-agent', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {}, url: {} } },
  };
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    Authorization: 'Bearer YOUR_ACCESS_TOKEN',
    'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': 'tools/call',
    'Mcp-Name': 'use_aws',
  };
  const args = { command: 'aws s3 rm s3://my-bucket/important-file' };

  // Step 1: Call the tool, declaring the elicitation capability in _meta
  let response = await requestsPostJson(gateway_url, headers, {
    jsonrpc: '2.0',
    id: 'tool-call-1',
    method: 'tools/call',
    params: { name: 'use_aws', arguments: args, _meta: META },
  });

  let result = response.result;
  expect(result.resultType).toBe('input_required');
  if (result.resultType === 'input_required') {
    // Step 2: Fulfill each input request (form elicitation)
    const input_responses: Json = {};
    for (const [key, input_request] of Object.entries(result.inputRequests ?? {}) as Array<[string, Json]>) {
      print(`Form elicitation received: ${input_request.params.message}`);
      input_responses[key] = { action: 'accept', content: { confirm: true } };
    }

    // Step 3: Retry the tool call with a new id, the input responses,
    // and the requestState echoed back unmodified
    const retry_params: Json = { name: 'use_aws', arguments: args, _meta: META, inputResponses: input_responses };
    if ('requestState' in result) retry_params.requestState = result.requestState;
    response = await requestsPostJson(gateway_url, headers, {
      jsonrpc: '2.0',
      id: 'tool-call-2',
      method: 'tools/call',
      params: retry_params,
    });
    result = response.result;
  }

  print(`Tool result: ${JSON.stringify(result)}`);
  expect(printed[0]).toBe('Form elicitation received: Run `aws s3 rm s3://my-bucket/important-file`?');
  expect(result.resultType).toBe('complete');
  expect(result.content).toEqual([{ type: 'text', text: 'executed: aws s3 rm s3://my-bucket/important-file' }]);

  // The target got its own requestState back, byte for byte, inside the gateway's sealed one.
  const calls = target.stats().calls.filter((c) => c.tool === 'use_aws');
  const minted = target.stats().minted;
  expect(calls.map((c) => c.requestState)).toEqual([undefined, minted[minted.length - 1]]);
});

test('URL mode sample (2026-07-28): input_required with a URL request, then the retry completes', async () => {
  const printed: string[] = [];
  const print = (line: string) => printed.push(line);
  const opened: string[] = [];
  const webbrowser = { open: (url: string) => opened.push(url) };
  // "Press Enter after completing authentication...": the user has completed the page that was opened.
  const input = async (_prompt: string) => {
    for (const page of opened) await clickOnConsentPage(page, 'allow');
  };

  const META = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'my-agent', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {}, url: {} } },
  };
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    Authorization: 'Bearer YOUR_ACCESS_TOKEN',
    'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': 'tools/call',
    'Mcp-Name': 'access_github_repo',
  };
  const args = { repo: 'my-org/my-repo' };

  // Step 1: Call the tool, declaring the elicitation capability in _meta
  let response = await requestsPostJson(gateway_url, headers, {
    jsonrpc: '2.0',
    id: 'tool-call-1',
    method: 'tools/call',
    params: { name: 'access_github_repo', arguments: args, _meta: META },
  });

  let result = response.result;
  expect(result.resultType).toBe('input_required');
  if (result.resultType === 'input_required') {
    // Step 2: Open the browser for the user to complete each URL elicitation
    const input_responses: Json = {};
    for (const [key, input_request] of Object.entries(result.inputRequests ?? {}) as Array<[string, Json]>) {
      const params = input_request.params;
      print(`URL elicitation: ${params.message}`);
      webbrowser.open(params.url);
      await input('Press Enter after completing authentication...');
      input_responses[key] = { action: 'accept' };
    }

    // Step 3: Retry the tool call with a new id, the input responses,
    // and the requestState echoed back unmodified
    const retry_params: Json = {
      name: 'access_github_repo',
      arguments: args,
      _meta: META,
      inputResponses: input_responses,
    };
    if ('requestState' in result) retry_params.requestState = result.requestState;
    response = await requestsPostJson(gateway_url, headers, {
      jsonrpc: '2.0',
      id: 'tool-call-2',
      method: 'tools/call',
      params: retry_params,
    });
    result = response.result;
  }

  print(`Tool result: ${JSON.stringify(result)}`);
  expect(printed[0]).toBe('URL elicitation: Authorize access to my-org/my-repo');
  // The demo target's own consent page (it used to be a github.example URL that does not resolve).
  expect(opened).toEqual([expect.stringMatching(new RegExp(`^${new URL(target.url).origin}/consent/[0-9a-f-]{36}$`))]);
  expect(result.resultType).toBe('complete');
  expect(result.content).toEqual([{ type: 'text', text: 'accessed my-org/my-repo' }]);
});
