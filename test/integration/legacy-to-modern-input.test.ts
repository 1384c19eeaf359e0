import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { type ModernDemoTarget, startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { clickOnConsentPage } from '../support/consent-page';
import type { CountedDynamo } from '../support/dynamo';
import type { GatewayKind, GatewayUnderTest } from '../support/gateways';
import { callAndAnswer, eventually, initSession, type Json, post, sessionItems, sseEvents } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * A 2025 session calling a 2026-07-28-only target that answers input_required (MCP 2026-07-28, multi round-trip requests):
 * the gateway sends each input request on the call's SSE stream with a gateway id, waits for the
 * answers (POSTed to any instance, stored in gateway question pending records), retries upstream with
 * inputResponses and the target's requestState, and returns the final result without resultType.
 */
jest.setTimeout(30_000);

// The function-URL handler runs in the Lambda runtime (the real one, locally); in-process alone it would add nothing.
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];
const ALL = { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: true } };

describe.each(kinds)('2025 session → 2026-07-28 target input through the %s', (kind) => {
  const gw = withGateway(
    { logLevel: 'SILENT' },
    { kind, targets: { modern: () => startModernDemoTarget() }, instances: 2, keepAliveMs: 100 },
  );
  let dynamo: CountedDynamo;
  let target: ModernDemoTarget;
  let second: GatewayUnderTest;
  let url: string;
  beforeAll(() => {
    ({ dynamo, url } = gw);
    target = gw.targets.modern;
    second = gw.instances[1];
  });

  const pendingItems = async (sessionId: string) =>
    (await sessionItems(dynamo.endpoint, sessionId)).filter((i) => i.sk.startsWith('P#'));
  const callsOf = (tool: string) => target.stats().calls.filter((c) => c.tool === tool);

  it('form elicitation: relayed with a gateway id, answered, retried with the same key and requestState', async () => {
    const { headers, sessionId } = await initSession(url, { capabilities: ALL });
    const before = callsOf('use_aws').length;
    let pendingWhileAsked: Json[] = [];
    const call = await callAndAnswer(
      url,
      headers,
      { id: 7, params: { name: 'modern___use_aws', arguments: { command: 'ls' } } },
      async () => {
        pendingWhileAsked = await pendingItems(sessionId);
        return { result: { action: 'accept', content: { confirm: true } } };
      },
    );
    const asked = call.messages[0];
    expect(asked).toMatchObject({
      method: 'elicitation/create',
      params: { message: 'Run `ls`?', requestedSchema: { type: 'object' } },
    });
    expect(asked.id).toMatch(/^gw-[A-Za-z0-9_-]{22}$/);
    expect(pendingWhileAsked).toEqual([
      expect.objectContaining({
        gatewayId: asked.id,
        method: 'elicitation/create',
        // Held by the gateway (the answer is stored for the waiting invocation), for the call's target.
        kind: 'question',
        target: 'modern',
        status: 'pending',
        clientRequestId: 7,
      }),
    ]);
    expect(call.answerStatuses).toEqual([202]);
    expect(call.response).toEqual({
      jsonrpc: '2.0',
      id: 7,
      result: { content: [{ type: 'text', text: 'executed: ls' }], _meta: expect.any(Object) },
    });
    expect(call.response.result.resultType).toBeUndefined();
    const calls = callsOf('use_aws').slice(before);
    expect(calls).toHaveLength(2);
    // The session's capabilities in the 2026 shape (roots.listChanged → roots: {}).
    expect(calls[0].clientCapabilities).toEqual({ elicitation: { form: {}, url: {} }, sampling: {}, roots: {} });
    expect(calls[1].inputResponseKeys).toEqual(['confirm']);
    expect(target.stats().minted).toContain(calls[1].requestState);
    expect(calls[0].requestState).toBeUndefined();
    expect(await pendingItems(sessionId)).toEqual([]);
  });

  it('URL elicitation on a 2025-11-25 session gets a minted elicitationId', async () => {
    const { headers } = await initSession(url, { capabilities: ALL });
    const call = await callAndAnswer(
      url,
      headers,
      { id: 'u', params: { name: 'modern___access_github_repo', arguments: { repo: 'o/r' } } },
      async (asked) => {
        await clickOnConsentPage(asked.params.url, 'allow'); // the user allows it on the target's page
        return { result: { action: 'accept' } };
      },
    );
    expect(call.messages[0].params).toMatchObject({
      mode: 'url',
      url: expect.stringMatching(new RegExp(`^${new URL(target.url).origin}/consent/`)), // the target's consent page
      elicitationId: expect.stringMatching(/^gw-elicitation-/),
    });
    expect(call.response.result.content).toEqual([{ type: 'text', text: 'accessed o/r' }]);
  });

  it('decline reaches the target, which gives its decline outcome', async () => {
    const { headers } = await initSession(url, { capabilities: ALL });
    const call = await callAndAnswer(
      url,
      headers,
      { id: 'd', params: { name: 'modern___use_aws', arguments: { command: 'rm' } } },
      () => ({ result: { action: 'decline' } }),
    );
    expect(call.response.result.content).toEqual([{ type: 'text', text: 'not executed (decline)' }]);
  });

  it('an answer POSTed to another gateway instance is picked up', async () => {
    const { headers } = await initSession(url, { capabilities: ALL });
    const call = await callAndAnswer(
      url,
      headers,
      { id: 'x', params: { name: 'modern___use_aws', arguments: { command: 'far' } } },
      () => ({ result: { action: 'accept', content: { confirm: true } } }),
      { answerUrl: second.url },
    );
    expect(call.answerStatuses).toEqual([202]);
    expect(call.response.result.content).toEqual([{ type: 'text', text: 'executed: far' }]);
  });

  it('several rounds, no requestState, sampling and roots', async () => {
    const { headers } = await initSession(url, { capabilities: ALL });
    const multi = await callAndAnswer(
      url,
      headers,
      { id: 'm', params: { name: 'modern___multi_elicit', arguments: {} } },
      (r) =>
        r.params.message === 'What is your name?'
          ? { result: { action: 'accept', content: { name: 'Ada' } } }
          : { result: { action: 'accept', content: { age: 36 } } },
    );
    expect(multi.messages.filter((m) => m.method).map((m) => m.params.message)).toEqual([
      'What is your name?',
      'How old are you, Ada?',
    ]);
    expect(multi.response.result.content[0].text).toBe('hello Ada, 36');

    const before = callsOf('confirm_stateless').length;
    const stateless = await callAndAnswer(
      url,
      headers,
      { id: 's', params: { name: 'modern___confirm_stateless', arguments: { action: 'go' } } },
      () => ({
        result: { action: 'accept', content: { ok: true } },
      }),
    );
    expect(stateless.response.result.content[0].text).toBe('done: go');
    const retry = callsOf('confirm_stateless').slice(before)[1];
    expect(retry.inputResponseKeys).toEqual(['ok']);
    expect(retry.requestState).toBeUndefined();

    const sample = await callAndAnswer(
      url,
      headers,
      { id: 'sa', params: { name: 'modern___sample', arguments: { prompt: 'hi' } } },
      () => ({
        result: { role: 'assistant', model: 'm1', content: { type: 'text', text: 'sampled' } },
      }),
    );
    expect(sample.messages[0].method).toBe('sampling/createMessage');
    expect(sample.response.result.content[0].text).toBe('sampled: m1: sampled');

    const roots = await callAndAnswer(
      url,
      headers,
      { id: 'ro', params: { name: 'modern___list_roots', arguments: {} } },
      () => ({
        result: { roots: [{ uri: 'file:///w', name: 'w' }] },
      }),
    );
    expect(roots.response.result.content[0].text).toBe('roots: file:///w');
  });

  it('a JSON-RPC error from the client stops the call with a clear error', async () => {
    const { headers, sessionId } = await initSession(url, { capabilities: ALL });
    const call = await callAndAnswer(
      url,
      headers,
      { id: 'e', params: { name: 'modern___sample', arguments: { prompt: 'no' } } },
      () => ({
        error: { code: -1, message: 'User rejected sampling request' },
      }),
    );
    expect(call.response.error).toMatchObject({
      code: -32603,
      data: {
        type: 'InputRequestFailed',
        target: 'modern',
        inputMethod: 'sampling/createMessage',
        clientError: { code: -1 },
      },
    });
    expect(call.response.error.message).toContain('User rejected sampling request');
    expect(await pendingItems(sessionId)).toEqual([]);
  });

  it('a session without elicitation (or without URL mode) gets the clear error, nothing is sent to it', async () => {
    const { headers } = await initSession(url, { capabilities: {} });
    const none = await callAndAnswer(
      url,
      headers,
      { id: 'n', params: { name: 'modern___use_aws', arguments: { command: 'x' } } },
      () => {
        throw new Error('nothing may be asked');
      },
    );
    expect(none.messages).toHaveLength(1);
    expect(none.response.error).toMatchObject({
      code: -32603,
      data: { type: 'CrossEraInputUnsupported', target: 'modern' },
    });

    const formOnly = await initSession(url, { capabilities: { elicitation: { form: {} } } });
    const url2 = await callAndAnswer(
      url,
      formOnly.headers,
      { id: 'f', params: { name: 'modern___access_github_repo', arguments: { repo: 'a/b' } } },
      () => {
        throw new Error('nothing may be asked');
      },
    );
    expect(url2.response.error.data).toMatchObject({
      type: 'CrossEraInputUnsupported',
      requiredCapabilities: { elicitation: { url: {} } },
    });
  });

  // The local server and the handler's invoker signal a client that left; Lambda does not (see legacy-relay).
  // A 2025-06-18 stream cannot be resumed (a 2025-11-25 one can: test/integration/resumable-streams.test.ts).
  it('a 2025-06-18 client going away ends the wait and removes the pending record where the platform says so', async () => {
    const { headers, sessionId } = await initSession(url, { capabilities: ALL, protocolVersion: '2025-06-18' });
    const abort = new AbortController();
    const res = await post(
      url,
      headers,
      {
        jsonrpc: '2.0',
        id: 'gone',
        method: 'tools/call',
        params: { name: 'modern___use_aws', arguments: { command: 'x' } },
      },
      abort.signal,
    );
    let askedId: unknown;
    for await (const event of sseEvents(res)) {
      if (event.message?.method === 'elicitation/create') {
        askedId = event.message.id;
        break; // leaving the loop cancels the body
      }
    }
    abort.abort();
    if (kind === 'lambda runtime') {
      // Nothing tells the function: the held request waits on (pendingRequestTimeoutSeconds ends it).
      // A duration: that nothing ends it has no event to wait for.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(await pendingItems(sessionId)).toHaveLength(1);
      // Let the held call end (it would poll DynamoDB until the pending timeout, under later tests' counts).
      const answer = await post(url, headers, { jsonrpc: '2.0', id: askedId, result: { action: 'decline' } });
      expect(answer.status).toBe(202);
      await eventually(async () => expect(await pendingItems(sessionId)).toEqual([]));
    } else {
      await eventually(async () => expect(await pendingItems(sessionId)).toEqual([]));
    }
  });

  it('an unanswered input request past pendingRequestTimeoutSeconds ends the call with -32001; a late answer gets 400', async () => {
    const impatient = await gw.start({ pendingRequestTimeoutSeconds: 1 });
    try {
      const { headers, sessionId } = await initSession(impatient.url, { capabilities: ALL });
      const res = await post(impatient.url, headers, {
        jsonrpc: '2.0',
        id: 'late',
        method: 'tools/call',
        params: { name: 'modern___use_aws', arguments: { command: 'x' } },
      });
      const messages: Json[] = [];
      for await (const event of sseEvents(res)) if (event.message) messages.push(event.message);
      expect(messages[0].method).toBe('elicitation/create');
      expect(messages[1]).toMatchObject({ id: 'late', error: { code: -32001 } });
      expect(await pendingItems(sessionId)).toEqual([]);
      const lateAnswer = await post(impatient.url, headers, {
        jsonrpc: '2.0',
        id: messages[0].id,
        result: { action: 'accept', content: { confirm: true } },
      });
      expect(lateAnswer.status).toBe(400);
      await lateAnswer.body?.cancel();
    } finally {
      await impatient.close();
    }
  });

  it('the official v1 SDK client completes form and URL calls', async () => {
    const client = new Client(
      { name: 'sdk-v1-client', version: '1.0.0' },
      { capabilities: { elicitation: { form: {}, url: {} } } },
    );
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      if (request.params.mode === 'url') {
        await clickOnConsentPage(request.params.url, 'allow');
        return { action: 'accept' };
      }
      return { action: 'accept', content: { confirm: true } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    try {
      const textOf = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;
      expect(textOf(await client.callTool({ name: 'modern___use_aws', arguments: { command: 'aws s3 ls' } }))).toBe(
        'executed: aws s3 ls',
      );
      expect(textOf(await client.callTool({ name: 'modern___access_github_repo', arguments: { repo: 'a/b' } }))).toBe(
        'accessed a/b',
      );
      expect(asked).toEqual(['Run `aws s3 ls`?', 'Authorize access to a/b']);
    } finally {
      await client.close();
    }
  });

  it('DynamoDB requests per call: 1 for a 2025 call without input, 0 for 2026-07-28 calls and input rounds', async () => {
    const { headers, sessionId } = await initSession(url, { capabilities: ALL });
    /**
     * This test's requests since the last reset: its session's, or of no session. An earlier test's call
     * may still run in its environment on a loaded machine, and read its own session meanwhile.
     */
    const ours = () => dynamo.requests.filter((r) => r.body.includes(`"S#${sessionId}"`) || !r.body.includes('"S#'));
    const countsOf = (requests: Array<{ operation: string }>) => {
      const counts: Record<string, number> = {};
      for (const { operation } of requests) counts[operation] = (counts[operation] ?? 0) + 1;
      return counts;
    };
    /** A 2025 call without input: its answer, and whether it came as a stream. */
    const echo2025 = async (id: number) => {
      const res = await post(url, headers, {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'modern___echo', arguments: { text: 'x' } },
      });
      const streamed = (res.headers.get('content-type') ?? '').includes('text/event-stream');
      let answer: Json = {};
      for await (const event of sseEvents(res)) if (event.message?.id === id) answer = event.message;
      return { answer, streamed };
    };
    await echo2025(1); // the first call learns the target's era
    dynamo.reset();
    const second = await echo2025(2);
    expect(second.answer.result?.content?.[0]?.text).toBe('echo: x');
    // The session's one read. A call still running after the keep-alive interval (100 ms here) answers
    // as a stream, which in a 2025-11-25 session is resumable: its end is kept (one BatchWriteItem) —
    // on a loaded machine an echo can take that long.
    expect(countsOf(ours())).toEqual(second.streamed ? { Query: 1, BatchWriteItem: 1 } : { Query: 1 });

    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'counting', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
    };
    const call2026 = async (params: Json): Promise<Json> => {
      const res = await post(
        url,
        { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': params.name },
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { ...params, _meta: meta } },
      );
      let last: Json = {};
      for await (const event of sseEvents(res)) if (event.message) last = event.message;
      return last;
    };
    dynamo.reset();
    expect((await call2026({ name: 'modern___echo', arguments: { text: 'y' } })).result.content[0].text).toBe(
      'echo: y',
    );
    const first = await call2026({ name: 'modern___use_aws', arguments: { command: 'ls' } });
    expect(first.result.resultType).toBe('input_required');
    const done = await call2026({
      name: 'modern___use_aws',
      arguments: { command: 'ls' },
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
      requestState: first.result.requestState,
    });
    expect(done.result.content[0].text).toBe('executed: ls');
    // The requests themselves, so that one that should not be here says what it is.
    expect(ours()).toEqual([]);
  });
});
