import { CorsPolicy } from '../../lambda/http/cors';
import { configureMetrics, MetricName, recordTargetListFailure } from '../../lambda/observability/metrics';
import { startTrace, traceFromHeaders } from '../../lambda/observability/trace-context';
import { ToolFilters, toolFilterFor } from '../../lambda/policy/tool-filter';

/** The pure parts of the operations features: tool-name globs, the CORS policy, W3C trace context. */

describe('tool filter globs (targets[].tools)', () => {
  test('include keeps matches, exclude then removes; * is any run, ? one character, the rest literal', () => {
    const allowed = toolFilterFor({ include: ['read_*', 'get?'], exclude: ['read_secret*'] });
    expect(
      ['read_file', 'read_', 'getx', 'read_secret', 'read_secrets', 'write_file', 'get', 'getxy'].filter(allowed),
    ).toEqual(['read_file', 'read_', 'getx']);
    const literal = toolFilterFor({ exclude: ['a.b', 'x-y'] });
    expect(['a.b', 'aXb', 'x-y', 'xy'].filter(literal)).toEqual(['aXb', 'xy']);
    expect(toolFilterFor(undefined)('anything')).toBe(true);
  });

  test('per target: targets without a filter expose everything', () => {
    const filters = new ToolFilters([{ name: 'a', tools: { exclude: ['*'] } }, { name: 'b' }]);
    expect(filters.allows('a', 'echo')).toBe(false);
    expect(filters.allows('b', 'echo')).toBe(true);
    expect(filters.keep('a', [{ name: 'echo' }])).toEqual([]);
  });
});

describe('CORS policy', () => {
  const request = (method: string, headers: Record<string, string>) =>
    new Request('http://127.0.0.1/mcp', { method, headers });

  test('a preflight needs an allowed Origin and Access-Control-Request-Method', () => {
    const cors = new CorsPolicy(['http://localhost:6274']);
    expect(cors.preflight(request('OPTIONS', { origin: 'http://localhost:6274' }))).toBeUndefined();
    expect(
      cors.preflight(request('OPTIONS', { origin: 'http://other:1', 'access-control-request-method': 'POST' })),
    ).toBeUndefined();
    const ok = cors.preflight(
      request('OPTIONS', { origin: 'HTTP://LOCALHOST:6274', 'access-control-request-method': 'POST' }),
    );
    expect(ok?.status).toBe(204);
    expect(ok?.headers.get('access-control-allow-origin')).toBe('HTTP://LOCALHOST:6274');
  });

  test('answers keep their body and other headers; Vary is appended; "*" allows any origin without Vary', async () => {
    const cors = new CorsPolicy(['https://app.example.com']);
    const original = new Response('{"a":1}', {
      status: 201,
      headers: { 'content-type': 'application/json', vary: 'accept' },
    });
    const applied = cors.apply(request('POST', { origin: 'https://app.example.com' }), original);
    expect(applied.status).toBe(201);
    expect(await applied.text()).toBe('{"a":1}');
    expect(applied.headers.get('vary')).toBe('accept, origin');
    expect(applied.headers.get('access-control-expose-headers')).toBe('mcp-session-id');
    const untouched = new Response('x');
    expect(cors.apply(request('POST', { origin: 'https://evil.example' }), untouched)).toBe(untouched);
    const any = new CorsPolicy(['*']).apply(request('POST', { origin: 'https://x.example' }), new Response('x'));
    expect(any.headers.get('access-control-allow-origin')).toBe('*');
    expect(any.headers.get('vary')).toBeNull();
    expect(new CorsPolicy([]).enabled).toBe(false);
  });
});

describe('W3C trace context', () => {
  test('a valid traceparent and tracestate are kept as they are', () => {
    const trace = traceFromHeaders(
      new Headers({
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00',
        tracestate: 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7',
      }),
    );
    expect(trace).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00',
      tracestate: 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7',
      started: false,
    });
  });

  test.each([
    ['absent', {}],
    ['all-zero trace id', { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' }],
    ['all-zero parent id', { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01' }],
    ['version ff', { traceparent: 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }],
    ['upper-case hex', { traceparent: '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01' }],
  ])('%s: a new sampled trace is started (the client tracestate dropped)', (_case, headers) => {
    const trace = traceFromHeaders(new Headers({ ...headers, tracestate: 'a=1' }));
    expect(trace.started).toBe(true);
    expect(trace.traceparent).toMatch(new RegExp(`^00-${trace.traceId}-[0-9a-f]{16}-01$`));
    expect(trace.tracestate).toBeUndefined();
  });

  test('started traces differ', () => {
    expect(startTrace().traceId).not.toBe(startTrace().traceId);
  });
});

describe('TargetListFailures', () => {
  afterEach(() => configureMetrics({}));

  test('one EMF count per target that could not be listed, by target', () => {
    configureMetrics({ enabled: true, namespace: 'Test', serviceName: 'svc' });
    const written: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      recordTargetListFailure('docs');
    } finally {
      spy.mockRestore();
    }
    const [line] = written
      .flatMap((chunk) => chunk.split('\n'))
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(line).toMatchObject({ [MetricName.TargetListFailures]: 1, target: 'docs', service: 'svc' });
    expect(line._aws.CloudWatchMetrics[0].Dimensions[0]).toEqual(expect.arrayContaining(['target']));
  });
});
