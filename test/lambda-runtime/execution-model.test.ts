import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';
import { type LambdaMode, startLambdaMode } from '../../dev/lambda-mode';
import { eventually } from '../support/mcp-http';

/**
 * Lambda's execution model in `--lambda` mode, observed with a diagnostic function
 * (fixtures/probe.mjs) run by aws-lambda-ric exactly as the gateway bundle is.
 */
const PROBE = { file: join(__dirname, 'fixtures', 'probe.mjs'), handler: 'handler' };
const TIMEOUT_MS = 2000;
type Probe = { pid: number; ticks: number; invocations: number; remainingMs: number; afterFiredAt: number | null };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The process state letter from /proc (T = stopped by a signal). */
function processState(pid: number): string | undefined {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return undefined;
  return readFileSync(stat, 'utf8').replace(/^.*\) /s, '')[0];
}

let dynamo: Awaited<ReturnType<typeof startEmbeddedDynamo>>;
beforeAll(async () => {
  dynamo = await startEmbeddedDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

describe('the local Lambda runtime (--lambda): execution model', () => {
  let lambda: LambdaMode;
  let base: string;

  const get = (path: string, init?: RequestInit) => fetch(`${base}${path}`, init);
  const probe = async (path = '/probe'): Promise<Probe> => (await get(path)).json() as Promise<Probe>;

  beforeAll(async () => {
    lambda = await startLambdaMode({
      port: 0,
      demo: false,
      dynamodbEndpoint: dynamo.endpoint,
      function: PROBE,
      timeoutMs: TIMEOUT_MS,
      log: () => undefined,
    });
    base = lambda.url.replace(/\/mcp$/, '');
  });
  afterAll(async () => {
    await lambda?.close();
  });

  it('runs the function on Node.js 22+ with the deadline of the function timeout', async () => {
    const res = await get('/probe');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as Probe & { node: string };
    expect(Number(/^v(\d+)/.exec(body.node)?.[1])).toBeGreaterThanOrEqual(22);
    expect(body.node).toBe(lambda.nodeVersion);
    expect(body.remainingMs).toBeGreaterThan(0);
    expect(body.remainingMs).toBeLessThanOrEqual(TIMEOUT_MS);
  });

  it('freezes an environment as soon as an invocation is over: neither its interval nor a timer the handler left fires until it is thawed', async () => {
    const first = await probe('/after?ms=300'); // leaves a 300 ms timer running after its response
    await eventually(() => expect(processState(first.pid)).toBe('T'), 2000);
    expect(lambda.stats().detail.find((e) => e.pid === first.pid)?.state).toBe('frozen');
    // A duration, for what is shown is that time passing changes nothing (no event shows a timer that
    // did not fire): 50 ticks of the function's 20 ms timer and well past the 300 ms timer, were it running.
    await sleep(1000);
    const thawedAt = Date.now();
    const second = await probe(); // thaws the environment; the overdue timer fires now
    expect(second.pid).toBe(first.pid);
    expect(second.invocations).toBe(first.invocations + 1);
    // Only the time it spent running: the end of one invocation, the start of the next (busy machine: slack).
    expect(second.ticks - first.ticks).toBeLessThanOrEqual(15);
    const later = await probe();
    expect(later.pid).toBe(first.pid);
    expect(later.afterFiredAt).not.toBeNull();
    expect(later.afterFiredAt!).toBeGreaterThanOrEqual(thawedAt - 50);
  });

  it('starts a new environment when all are busy, counted as a cold start', async () => {
    await probe(); // at least one warm environment
    await eventually(() => expect(lambda.stats().detail.every((e) => e.state === 'frozen')).toBe(true));
    const before = lambda.stats();
    const warm = before.detail.filter((e) => e.state === 'frozen').length;
    expect(warm).toBeGreaterThanOrEqual(1);
    // One more concurrent invocation than there are warm environments: exactly one cold start.
    const results = await Promise.all(Array.from({ length: warm + 1 }, () => probe('/sleep?ms=400')));
    expect(new Set(results.map((r) => r.pid)).size).toBe(warm + 1);
    const after = lambda.stats();
    expect(after.coldStarts).toBe(before.coldStarts + 1);
    expect(after.invocations).toBe(before.invocations + warm + 1);
    expect(after.environments).toBe(warm + 1);
    await eventually(() => expect(lambda.stats().freezes).toBe(before.freezes + warm + 1));
  });

  it('streams the body to the client as the function writes it', async () => {
    const res = await get('/stream?n=3&ms=300');
    const reader = res.body!.getReader();
    const first = await reader.read();
    const firstAt = Date.now();
    expect(new TextDecoder().decode(first.value)).toMatch(/^chunk 0/);
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toMatch(/chunk 2/);
    expect(Date.now() - firstAt).toBeGreaterThanOrEqual(500); // the first chunk came before the others were written
  });

  it('does not tell the function that the client went away: the invocation runs to its end', async () => {
    const controller = new AbortController();
    const res = await get('/stream?n=4&ms=150', { signal: controller.signal });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    const errorsBefore = lambda.stats().errors;
    // All environments frozen again means the invocation ended the normal way, after its last chunk.
    await eventually(() => expect(lambda.stats().detail.every((e) => e.state === 'frozen')).toBe(true), 3000);
    expect(lambda.stats().errors).toBe(errorsBefore);
  });

  it('ends an invocation that outlives the function timeout, and replaces its environment', async () => {
    const before = lambda.stats();
    const started = Date.now();
    const res = await get('/hang');
    expect(res.status).toBe(502);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    // Ended by the timeout (counted as one), not by anything else: /hang never ends by itself.
    const after = lambda.stats();
    expect(after.timeouts).toBe(before.timeouts + 1);
    const hungPids = before.detail.map((e) => e.pid).filter((pid) => !after.detail.some((e) => e.pid === pid));
    expect(hungPids.length).toBeLessThanOrEqual(1);
    for (const pid of hungPids) await eventually(() => expect(processState(pid!)).toBeUndefined(), 3000);
    expect((await get('/probe')).status).toBe(200);
  });

  it('answers 502 when the function fails before writing, and keeps the environment', async () => {
    const before = lambda.stats();
    const res = await get('/throw');
    expect(res.status).toBe(502);
    await eventually(() => expect(lambda.stats().errors).toBe(before.errors + 1));
    expect(lambda.stats().coldStarts).toBe(before.coldStarts);
  });

  it('refuses a request payload over 6 MB with 413, without invoking the function', async () => {
    const before = lambda.stats().invocations;
    const big = await get('/probe', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ blob: 'x'.repeat(6 * 1024 * 1024) }),
    });
    expect(big.status).toBe(413);
    const fits = await get('/probe', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ blob: 'x'.repeat(5 * 1024 * 1024) }),
    });
    expect(fits.status).toBe(200);
    expect(((await fits.json()) as { bodyLength: number }).bodyLength).toBeGreaterThan(5 * 1024 * 1024);
    expect(lambda.stats().invocations).toBe(before + 1);
  });
});

describe('the local Lambda runtime (--lambda): idle environments and the concurrency limit', () => {
  it('shuts down an environment that stayed frozen longer than idleMs', async () => {
    const lambda = await startLambdaMode({
      port: 0,
      demo: false,
      dynamodbEndpoint: dynamo.endpoint,
      function: PROBE,
      idleMs: 300,
      log: () => undefined,
    });
    try {
      const res = await fetch(lambda.url.replace(/\/mcp$/, '/probe'));
      const { pid } = (await res.json()) as Probe;
      await eventually(() => expect(lambda.stats().reaped).toBe(1), 3000);
      expect(lambda.stats().environments).toBe(0);
      await eventually(() => expect(processState(pid)).toBeUndefined(), 3000);
    } finally {
      await lambda.close();
    }
  });

  it('throttles (429) an invocation beyond maxEnvironments', async () => {
    const lambda = await startLambdaMode({
      port: 0,
      demo: false,
      dynamodbEndpoint: dynamo.endpoint,
      function: PROBE,
      maxEnvironments: 1,
      log: () => undefined,
    });
    try {
      const url = lambda.url.replace(/\/mcp$/, '/sleep?ms=500');
      // The second once the first runs in the one environment (its 500 ms sleep).
      const busy = eventually(() => expect(lambda.stats().detail.map((e) => e.state)).toEqual(['busy']));
      const statuses = await Promise.all([fetch(url), busy.then(() => fetch(url))].map(async (r) => (await r).status));
      expect(statuses).toEqual([200, 429]);
      expect(lambda.stats()).toMatchObject({ throttles: 1, coldStarts: 1, invocations: 1 });
    } finally {
      await lambda.close();
    }
  });
});
