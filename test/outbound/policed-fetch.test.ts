import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import { policedFetch, ResponseTooLargeError } from '../../lambda/outbound/policed-fetch';
import { OutboundPolicy, OutboundRefusedError } from '../../lambda/outbound/policy';
import { listen } from '../support/loopback';

/**
 * The policy's fetch against real loopback servers; names are resolved by a resolver the test
 * controls (what a hostile DNS answers), so the address checked and the address connected can be told apart.
 */

let server: { base: string; close(): Promise<void> };
const seen: string[] = [];

beforeAll(async () => {
  server = await listen(
    createServer((req, res) => {
      seen.push(`${req.method} ${req.url} host=${req.headers.host}`);
      if (req.url === '/redirect') return res.writeHead(302, { location: '/metadata' }).end();
      if (req.url === '/large') return res.writeHead(200, { 'content-type': 'application/json' }).end('x'.repeat(5000));
      if (req.url === '/declared-large') {
        res.writeHead(200, { 'content-length': '100000' });
        return res.end('x'.repeat(100000));
      }
      if (req.url === '/slow') return; // never answers
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    }),
  );
});
afterAll(() => server.close());

const port = () => Number(new URL(server.base).port);

/** A resolver answering `answers` in turn (the last one from then on), counting its lookups. */
function resolver(...answers: string[][]) {
  let calls = 0;
  const resolve = async (_hostname: string): Promise<LookupAddress[]> => {
    const answer = answers[Math.min(calls++, answers.length - 1)] ?? [];
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, calls: () => calls };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'reached';
  } catch (error) {
    return error instanceof OutboundRefusedError
      ? error.reason
      : `${(error as Error).name}: ${(error as Error).message}`;
  }
}

it('a name that resolves to loopback is refused before any connection', async () => {
  const before = seen.length;
  const { resolve } = resolver(['127.0.0.1']);
  const fetchFn = policedFetch(new OutboundPolicy({ allowedOrigins: [] }), { resolve });
  expect(await refusal(fetchFn(`https://metadata.example:${port()}/x`))).toMatch(/127\.0\.0\.1 is a loopback address/);
  expect(seen.length).toBe(before);
});

it('a name with one public and one private address is refused (every address must pass)', async () => {
  const { resolve } = resolver(['93.184.215.14', '10.0.0.7']);
  const fetchFn = policedFetch(new OutboundPolicy({ allowedOrigins: [] }), { resolve });
  expect(await refusal(fetchFn('https://mixed.example/x'))).toMatch(/10\.0\.0\.7 is a private address/);
});

it('the connection goes to the address checked: resolved once, pinned (a second answer cannot rebind it)', async () => {
  // The origin is named (it may be loopback); the name means nothing to the system resolver.
  const origin = `http://pinned.example:${port()}`;
  const { resolve, calls } = resolver(['127.0.0.1'], ['10.9.9.9']);
  const fetchFn = policedFetch(new OutboundPolicy({ allowedOrigins: [origin] }), { resolve });
  const res = await fetchFn(`${origin}/metadata`);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ ok: true });
  expect(calls()).toBe(1);
  // The Host header is still the name (TLS would verify the certificate for it too).
  expect(seen.at(-1)).toBe(`GET /metadata host=pinned.example:${port()}`);
});

it('a redirect is never followed', async () => {
  const before = seen.length;
  const fetchFn = policedFetch(new OutboundPolicy({ allowedOrigins: [server.base] }));
  expect(await refusal(fetchFn(`${server.base}/redirect`))).toBe('a redirect (HTTP 302) is not followed');
  expect(seen.slice(before)).toEqual([`GET /redirect host=${new URL(server.base).host}`]);
});

it('a body larger than the bound fails as it arrives, declared or not', async () => {
  const fetchFn = policedFetch(new OutboundPolicy({ allowedOrigins: [server.base] }), { maxResponseBytes: 1024 });
  await expect((await fetchFn(`${server.base}/large`)).text()).rejects.toBeInstanceOf(ResponseTooLargeError);
  await expect((await fetchFn(`${server.base}/declared-large`)).text()).rejects.toBeInstanceOf(ResponseTooLargeError);
});

it('a server that never answers is given up at the bound', async () => {
  const fetchFn = policedFetch(new OutboundPolicy({ allowedOrigins: [server.base] }), { timeoutMs: 200 });
  expect(await refusal(fetchFn(`${server.base}/slow`))).toMatch(/TimeoutError|AbortError/);
});

it("POSTs a form as the SDK's OAuth functions do (body, content-type, method)", async () => {
  const fetchFn = policedFetch(new OutboundPolicy({ allowedOrigins: [server.base] }));
  const res = await fetchFn(`${server.base}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'refresh_token' }),
  });
  expect(res.ok).toBe(true);
  expect(seen.at(-1)).toBe(`POST /token host=${new URL(server.base).host}`);
});
