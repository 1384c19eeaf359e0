import { request } from 'node:http';
import { join } from 'node:path';
import {
  startWebFunctionEmulator,
  type WebFunctionEmulator,
  type WebFunctionEmulatorOptions,
} from '../../tools/web-function-emulator/emulator';
import { eventually } from '../support/mcp-http';

/**
 * The Web Function emulator with small node:http applications (fixtures/): the endpoint variable,
 * half-duplex requests and streamed responses, concurrency per environment and scale-out, the request
 * timeout, scale-in with SIGTERM and the grace, init failures, throttling and client disconnects.
 * Every wait is bounded; no assertion puts an upper bound on wall-clock time.
 */

const SERVER = join(__dirname, 'fixtures', 'server.mjs');
const NEVER_LISTENS = join(__dirname, 'fixtures', 'never-listens.mjs');

let emulator: WebFunctionEmulator | undefined;
let logs: string[] = [];

async function start(options: Partial<WebFunctionEmulatorOptions> = {}): Promise<WebFunctionEmulator> {
  logs = [];
  emulator = await startWebFunctionEmulator({ entry: SERVER, log: (line) => logs.push(line), ...options });
  return emulator;
}

afterEach(async () => {
  await emulator?.close();
  emulator = undefined;
});

/** Until `check` holds; fails after `ms`, naming `what`. */
async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  await eventually(() => expect({ [what]: check() }).toEqual({ [what]: true }), ms);
}

interface Outcome {
  /** 0 when no response arrived. */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The response ended normally (false: cut). */
  complete: boolean;
}

interface Call {
  /** What has arrived so far. */
  text(): string;
  outcome: Promise<Outcome>;
  /** The client leaves. */
  destroy(): void;
}

/**
 * One request on its own connection (no shared agent, so leaving closes exactly this one). The body
 * goes out in `parts`, `gapMs` apart; `onEnd` gets the time the client ended its request.
 */
function call(
  base: string,
  path: string,
  init: { method?: string; parts?: string[]; gapMs?: number; headers?: Record<string, string> } = {},
  onEnd?: (at: number) => void,
): Call {
  let received = '';
  const req = request(new URL(path, base), { method: init.method ?? 'GET', agent: false, headers: init.headers });
  const outcome = new Promise<Outcome>((resolve) => {
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        received += chunk;
      });
      res.on('error', () => undefined);
      res.on('close', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: received, complete: res.complete }),
      );
    });
    req.on('error', () => resolve({ status: 0, headers: {}, body: received, complete: false }));
  });
  void (async () => {
    for (const [index, part] of (init.parts ?? []).entries()) {
      if (index > 0 && init.gapMs) await new Promise((resolve) => setTimeout(resolve, init.gapMs));
      req.write(part);
    }
    onEnd?.(Date.now());
    req.end();
  })();
  return { text: () => received, outcome, destroy: () => req.destroy() };
}

async function json(base: string, path: string, method = 'GET'): Promise<any> {
  const { status, body } = await call(base, path, { method }).outcome;
  expect(status).toBe(200);
  return JSON.parse(body);
}

/** Opens `count` held streams and waits until each has its first chunk. */
async function hold(base: string, count: number): Promise<Call[]> {
  const calls = Array.from({ length: count }, () => call(base, '/hold'));
  await until(() => calls.every((held) => held.text().includes('data: open')), `${count} held streams`);
  return calls;
}

describe('the Web Function emulator', () => {
  it('sets AWS_LAMBDA_HTTP_ENDPOINT, forwards the whole body before the request, and passes headers through', async () => {
    const { url, environments } = await start();
    let endedAt = 0;
    const echo = call(
      url,
      '/echo?x=1',
      { method: 'POST', parts: ['first half, ', 'second half'], gapMs: 300, headers: { 'x-custom': 'kept' } },
      (at) => {
        endedAt = at;
      },
    );
    const { status, headers, body, complete } = await echo.outcome;
    expect({ status, complete }).toEqual({ status: 200, complete: true });
    expect(headers['access-control-allow-origin']).toBeUndefined();
    const seen = JSON.parse(body);
    expect(seen.endpoint).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(environments()[0].endpoint).toBe(seen.endpoint);
    expect(environments()[0].pid).toBe(seen.pid);
    expect(seen.body).toBe('first half, second half');
    // Half-duplex: the environment's server saw the request only after the client had sent all of it,
    // with a length, never a chunked body.
    expect(seen.receivedAt).toBeGreaterThanOrEqual(endedAt);
    expect(seen.headers['content-length']).toBe(String('first half, second half'.length));
    expect(seen.headers['transfer-encoding']).toBeUndefined();
    expect(seen.headers['x-custom']).toBe('kept');
    expect(logs.some((line) => /^\[env 1\] listening on 127\.0\.0\.1:\d+$/.test(line))).toBe(true);
  });

  it('streams the response: a chunk reaches the client before the response ends', async () => {
    const { url } = await start();
    const stream = call(url, '/hold');
    await until(() => stream.text().includes('data: open'), 'the first chunk');
    let ended = false;
    void stream.outcome.then(() => {
      ended = true;
    });
    expect(ended).toBe(false);
    expect(await json(url, '/release', 'POST')).toEqual({ released: 1 });
    const outcome = await stream.outcome;
    expect(outcome.status).toBe(200);
    expect(outcome.headers['content-type']).toBe('text/event-stream');
    expect(outcome.complete).toBe(true);
    expect(outcome.body).toMatch(/^data: open \d+ 1\n\ndata: released\n\n$/);
  });

  it('with maxConcurrencyPerEnvironment 2, five held requests use three environments', async () => {
    const { url, stats, environments } = await start({ maxConcurrencyPerEnvironment: 2 });
    const calls = await hold(url, 5);
    expect(stats()).toMatchObject({ environmentsStarted: 3, environmentsLive: 3, maxOpenPerEnvironment: 2 });
    expect(
      environments()
        .map((environment) => environment.open)
        .sort(),
    ).toEqual([1, 2, 2]);
    const pids = new Set(calls.map((held) => held.text().split(' ')[2]));
    expect(pids.size).toBe(3);
    expect(stats().initTimesMs).toHaveLength(3);
    for (const held of calls) held.destroy();
    await until(() => environments().every((environment) => environment.open === 0), 'all requests closed');
  });

  it('with the default cap, 64 held requests share one environment', async () => {
    const { url, stats } = await start();
    const calls = await hold(url, 64);
    expect(stats()).toMatchObject({ environmentsStarted: 1, maxOpenPerEnvironment: 64, requests: 64 });
    // The application itself saw all 64 open at once.
    const openCounts = calls.map((held) => Number(held.text().split(' ')[3]));
    expect(Math.max(...openCounts)).toBe(64);
    for (const held of calls) held.destroy();
  });

  it('cuts a request still open at timeoutSeconds and counts it; one that finishes first is not', async () => {
    const { url, stats } = await start({ timeoutSeconds: 1.5 });
    const held = call(url, '/hold');
    const quick = call(url, '/slow?ms=200');
    expect(await quick.outcome).toMatchObject({ status: 200, body: 'done', complete: true });
    const cut = await held.outcome;
    expect(cut.body).toContain('data: open');
    expect(cut.complete).toBe(false);
    expect(stats().timedOut).toBe(1);
    await until(() => logs.includes('[env 1] closed early GET /hold'), 'the environment to see the cut');
    expect(stats().environmentsLive).toBe(1); // a timeout ends the request, not the environment
  });

  it('scaleIn(): SIGTERM to idle environments only; one that exits is not killed; the next request cold-starts', async () => {
    const { url, stats, environments, scaleIn } = await start({ maxConcurrencyPerEnvironment: 1 });
    const held = await hold(url, 1);
    const first = await json(url, '/echo', 'POST'); // environment 1 is full: environment 2
    expect(stats().environmentsStarted).toBe(2);
    await scaleIn();
    expect(stats()).toMatchObject({ sigterms: 1, kills: 0, environmentsLive: 1 });
    expect(logs).toContain('[env 2] SIGTERM');
    expect(environments().map((environment) => environment.id)).toEqual([1]);
    expect(held[0].text()).not.toContain('released');
    const second = await json(url, '/echo', 'POST');
    expect(second.pid).not.toBe(first.pid);
    expect(stats().environmentsStarted).toBe(3);
    held[0].destroy();
  });

  it('scaleIn(): an environment that ignores SIGTERM is killed after the grace', async () => {
    const { url, stats, scaleIn } = await start({ env: { SIGTERM_MODE: 'ignore' }, shutdownGraceMs: 300 });
    await json(url, '/echo', 'POST');
    await scaleIn();
    expect(stats()).toMatchObject({ sigterms: 1, kills: 1, environmentsLive: 0 });
    expect(logs).toContain('[env 1] SIGTERM ignored');
  });

  it('scales in an environment idle for idleSeconds', async () => {
    const { url, stats } = await start({ idleSeconds: 0.3 });
    await json(url, '/echo', 'POST');
    await until(() => stats().environmentsLive === 0, 'the idle environment to go');
    expect(stats()).toMatchObject({ sigterms: 1, kills: 0, environmentsStarted: 1 });
  });

  it('a server that never listens: 502 after initTimeoutMs, and its environment is killed', async () => {
    const { url, stats } = await start({ entry: NEVER_LISTENS, initTimeoutMs: 500 });
    const outcome = await call(url, '/').outcome;
    expect(outcome.status).toBe(502);
    await until(() => stats().environmentsLive === 0, 'the environment to be killed');
    // Not its log line: a loaded machine may kill the process before Node has started it.
    expect(stats()).toMatchObject({ environmentsStarted: 1, kills: 1, initTimesMs: [] });
  });

  it('maxEnvironments reached: 429 naming the throttle', async () => {
    const { url, stats } = await start({ maxEnvironments: 1, maxConcurrencyPerEnvironment: 1 });
    const held = await hold(url, 1);
    const throttled = await call(url, '/echo', { method: 'POST', parts: ['x'] }).outcome;
    expect(throttled.status).toBe(429);
    expect(JSON.parse(throttled.body)).toMatchObject({ Type: 'TooManyRequestsException' });
    expect(stats()).toMatchObject({ throttled: 1, requests: 1, environmentsStarted: 1 });
    held[0].destroy();
  });

  it('a client that leaves mid-stream: the environment sees its request closed', async () => {
    const { url, stats, environments } = await start();
    const [held] = await hold(url, 1);
    held.destroy();
    await until(() => logs.includes('[env 1] closed early GET /hold'), 'the environment to see the close');
    await until(() => environments()[0].open === 0, 'the request to be over');
    expect(stats().timedOut).toBe(0);
  });

  it('an environment that exits on its own is removed: 502 before the headers, a cut stream after', async () => {
    const { url, stats } = await start();
    expect((await call(url, '/exit').outcome).status).toBe(502);
    await until(() => stats().environmentsLive === 0, 'the crashed environment to go');
    const mid = await call(url, '/exit-mid').outcome;
    expect(mid).toMatchObject({ status: 200, body: 'first\n', complete: false });
    await until(() => stats().environmentsLive === 0, 'the second crashed environment to go');
    expect(stats()).toMatchObject({ environmentsStarted: 2, sigterms: 0, kills: 0 });
  });
});
