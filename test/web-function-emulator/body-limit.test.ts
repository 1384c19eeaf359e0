import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { WebFunctionStats } from '../../tools/web-function-emulator/emulator';
import { type LargePostOptions, largePost } from '../support/large-post';

/**
 * The emulator's front end refuses a request body over Lambda's request payload limit (6 MB) with 413
 * at once: a declared `Content-Length` over it before any of the body is read (no `100 Continue`), a
 * streamed one as soon as it passes the limit, without reading the rest. The front end runs in a
 * process of its own (fixtures/front-process.ts) so its peak memory can be read: a 50 MB body generated
 * on the fly (never held by the test) does not grow it by anything like the body. Every wait is bounded.
 */

jest.setTimeout(60_000);

const LIMIT = 6 * 1024 * 1024;
const BODY_BYTES = 50 * 1024 * 1024;
const ROOT = join(__dirname, '..', '..');

interface FrontMemory {
  maxRssKiB: number;
  stats: WebFunctionStats;
}

let front: ChildProcess;
let url: string;
const replies: Array<(memory: FrontMemory) => void> = [];

beforeAll(async () => {
  front = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'fixtures', 'front-process.ts')], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  front.on('message', (message) => replies.shift()?.(message as FrontMemory));
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the front end did not start within 30 s')), 30_000);
    front.once('exit', (code) => reject(new Error(`the front end exited (${code})`)));
    createInterface({ input: front.stdout! }).once('line', (line) => {
      clearTimeout(timer);
      resolve((JSON.parse(line) as { url: string }).url);
    });
  });
});

afterAll(async () => {
  if (!front || front.exitCode !== null) return;
  const exited = new Promise((resolve) => front.once('exit', resolve));
  front.send('close');
  // The exit is what is waited for. A watchdog, not a wait: a front that hangs is killed after 10 s.
  const watchdog = setTimeout(() => front.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(watchdog);
});

function memory(): Promise<FrontMemory> {
  return new Promise((resolve) => {
    replies.push(resolve);
    front.send('memory');
  });
}

const post = (path: string, bytes: number, options?: LargePostOptions) =>
  largePost(new URL(path, url).href, bytes, options);

const TOO_LARGE = { Message: `Request must be smaller than ${LIMIT} bytes` };

describe("the Web Function emulator's request body limit", () => {
  it('answers a streamed 50 MB body with 413 at once, reads no more of it, and grows by nothing like it; the next request is served', async () => {
    const warm = await post('/echo', 1024);
    expect(warm.status).toBe(200);
    const before = await memory();

    const big = await post('/echo', BODY_BYTES);
    expect(big.status).toBe(413);
    expect(JSON.parse(big.body)).toEqual(TOO_LARGE);
    // The front end stopped reading: the client could not hand over the whole body.
    expect(big.sent).toBeLessThan(BODY_BYTES);

    const after = await memory();
    // Before the limit the front end buffered the whole body (and a copy): 100 MB and more.
    expect((after.maxRssKiB - before.maxRssKiB) * 1024).toBeLessThan(BODY_BYTES / 2);
    expect(after.stats.requests).toBe(before.stats.requests); // never reached an environment
    expect(after.stats.tooLarge).toBe(before.stats.tooLarge + 1);

    const next = await post('/echo', 1024);
    expect(next.status).toBe(200);
    expect(JSON.parse(next.body).body).toBe('x'.repeat(1024));
  });

  it('refuses a declared Content-Length over the limit before reading any of the body, also without 100 Continue', async () => {
    const before = await memory();
    // Only the headers: the answer comes without the body.
    const withheld = await post('/echo', BODY_BYTES, { declare: true, withhold: true, waitMs: 10_000 });
    expect(withheld.status).toBe(413);
    expect(JSON.parse(withheld.body)).toEqual(TOO_LARGE);
    expect(withheld.sent).toBe(0);
    // A client that asks first is told no, and sends nothing.
    const asked = await post('/echo', BODY_BYTES, { declare: true, expectContinue: true });
    expect(asked).toMatchObject({ status: 413, continued: false, sent: 0 });
    const after = await memory();
    expect(after.stats.requests).toBe(before.stats.requests);
    expect(after.stats.tooLarge).toBe(before.stats.tooLarge + 2);
  });

  it('takes a body of exactly the limit, declared or chunked', async () => {
    for (const declare of [true, false]) {
      const atLimit = await post('/echo', LIMIT, { declare });
      expect(atLimit.status).toBe(200);
      expect(JSON.parse(atLimit.body).body).toHaveLength(LIMIT);
    }
  });
});
