import type { LocalGateway } from '../../dev/local-gateway';
import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { type ModernDemoTarget, startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { clickOnConsentPage } from '../support/consent-page';
import { eventually, initSession, post as post2025, readMessage } from '../support/mcp-http';
import { type Json, meta, modernCall, modernHeaders, post, sseMessages, startGateway } from './helpers';

/**
 * Across eras: a 2026-07-28 client calling a 2025-only target, and a 2025 session calling a
 * 2026-only target. Plain calls work with the gateway speaking each side's era; where input cannot
 * cross eras the call ends with a clear error, never a hang. (A 2025 session that declared the
 * capability does get a 2026 target's input requests: test/integration/legacy-to-modern-input.test.ts.)
 */

jest.setTimeout(30_000);

let legacyTarget: DemoTarget;
let modernTarget: ModernDemoTarget;
let dualTarget: ModernDemoTarget;
let gateway: LocalGateway;
let url: string;

beforeAll(async () => {
  legacyTarget = await startDemoTarget();
  modernTarget = await startModernDemoTarget();
  dualTarget = await startModernDemoTarget({ legacy: 'stateless', name: 'dual' });
});

afterAll(async () => {
  await legacyTarget?.close();
  await modernTarget?.close();
  await dualTarget?.close();
});

describe('2026-07-28 client → 2025-only target (DynamoDB unreachable)', () => {
  beforeAll(async () => {
    gateway = await startGateway({ targets: [{ name: 'legacy', url: legacyTarget.url }] });
    url = gateway.url;
  });
  afterAll(async () => gateway?.close());

  test('the era is probed once and the target is reached with initialize', async () => {
    const list = await modernCall(url, 'tools/list', {}, 'l1');
    expect(list.body.result.tools.map((t: Json) => t.name)).toEqual(
      expect.arrayContaining(['legacy___echo', 'legacy___use_aws']),
    );
    expect(list.body.result).toMatchObject({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
    const call = await modernCall(url, 'tools/call', { name: 'legacy___echo', arguments: { text: 'hello' } }, 'c1');
    expect(call.body.result).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: 'echo: hello' }],
    });
    expect(gateway.deps.targets.eras.probes).toBe(1);
    // One 2025 session per caller and capability set, reused across requests.
    expect(gateway.deps.legacySessions.initializations).toBe(1);
  });

  test('prompts/get and resources/read', async () => {
    const prompt = await modernCall(
      url,
      'prompts/get',
      { name: 'legacy___greeting', arguments: { name: 'Ada' } },
      'p1',
    );
    expect(prompt.body.result.messages[0].content.text).toBe('Hello, Ada!');
    expect(prompt.body.result.resultType).toBe('complete');
    const read = await modernCall(url, 'resources/read', { uri: 'demo://items/7' }, 'r1');
    expect(read.body.result).toMatchObject({
      resultType: 'complete',
      ttlMs: 0,
      cacheScope: 'private',
      contents: [{ text: 'item 7' }],
    });
  });

  test('a target elicitation becomes a bridged input round, which needs DynamoDB: without it a clear 503, the call is cancelled at the target, no hang (the test timeout catches one)', async () => {
    const cancelledBefore = legacyTarget.stats().cancelledRequestIds.length;
    const res = await modernCall(
      url,
      'tools/call',
      { name: 'legacy___use_aws', arguments: { command: 'aws s3 ls' } },
      'e1',
    );
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.body.error.code).toBe(-32603);
    expect(res.body.error.data).toMatchObject({ type: 'ServiceUnavailable', retryable: true });
    await eventually(() => expect(legacyTarget.stats().cancelledRequestIds.length).toBe(cancelledBefore + 1));
  });

  test('a JSON-only request cannot hold a bridged call: CrossEraInputUnsupported, cancelled at the target, no hang', async () => {
    const res = await post(
      url,
      { ...modernHeaders('tools/call', 'legacy___use_aws'), Accept: 'application/json' },
      {
        jsonrpc: '2.0',
        id: 'j1',
        method: 'tools/call',
        params: { name: 'legacy___use_aws', arguments: { command: 'aws s3 ls' }, _meta: meta() },
      },
    );
    expect(res.status).toBe(200);
    expect(res.body.error.message).toContain('elicitation/create');
    expect(res.body.error.data).toMatchObject({
      type: 'CrossEraInputUnsupported',
      target: 'legacy',
      inputMethod: 'elicitation/create',
    });
  });

  test('-32042 from a 2025 target becomes a URL input_required round; the retry re-issues the call', async () => {
    const first = await modernCall(
      url,
      'tools/call',
      { name: 'legacy___url_required', arguments: { resource: 'r-1' } },
      'u1',
    );
    expect(first.body.result.resultType).toBe('input_required');
    const [request] = Object.values(first.body.result.inputRequests) as Json[];
    expect(request).toEqual({
      method: 'elicitation/create',
      params: {
        mode: 'url',
        message: 'Authorization required for r-1',
        url: expect.stringMatching(new RegExp(`^${new URL(legacyTarget.url).origin}/consent/[0-9a-f-]{36}$`)),
      },
    });
    await clickOnConsentPage(request.params.url, 'allow');
    const retry = await modernCall(
      url,
      'tools/call',
      {
        name: 'legacy___url_required',
        arguments: { resource: 'r-1' },
        inputResponses: { url_0: { action: 'accept' } },
        requestState: first.body.result.requestState,
      },
      'u2',
    );
    expect(retry.body.result.content).toEqual([{ type: 'text', text: 'authorized r-1' }]);
    // Without URL mode declared: -32021, never -32042.
    const formOnly = await modernCall(
      url,
      'tools/call',
      { name: 'legacy___url_required', arguments: { resource: 'r-2' } },
      'u3',
      { elicitation: { form: {} } },
    );
    expect(formOnly.status).toBe(400);
    expect(formOnly.body.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { elicitation: { url: {} } } },
    });
  });

  test('progress from a 2025 target streams to the client under its own token (SSE), then the result', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: modernHeaders('tools/call', 'legacy___progress'),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'pr',
        method: 'tools/call',
        params: { name: 'legacy___progress', arguments: { steps: 3 }, _meta: { ...meta(), progressToken: 'my-token' } },
      }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const messages = await sseMessages(res);
    const progress = messages.filter((m) => m.method === 'notifications/progress');
    expect(progress.map((m) => m.params.progressToken)).toEqual(['my-token', 'my-token', 'my-token']);
    // No log messages: the client did not ask for any (no logLevel in _meta).
    expect(messages.some((m) => m.method === 'notifications/message')).toBe(false);
    expect(messages.at(-1)).toMatchObject({
      id: 'pr',
      result: { resultType: 'complete', content: [{ text: 'done 3' }] },
    });
  });
});

describe('2025 session → 2026-only target', () => {
  beforeAll(async () => {
    gateway = await startGateway(
      { targets: [{ name: 'modern', url: modernTarget.url }] },
      { dynamodbEndpoint: 'embedded' },
    );
    url = gateway.url;
  });
  afterAll(async () => gateway?.close());

  test('plain calls work: the gateway speaks 2026-07-28 upstream', async () => {
    const { headers } = await initSession(url, { capabilities: { elicitation: { form: {} } } });
    const list = await readMessage(
      await post2025(url, headers, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    );
    expect(list.result.tools.map((t: Json) => t.name)).toContain('modern___echo');
    const call = await readMessage(
      await post2025(url, headers, {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'modern___echo', arguments: { text: 'hi' } },
      }),
    );
    expect(call.result).toEqual({ content: [{ type: 'text', text: 'echo: hi' }], _meta: expect.any(Object) });
    expect(call.result.resultType).toBeUndefined();
    // Transparent first: the session's own era is tried once (this 2026-only target refuses the
    // handshake), then every request goes out as 2026-07-28.
    expect(modernTarget.stats().requestsByMethod.initialize).toBe(1);
  });

  test('a tool that needs input the session did not declare: a clear error, no hang', async () => {
    const { headers } = await initSession(url, { capabilities: {} });
    const message = await readMessage(
      await post2025(url, headers, {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'modern___use_aws', arguments: { command: 'x' } },
      }),
    );
    expect(message.error.code).toBe(-32603);
    expect(message.error.data.type).toBe('CrossEraInputUnsupported');
  });
});

describe('era override and dual-era targets', () => {
  test('era: "legacy" skips the probe and uses initialize on a dual-era target; "auto" picks 2026-07-28', async () => {
    const gw = await startGateway({
      targets: [
        { name: 'forced', url: dualTarget.url, era: 'legacy' },
        { name: 'auto', url: dualTarget.url },
      ],
    });
    try {
      const forced = await modernCall(gw.url, 'tools/call', { name: 'forced___echo', arguments: { text: 'a' } }, 'f1');
      expect(forced.body.result.content[0].text).toBe('echo: a');
      expect(gw.deps.legacySessions.initializations).toBe(1);
      const auto = await modernCall(gw.url, 'tools/call', { name: 'auto___echo', arguments: { text: 'b' } }, 'f2');
      expect(auto.body.result.content[0].text).toBe('echo: b');
      expect(gw.deps.targets.eras.probes).toBe(1);
      expect(gw.deps.legacySessions.initializations).toBe(1);
    } finally {
      await gw.close();
    }
  });

  test('DynamoDB really is unreachable for the stateless tests: a 2025 initialize fails with 503', async () => {
    const gw = await startGateway({ targets: [{ name: 'modern', url: modernTarget.url }] });
    try {
      const res = await post2025(
        gw.url,
        {},
        {
          jsonrpc: '2.0',
          id: 'i',
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        },
      );
      expect(res.status).toBe(503);
      await res.body?.cancel();
      const modern = await modernCall(
        gw.url,
        'tools/call',
        { name: 'modern___echo', arguments: { text: 'still fine' } },
        'm',
      );
      expect(modern.body.result.content[0].text).toBe('echo: still fine');
    } finally {
      await gw.close();
    }
  });
});
