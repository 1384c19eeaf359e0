import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type ClientCapabilities,
  CreateMessageRequestSchema,
  ElicitationCompleteNotificationSchema,
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
  ErrorCode,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  UrlElicitationRequiredError,
} from '@modelcontextprotocol/sdk/types.js';
import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { clickOnConsentPage } from '../support/consent-page';
import { eventually } from '../support/mcp-http';

/** One HTTP exchange seen by the client transport's fetch. */
interface Exchange {
  httpMethod: string;
  /** JSON-RPC methods in the request body (POST). */
  rpcMethods: string[];
  status: number;
  contentType: string;
  /** JSON-RPC messages that arrived in the SSE response body (filled as the stream flows). */
  sse: Array<{ method?: string; id?: unknown; params?: Record<string, unknown> }>;
  /** The SSE response body ended (server closed the stream). */
  ended: boolean;
}

/** A fetch that records every exchange, parsing SSE bodies as they pass through to the transport. */
function recordingFetch(log: Exchange[]): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const exchange: Exchange = {
      httpMethod: init?.method ?? 'GET',
      rpcMethods: [],
      status: 0,
      contentType: '',
      sse: [],
      ended: false,
    };
    if (typeof init?.body === 'string') {
      const parsed: unknown = JSON.parse(init.body);
      for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
        if (typeof m === 'object' && m !== null && typeof (m as { method?: unknown }).method === 'string') {
          exchange.rpcMethods.push((m as { method: string }).method);
        }
      }
    }
    log.push(exchange);
    const response = await fetch(url, init);
    exchange.status = response.status;
    exchange.contentType = response.headers.get('content-type') ?? '';
    if (!response.body || !exchange.contentType.startsWith('text/event-stream')) return response;
    const decoder = new TextDecoder();
    let buffer = '';
    const tap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        buffer += decoder.decode(chunk, { stream: true });
        const events = buffer.split(/\r?\n\r?\n/);
        buffer = events.pop() ?? '';
        for (const event of events) {
          const data = event
            .split(/\r?\n/)
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trimStart())
            .join('\n');
          if (data) exchange.sse.push(JSON.parse(data) as Exchange['sse'][number]);
        }
        controller.enqueue(chunk);
      },
      flush() {
        exchange.ended = true;
      },
    });
    return new Response(response.body.pipeThrough(tap), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

const FULL_CAPS: ClientCapabilities = {
  elicitation: { form: {}, url: {} },
  sampling: {},
  roots: { listChanged: true },
};

interface TestClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  log: Exchange[];
  elicitations: ElicitRequest['params'][];
  completions: string[];
  logs: unknown[];
}

type Answer = (params: ElicitRequest['params']) => ElicitResult | Promise<ElicitResult>;

/** A user who allows on the consent page (as the reference samples do: open the URL, finish there, accept). */
async function elicitAnswer(params: ElicitRequest['params']): Promise<ElicitResult> {
  if (params.mode === 'url') {
    await clickOnConsentPage(params.url, 'allow');
    return { action: 'accept' };
  }
  const props = params.requestedSchema.properties;
  if ('confirm' in props) return { action: 'accept', content: { confirm: true } };
  if ('name' in props) return { action: 'accept', content: { name: 'Ada' } };
  if ('age' in props) return { action: 'accept', content: { age: 36 } };
  return { action: 'decline' };
}

async function waitFor(cond: () => boolean, what: string, ms = 3000): Promise<void> {
  await eventually(() => expect({ [what]: cond() }).toEqual({ [what]: true }), ms);
}

/** Concatenated text of a tools/call result (callTool's declared return type is a union, hence `unknown`). */
function textOf(result: unknown): string {
  const content = ((result as { content?: unknown }).content ?? []) as Array<{ type: string; text?: string }>;
  return content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('');
}

const opened: TestClient[] = [];

async function connect(
  target: DemoTarget,
  capabilities: ClientCapabilities = FULL_CAPS,
  answer: Answer = elicitAnswer,
): Promise<TestClient> {
  const log: Exchange[] = [];
  const client = new Client({ name: 'demo-target-test', version: '1.0.0' }, { capabilities });
  const tc: TestClient = {
    client,
    transport: new StreamableHTTPClientTransport(new URL(target.url), { fetch: recordingFetch(log) }),
    log,
    elicitations: [],
    completions: [],
    logs: [],
  };
  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, (req) => {
      tc.elicitations.push(req.params);
      return answer(req.params);
    });
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
      tc.completions.push(n.params.elicitationId);
    });
  }
  if (capabilities.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, () => ({
      role: 'assistant',
      model: 'test-model',
      content: { type: 'text', text: 'hi' },
    }));
  }
  if (capabilities.roots) {
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'file:///tmp/a', name: 'a' }] }));
  }
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    tc.logs.push(n.params.data);
  });
  // The transport reports expected errors (e.g. the GET stream after dropSessions); they are asserted explicitly.
  client.onerror = () => undefined;
  opened.push(tc);
  await client.connect(tc.transport);
  return tc;
}

async function call(
  tc: TestClient,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ text: string; isError: boolean }> {
  const result = await tc.client.callTool({ name, arguments: args }, undefined, { timeout: 10_000 });
  return { text: textOf(result), isError: result.isError === true };
}

/** The tools/call POST exchange(s) whose SSE body carried a message with this method. */
function postsCarrying(tc: TestClient, method: string): Exchange[] {
  return tc.log.filter(
    (e) => e.httpMethod === 'POST' && e.rpcMethods.includes('tools/call') && e.sse.some((m) => m.method === method),
  );
}
function getsCarrying(tc: TestClient, method: string): Exchange[] {
  return tc.log.filter((e) => e.httpMethod === 'GET' && e.sse.some((m) => m.method === method));
}

let target: DemoTarget;
let dropTarget: DemoTarget;

beforeAll(async () => {
  target = await startDemoTarget();
  dropTarget = await startDemoTarget({ name: 'drop-target' });
});

afterAll(async () => {
  await Promise.allSettled(opened.map((tc) => tc.client.close()));
  await Promise.allSettled([target?.close(), dropTarget?.close()]);
});

describe('demo target', () => {
  let tc: TestClient;
  beforeAll(async () => {
    tc = await connect(target);
  });

  it('listens on loopback and reports its name and capabilities', () => {
    expect(target.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(tc.client.getServerVersion()?.name).toBe('demo-target');
    const caps = tc.client.getServerCapabilities();
    expect(caps).toEqual(
      expect.objectContaining({
        tools: expect.anything(),
        prompts: expect.anything(),
        resources: expect.anything(),
        logging: {},
        completions: {},
      }),
    );
  });

  it('lists all tools', async () => {
    const { tools } = await tc.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      [
        'access_github_repo',
        'confirm_action',
        'echo',
        'fail',
        'list_roots',
        'multi_elicit',
        'progress',
        'request_anyway',
        'sample',
        'slow',
        'url_required',
        'use_aws',
      ].sort(),
    );
  });

  it('echo', async () => {
    expect(await call(tc, 'echo', { text: 'hi there' })).toEqual({ text: 'echo: hi there', isError: false });
  });

  it('use_aws elicits on the tools/call POST stream, not the GET stream', async () => {
    expect(await call(tc, 'use_aws', { command: 'aws s3 ls' })).toEqual({
      text: 'executed: aws s3 ls',
      isError: false,
    });
    const last = tc.elicitations[tc.elicitations.length - 1];
    expect(last).toEqual(expect.objectContaining({ mode: 'form', message: 'Run `aws s3 ls`?' }));
    const posts = postsCarrying(tc, 'elicitation/create');
    expect(posts.length).toBeGreaterThanOrEqual(1);
    expect(posts[0].status).toBe(200);
    expect(posts[0].contentType).toMatch(/^text\/event-stream/);
    // The standalone GET stream is open but carried no server-to-client request.
    await waitFor(() => tc.log.some((e) => e.httpMethod === 'GET' && e.status === 200), 'the GET stream');
    expect(getsCarrying(tc, 'elicitation/create')).toEqual([]);
  });

  it('confirm_action', async () => {
    expect(await call(tc, 'confirm_action', { action: 'deploy' })).toEqual({
      text: 'confirmed: deploy',
      isError: false,
    });
    expect(tc.elicitations[tc.elicitations.length - 1].message).toContain('deploy');
  });

  it('access_github_repo: URL elicitation, then notifications/elicitation/complete on the same POST stream', async () => {
    expect(await call(tc, 'access_github_repo', { repo: 'octo/repo' })).toEqual({
      text: 'accessed octo/repo',
      isError: false,
    });
    const el = tc.elicitations[tc.elicitations.length - 1];
    if (el.mode !== 'url') throw new Error('expected a URL elicitation');
    expect(el.message).toBe('Authorize access to octo/repo');
    // The target's own consent page (it used to be a github.example URL that does not resolve).
    expect(el.url).toBe(`${new URL(target.url).origin}/consent/${el.elicitationId}`);
    expect(tc.completions).toContain(el.elicitationId);
    const post = postsCarrying(tc, 'notifications/elicitation/complete').find((e) =>
      e.sse.some((m) => m.params?.elicitationId === el.elicitationId),
    );
    expect(post).toBeDefined();
    expect(post?.sse.map((m) => m.method ?? 'response')).toEqual([
      'elicitation/create',
      'notifications/elicitation/complete',
      'response',
    ]);
  });

  it('url_required: -32042 naming the consent page until the resource is allowed there, then succeeds', async () => {
    const urlRequired = async (): Promise<UrlElicitationRequiredError> => {
      let caught: unknown;
      try {
        await tc.client.callTool({ name: 'url_required', arguments: { resource: 'db' } });
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(McpError);
      expect(caught).toBeInstanceOf(UrlElicitationRequiredError);
      return caught as UrlElicitationRequiredError;
    };
    const err = await urlRequired();
    expect(err.code).toBe(ErrorCode.UrlElicitationRequired);
    expect(err.code).toBe(-32042);
    expect(err.elicitations).toHaveLength(1);
    const [asked] = err.elicitations;
    expect(asked).toEqual(
      expect.objectContaining({
        mode: 'url',
        url: `${new URL(target.url).origin}/consent/${asked?.elicitationId}`,
        elicitationId: expect.any(String),
        message: 'Authorization required for db',
      }),
    );
    // A retry before the person has allowed it: the same request again, not a success.
    expect((await urlRequired()).elicitations).toEqual([asked]);
    expect((await clickOnConsentPage(asked!.url, 'allow')).status).toBe(200);
    // The completion notification reaches this session (on its GET stream): the SDK client may retry on it.
    await waitFor(() => tc.completions.includes(asked!.elicitationId), 'notifications/elicitation/complete');
    expect(await call(tc, 'url_required', { resource: 'db' })).toEqual({ text: 'authorized db', isError: false });
  });

  it('sample', async () => {
    expect(await call(tc, 'sample', { prompt: 'say hi' })).toEqual({ text: 'sampled: test-model: hi', isError: false });
    expect(postsCarrying(tc, 'sampling/createMessage').length).toBe(1);
    expect(getsCarrying(tc, 'sampling/createMessage')).toEqual([]);
  });

  it('list_roots', async () => {
    expect(await call(tc, 'list_roots')).toEqual({ text: 'roots: file:///tmp/a', isError: false });
    expect(postsCarrying(tc, 'roots/list').length).toBe(1);
    expect(getsCarrying(tc, 'roots/list')).toEqual([]);
  });

  it('progress: progress notifications and log messages per step', async () => {
    const progress: Array<{ progress: number; total?: number }> = [];
    const logsBefore = tc.logs.length;
    const result = await tc.client.callTool({ name: 'progress', arguments: { steps: 3, delayMs: 1 } }, undefined, {
      timeout: 10_000,
      onprogress: (p) => progress.push({ progress: p.progress, total: p.total }),
    });
    expect(textOf(result)).toBe('done 3');
    expect(progress).toEqual([
      { progress: 1, total: 3 },
      { progress: 2, total: 3 },
      { progress: 3, total: 3 },
    ]);
    expect(tc.logs.slice(logsBefore)).toEqual(['step 1', 'step 2', 'step 3']);
  });

  it('progress: honours logging/setLevel', async () => {
    const quiet = await connect(target);
    await quiet.client.setLoggingLevel('warning');
    expect(textOf(await quiet.client.callTool({ name: 'progress', arguments: { steps: 2, delayMs: 0 } }))).toBe(
      'done 2',
    );
    expect(quiet.logs).toEqual([]);
  });

  it('slow: completes, and records a cancellation', async () => {
    expect(await call(tc, 'slow', { ms: 5 })).toEqual({ text: 'slept 5', isError: false });
    const before = target.stats().cancelledRequestIds.length;
    const logStart = tc.log.length;
    const ac = new AbortController();
    const pending = tc.client.callTool({ name: 'slow', arguments: { ms: 60_000 } }, undefined, { signal: ac.signal });
    // The POST's SSE response headers arrive once the handler has been dispatched.
    await waitFor(
      () => tc.log.slice(logStart).some((e) => e.rpcMethods.includes('tools/call') && e.status === 200),
      'slow to start',
    );
    const slowPost = tc.log.slice(logStart).find((e) => e.rpcMethods.includes('tools/call'));
    ac.abort('test cancel');
    await expect(pending).rejects.toThrow('test cancel');
    await waitFor(() => target.stats().cancelledRequestIds.length > before, 'the cancellation to be recorded');
    expect(typeof target.stats().cancelledRequestIds[before]).toBe('number');
    expect(target.stats().requestsByMethod['notifications/cancelled']).toBeGreaterThanOrEqual(1);
    // No response will ever come for a cancelled request: the target ends that POST stream.
    await waitFor(() => slowPost?.ended === true, 'the cancelled POST stream to end');
    expect(slowPost?.sse).toEqual([]);
  });

  it('multi_elicit: two sequential form elicitations', async () => {
    const before = tc.elicitations.length;
    expect(await call(tc, 'multi_elicit')).toEqual({ text: 'hello Ada, 36', isError: false });
    expect(tc.elicitations.length - before).toBe(2);
  });

  it('fail', async () => {
    expect(await call(tc, 'fail')).toEqual({ text: 'failed on purpose', isError: true });
  });

  it('reports declined / cancelled / unconfirmed elicitations', async () => {
    const decline = await connect(target, FULL_CAPS, () => ({ action: 'decline' }));
    expect(await call(decline, 'use_aws', { command: 'rm' })).toEqual({
      text: 'not executed (decline)',
      isError: false,
    });
    expect(await call(decline, 'access_github_repo', { repo: 'o/r' })).toEqual({
      text: 'access to o/r not granted (decline)',
      isError: false,
    });
    expect(decline.completions).toEqual([]);
    const cancel = await connect(target, FULL_CAPS, () => ({ action: 'cancel' }));
    expect(await call(cancel, 'confirm_action', { action: 'x' })).toEqual({
      text: 'not executed (cancel)',
      isError: false,
    });
    const no = await connect(target, FULL_CAPS, () => ({ action: 'accept', content: { confirm: false } }));
    expect(await call(no, 'use_aws', { command: 'rm' })).toEqual({
      text: 'not executed (confirm false)',
      isError: false,
    });
  });

  it('falls back when the client cannot elicit', async () => {
    const plain = await connect(target, {});
    const r = await call(plain, 'use_aws', { command: 'aws s3 ls' });
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/^elicitation unavailable: /);
    expect(r.text).toBe('elicitation unavailable: Client does not support form elicitation.');
    expect(plain.log.some((e) => e.sse.some((m) => m.method === 'elicitation/create'))).toBe(false);
  });

  it('prompts, resources, templates and completion', async () => {
    const prompt = await tc.client.getPrompt({ name: 'greeting', arguments: { name: 'Ada' } });
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Hello, Ada!' } }]);

    const readme = await tc.client.readResource({ uri: 'demo://readme' });
    expect(readme.contents).toEqual([expect.objectContaining({ uri: 'demo://readme', text: 'demo target readme' })]);

    const item = await tc.client.readResource({ uri: 'demo://items/7' });
    expect(item.contents).toEqual([expect.objectContaining({ uri: 'demo://items/7', text: 'item 7' })]);

    const { resourceTemplates } = await tc.client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(['demo://items/{id}']);

    const all = await tc.client.complete({
      ref: { type: 'ref/resource', uri: 'demo://items/{id}' },
      argument: { name: 'id', value: '' },
    });
    expect(all.completion.values).toEqual(['1', '2', '3']);
    const two = await tc.client.complete({
      ref: { type: 'ref/resource', uri: 'demo://items/{id}' },
      argument: { name: 'id', value: '2' },
    });
    expect(two.completion.values).toEqual(['2']);
  });

  it('rejects a foreign Host header and unknown paths', async () => {
    const status = (path: string, host: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const url = new URL(target.url);
        const req = httpRequest(
          { host: url.hostname, port: url.port, path, method: 'GET', headers: { host, accept: 'text/event-stream' } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
    expect(await status('/mcp', 'evil.example')).toBe(403);
    expect(await status('/nope', new URL(target.url).host)).toBe(404);
    expect(await status('/mcp', new URL(target.url).host)).toBe(400); // no session id
  });

  it('counts initialize and methods; DELETE ends a session', async () => {
    const s = target.stats();
    expect(s.initializeCount).toBeGreaterThanOrEqual(3);
    expect(s.requestsByMethod.initialize).toBe(s.initializeCount);
    expect(s.requestsByMethod['tools/call']).toBeGreaterThan(10);
    const extra = await connect(target);
    expect(target.stats().sessions).toBe(s.sessions + 1);
    await extra.transport.terminateSession();
    expect(target.stats().sessions).toBe(s.sessions);
  });
});

describe('dropSessions', () => {
  it('makes the next request with an old session id 404, and a new initialize works', async () => {
    const tc = await connect(dropTarget);
    expect(await call(tc, 'echo', { text: 'a' })).toEqual({ text: 'echo: a', isError: false });
    const oldSession = tc.transport.sessionId;
    expect(oldSession).toBeDefined();
    expect(dropTarget.stats()).toEqual(expect.objectContaining({ initializeCount: 1, sessions: 1 }));

    dropTarget.dropSessions();
    expect(dropTarget.stats().sessions).toBe(0);

    const raw = await fetch(dropTarget.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': oldSession ?? '',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(raw.status).toBe(404);
    expect(await raw.json()).toEqual({
      jsonrpc: '2.0',
      error: { code: -32001, message: 'Session not found' },
      id: null,
    });

    await expect(tc.client.listTools()).rejects.toThrow(/404|Session not found/);

    const again = await connect(dropTarget);
    expect(await call(again, 'echo', { text: 'b' })).toEqual({ text: 'echo: b', isError: false });
    expect(dropTarget.stats()).toEqual(expect.objectContaining({ initializeCount: 2, sessions: 1 }));
  });
});
