import type { ServerResponse } from 'node:http';
import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { type FrontEnd, MAX_PAYLOAD_BYTES, startFrontEnd } from '../../tools/lambda-emulator/front-end';
import { largePost } from '../support/large-post';

/**
 * The function URL front end of `--lambda` (tools/lambda-emulator/front-end.ts) refuses a body over
 * Lambda's request payload limit (6 MB) with 413 at once and without an invocation: a declared
 * `Content-Length` over it before any of the body is read (no `100 Continue`), a streamed one as soon
 * as it passes the limit, the rest not read (the client cannot hand it all over). Then it still serves.
 */

jest.setTimeout(60_000);

const BODY_BYTES = 50 * 1024 * 1024;
const TOO_LARGE = {
  Message: `Request must be smaller than ${MAX_PAYLOAD_BYTES} bytes for the InvokeWithResponseStream operation`,
};

let front: FrontEnd;
const invocations: LambdaFunctionURLEvent[] = [];

beforeAll(async () => {
  // The invocation: answers with the length of the body it was given.
  const invoke = async (event: LambdaFunctionURLEvent, res: ServerResponse) => {
    invocations.push(event);
    const body = Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8');
    res.writeHead(200, { 'content-type': 'text/plain' }).end(String(body.length));
  };
  front = await startFrontEnd(invoke, { host: '127.0.0.1', port: 0 });
});
afterAll(() => front?.close());

describe("the --lambda front end's request payload limit", () => {
  it('answers a streamed 50 MB body with 413 at once, reads no more of it, invokes nothing; the next request is served', async () => {
    const before = invocations.length;
    const big = await largePost(`${front.url}/mcp`, BODY_BYTES);
    expect(big.status).toBe(413);
    expect(JSON.parse(big.body)).toEqual(TOO_LARGE);
    // The front end stopped reading: the client could not hand over the whole body.
    expect(big.sent).toBeLessThan(BODY_BYTES);
    expect(invocations.length).toBe(before);

    const next = await largePost(`${front.url}/mcp`, 1024, { declare: true });
    expect(next).toMatchObject({ status: 200, body: '1024' });
    expect(invocations.length).toBe(before + 1);
  });

  it('refuses a declared Content-Length over the limit before reading any of the body, also without 100 Continue', async () => {
    const before = invocations.length;
    const withheld = await largePost(`${front.url}/mcp`, BODY_BYTES, { declare: true, withhold: true, waitMs: 10_000 });
    expect(withheld).toMatchObject({ status: 413, sent: 0 });
    expect(JSON.parse(withheld.body)).toEqual(TOO_LARGE);
    const asked = await largePost(`${front.url}/mcp`, BODY_BYTES, { declare: true, expectContinue: true });
    expect(asked).toMatchObject({ status: 413, continued: false, sent: 0 });
    expect(invocations.length).toBe(before);
  });

  it('takes a 4 MB body (binary: 5.3 MB once base64 in the event), declared or chunked', async () => {
    for (const declare of [true, false]) {
      const taken = await largePost(`${front.url}/mcp`, 4 * 1024 * 1024, { declare });
      expect(taken).toMatchObject({ status: 200, body: String(4 * 1024 * 1024) });
    }
  });
});
