import type { LambdaFunctionURLEvent, LambdaFunctionURLEventWithIAMAuthorizer } from 'aws-lambda';
import { eventToRequest, principalFromEvent } from '../../lambda/adapters/function-url';
import { createStreamingHandler } from '../../lambda/adapters/streaming-handler';
import type { ExchangeContext, FetchHandler } from '../../lambda/http/exchange';
import { systemClock } from '../../lambda/scheduling/clock';
import { installLambdaGlobals, type LambdaInvoker, startLambdaInvoker } from '../support/lambda-invoker';
import { eventually } from '../support/mcp-http';

// The real bootstrap needs configuration and DynamoDB; lambda/handler.ts is tested with a stub gateway.
const mockCreateGateway = jest.fn<Promise<FetchHandler>, []>();
jest.mock('../../lambda/app/bootstrap', () => ({ createGatewayFromEnvironment: () => mockCreateGateway() }));

installLambdaGlobals();

const encoder = new TextEncoder();

async function waitUntil(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
  return eventually(() => expect(predicate()).toBe(true), timeoutMs).then(
    () => true,
    () => false,
  );
}

const GENERIC_500 = { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } };

// ---- the FetchHandler stub, one behaviour per path --------------------------------------------------
/** The /sse stub's gate: the rest of its events are produced when the test releases it. */
const sse: { readFirst: Promise<void>; release(): void } = { readFirst: Promise.resolve(), release: () => undefined };
const forever = { signal: undefined as AbortSignal | undefined, cancelled: false };
const seenEvents: LambdaFunctionURLEvent[] = [];

function sseHeaders() {
  return { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
}

// The function-URL adapter hands the core a web Request (binary bodies included), which the stub reads as one.
const stub: FetchHandler = async (exchangeRequest, ctx: ExchangeContext) => {
  const request = exchangeRequest as Request;
  const url = new URL(request.url);
  switch (url.pathname) {
    case '/json': {
      const headers = new Headers({ 'content-type': 'application/json', 'mcp-session-id': 'S1' });
      headers.append('set-cookie', 'a=1; Path=/');
      headers.append('set-cookie', 'b=2; Path=/');
      return new Response(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { ok: true, text: 'héllo' } }), { headers });
    }
    case '/accepted':
      return new Response(null, { status: 202 });
    case '/sse': {
      // Event 1 now; events 2 and 3 only once the test has read event 1 (a buffering adapter never lets it).
      let release: () => void = () => undefined;
      sse.readFirst = new Promise<void>((resolve) => {
        release = resolve;
      });
      sse.release = () => release();
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          const event = (n: number) => controller.enqueue(encoder.encode(`event: message\ndata: {"n":${n}}\n\n`));
          event(1);
          void sse.readFirst.then(() => {
            event(2);
            event(3);
            controller.close();
          });
        },
      });
      return new Response(body, { headers: sseHeaders() });
    }
    case '/forever': {
      forever.signal = ctx.signal;
      let timer: NodeJS.Timeout | undefined;
      let n = 0;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          timer = setInterval(() => controller.enqueue(encoder.encode(`data: {"n":${++n}}\n\n`)), 50);
        },
        cancel() {
          forever.cancelled = true;
          clearInterval(timer);
        },
      });
      ctx.signal.addEventListener('abort', () => clearInterval(timer));
      return new Response(body, { headers: sseHeaders() });
    }
    case '/echo': {
      const bytes = new Uint8Array(await request.arrayBuffer());
      return Response.json({
        method: request.method,
        url: request.url,
        search: url.search,
        cookie: request.headers.get('cookie'),
        contentType: request.headers.get('content-type'),
        bodyBase64: Buffer.from(bytes).toString('base64'),
        principal: ctx.platformPrincipal ?? null,
        deadlineInMs: ctx.deadline - Date.now(),
      });
    }
    case '/boom':
      throw new Error('secret: db password hunter2');
    default:
      return new Response('not found', { status: 404 });
  }
};

const onError = jest.fn();
const inner = createStreamingHandler(async () => stub, { onError, clock: systemClock });
const handler = awslambda.streamifyResponse<LambdaFunctionURLEvent, void>(async (event, stream, context) => {
  seenEvents.push(event);
  return inner(event, stream, context);
});

let invoker: LambdaInvoker;
beforeAll(async () => {
  invoker = await startLambdaInvoker(handler);
});
afterAll(async () => {
  await invoker.close();
});

describe('function URL adapter over a local streaming invoker', () => {
  test('(a) a JSON response keeps status, headers, cookies and body', async () => {
    const res = await fetch(`${invoker.url}/json`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('mcp-session-id')).toBe('S1');
    expect(res.headers.getSetCookie()).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    expect(await res.json()).toEqual({ jsonrpc: '2.0', id: 1, result: { ok: true, text: 'héllo' } });
  });

  test('(b) 202 with an empty body keeps its status', async () => {
    const res = await fetch(`${invoker.url}/accepted`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
  });

  test('(c) SSE events stream as they are produced, not buffered: the first is read before the next exists', async () => {
    const res = await fetch(`${invoker.url}/sse`, { headers: { accept: 'text/event-stream' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');

    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const first = await reader.read();
    const firstText = decoder.decode(first.value, { stream: true });
    expect(firstText).toContain('"n":1');
    sse.release();
    let text = firstText;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text.match(/^data: /gm)).toHaveLength(3);
  }, 10_000);

  test('(d) a client abort mid-stream aborts ctx.signal and cancels the body', async () => {
    const client = new AbortController();
    const res = await fetch(`${invoker.url}/forever`, { signal: client.signal });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"n":1');
    expect(forever.signal?.aborted).toBe(false);

    client.abort();
    expect(await waitUntil(() => forever.signal?.aborted === true, 1000)).toBe(true);
    expect(await waitUntil(() => forever.cancelled, 1000)).toBe(true);
  }, 10_000);

  test('(e) a binary body arrives base64-encoded and the query string survives', async () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const res = await fetch(`${invoker.url}/echo?a=1&a=2&b=x%20y`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', cookie: 'c1=1; c2=2' },
      body: bytes,
    });
    expect(res.status).toBe(200);
    const echo = await res.json();
    expect(echo).toMatchObject({
      method: 'POST',
      url: `${invoker.url}/echo?a=1&a=2&b=x%20y`,
      search: '?a=1&a=2&b=x%20y',
      cookie: 'c1=1; c2=2',
      contentType: 'application/octet-stream',
      bodyBase64: Buffer.from(bytes).toString('base64'),
      principal: null,
    });
    // ctx.deadline = remaining time (default 900 s) minus the 1 s margin.
    expect(echo.deadlineInMs).toBeGreaterThan(897_000);
    expect(echo.deadlineInMs).toBeLessThanOrEqual(899_000);

    const event = seenEvents.find((e) => e.rawPath === '/echo')!;
    expect(event).toMatchObject({
      version: '2.0',
      rawQueryString: 'a=1&a=2&b=x%20y',
      queryStringParameters: { a: '1,2', b: 'x y' },
      cookies: ['c1=1', 'c2=2'],
      isBase64Encoded: true,
      body: Buffer.from(bytes).toString('base64'),
    });
    expect(event.headers.cookie).toBeUndefined();
  });

  test('(e) a JSON body is passed as text, not base64', async () => {
    seenEvents.length = 0;
    const res = await fetch(`${invoker.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    const echo = await res.json();
    expect(Buffer.from(echo.bodyBase64, 'base64').toString()).toBe('{"jsonrpc":"2.0","id":1,"method":"ping"}');
    expect(seenEvents[0]).toMatchObject({ isBase64Encoded: false, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
  });

  test('(f) a thrown handler error becomes a generic JSON-RPC 500', async () => {
    onError.mockClear();
    const res = await fetch(`${invoker.url}/boom`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toBe('application/json');
    const text = await res.text();
    expect(JSON.parse(text)).toEqual(GENERIC_500);
    expect(text).not.toContain('hunter2');
    expect(onError).toHaveBeenCalledWith(expect.objectContaining({ message: 'secret: db password hunter2' }));
  });
});

describe('gateway creation', () => {
  test('a failing FetchHandler factory gives a 500 and is retried on the next invocation', async () => {
    const factory = jest.fn<Promise<FetchHandler>, []>();
    factory.mockRejectedValueOnce(new Error('no config')).mockResolvedValue(stub);
    const local = await startLambdaInvoker(
      awslambda.streamifyResponse(createStreamingHandler(factory, { onError: () => undefined, clock: systemClock })),
      { iamUserArn: 'arn:aws:iam::123456789012:user/alice', timeoutMs: 30_000 },
    );
    try {
      const failed = await fetch(`${local.url}/accepted`, { method: 'POST' });
      expect(failed.status).toBe(500);
      expect(await failed.json()).toEqual(GENERIC_500);

      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${local.url}/echo`, { method: 'POST', body: 'x' });
        const echo = await res.json();
        expect(echo.principal).toBe('arn:aws:iam::123456789012:user/alice');
        expect(echo.deadlineInMs).toBeLessThanOrEqual(29_000);
      }
      expect(factory).toHaveBeenCalledTimes(2);
    } finally {
      await local.close();
    }
  });

  test('lambda/handler.ts builds the gateway once and serves through it', async () => {
    mockCreateGateway.mockResolvedValue(stub);
    const { handler: lambdaHandler } = await import('../../lambda/handler');
    const local = await startLambdaInvoker({ handler: lambdaHandler });
    try {
      expect((await fetch(`${local.url}/accepted`, { method: 'POST' })).status).toBe(202);
      expect((await fetch(`${local.url}/json`)).status).toBe(200);
      expect(mockCreateGateway).toHaveBeenCalledTimes(1);
    } finally {
      await local.close();
    }
  });
});

describe('local invoker mirrors the runtime quirks', () => {
  let quirks: LambdaInvoker;
  const warn = jest.spyOn(console, 'warn');
  beforeAll(async () => {
    quirks = await startLambdaInvoker(
      awslambda.streamifyResponse<LambdaFunctionURLEvent, void>(async (event, stream) => {
        const out = awslambda.HttpResponseStream.from(stream, { statusCode: 201, headers: { 'x-q': '1' } });
        if (event.rawPath === '/end-data') out.end('too late'); // https://github.com/aws/aws-lambda-nodejs-runtime-interface-client/issues/97: 502
        if (event.rawPath === '/no-end') out.write('partial'); // never ended
      }),
      { endGraceMs: 100 },
    );
  });
  beforeEach(() => warn.mockImplementation(() => undefined));
  afterAll(async () => {
    warn.mockRestore();
    await quirks.close();
  });

  test('end(data) without a prior write() gives 502', async () => {
    const res = await fetch(`${quirks.url}/end-data`);
    expect(res.status).toBe(502);
    await res.text();
  });

  test('a handler that never ends the stream is warned about and ended', async () => {
    const res = await fetch(`${quirks.url}/no-end`);
    expect(res.status).toBe(201);
    expect(res.headers.get('x-q')).toBe('1');
    expect(await res.text()).toBe('partial');
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('without ending the response stream'));
  });

  test('request bodies over 6 MB get 413', async () => {
    const res = await fetch(`${quirks.url}/big`, { method: 'POST', body: new Uint8Array(6 * 1024 * 1024 + 1) });
    expect(res.status).toBe(413);
    await res.text();
  });

  test('a handler not wrapped in streamifyResponse is refused', async () => {
    await expect(startLambdaInvoker(async () => undefined)).rejects.toThrow(/streamifyResponse/);
  });
});

describe('eventToRequest / principalFromEvent (no HTTP)', () => {
  function event(overrides: Partial<LambdaFunctionURLEvent> = {}, method = 'POST'): LambdaFunctionURLEvent {
    return {
      version: '2.0',
      routeKey: '$default',
      rawPath: '/mcp',
      rawQueryString: '',
      headers: { host: 'abc.lambda-url.eu-west-1.on.aws', 'content-type': 'application/json', 'mcp-session-id': 'S1' },
      requestContext: {
        accountId: 'anonymous',
        apiId: 'abc',
        domainName: 'abc.lambda-url.eu-west-1.on.aws',
        domainPrefix: 'abc',
        http: { method, path: '/mcp', protocol: 'HTTP/1.1', sourceIp: '198.51.100.1', userAgent: 'test' },
        requestId: 'r1',
        routeKey: '$default',
        stage: '$default',
        time: '02/Dec/2026:10:00:00 +0000',
        timeEpoch: 0,
      },
      isBase64Encoded: false,
      ...overrides,
    };
  }
  const signal = new AbortController().signal;

  test('URL, method, headers and cookies', () => {
    const req = eventToRequest(event({ rawQueryString: 'a=1&b=2', cookies: ['x=1', 'y=2'] }), signal);
    expect(req.url).toBe('https://abc.lambda-url.eu-west-1.on.aws/mcp?a=1&b=2');
    expect(req.method).toBe('POST');
    expect(req.headers.get('mcp-session-id')).toBe('S1');
    expect(req.headers.get('cookie')).toBe('x=1; y=2');
    expect(req.signal.aborted).toBe(false);
  });

  test('falls back to requestContext.domainName without a host header', () => {
    const req = eventToRequest(event({ headers: {}, rawPath: '' }), signal);
    expect(req.url).toBe('https://abc.lambda-url.eu-west-1.on.aws/');
  });

  test('decodes base64 bodies and keeps text bodies', async () => {
    const binary = Buffer.from([0, 1, 2, 254, 255]);
    const decoded = eventToRequest(event({ body: binary.toString('base64'), isBase64Encoded: true }), signal);
    expect(Buffer.from(await decoded.arrayBuffer())).toEqual(binary);
    const text = eventToRequest(event({ body: '{"a":1}' }), signal);
    expect(await text.text()).toBe('{"a":1}');
  });

  test('drops the body for GET and HEAD', async () => {
    const req = eventToRequest(event({ body: 'ignored' }, 'GET'), signal);
    expect(req.method).toBe('GET');
    expect(req.body).toBeNull();
    expect(eventToRequest(event({ body: 'ignored' }, 'HEAD'), signal).body).toBeNull();
  });

  test('the request follows the abort signal', () => {
    const controller = new AbortController();
    const req = eventToRequest(event(), controller.signal);
    controller.abort();
    expect(req.signal.aborted).toBe(true);
  });

  test('principalFromEvent reads the IAM userArn only', () => {
    expect(principalFromEvent(event())).toBeUndefined();
    const iam = {
      accessKey: 'ASIA',
      accountId: '123456789012',
      callerId: 'AROA:session',
      cognitoIdentity: null,
      principalOrgId: '',
      userArn: 'arn:aws:sts::123456789012:assumed-role/Caller/session',
      userId: 'AROA:session',
    };
    // The IAM-authorized event type is a subtype of LambdaFunctionURLEvent, so no cast is needed.
    const withIam = (authorizer: { iam: typeof iam }): LambdaFunctionURLEventWithIAMAuthorizer => {
      const base = event();
      return { ...base, requestContext: { ...base.requestContext, authorizer } };
    };
    expect(principalFromEvent(withIam({ iam }))).toBe('arn:aws:sts::123456789012:assumed-role/Caller/session');
    expect(principalFromEvent(withIam({ iam: { ...iam, userArn: '' } }))).toBeUndefined();
  });
});
