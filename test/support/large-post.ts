import { request } from 'node:http';
import { Readable } from 'node:stream';

/**
 * A POST whose body is generated chunk by chunk as the socket takes it (never held whole), for tests
 * of what a server does with a body over its limit: how much the client could hand over before the
 * answer, and whether it was told `100 Continue`.
 */

export interface LargePostAnswer {
  /** 0: no answer (the connection failed, or the wait ran out). */
  status: number;
  body: string;
  /** Body bytes the client handed to its socket. */
  sent: number;
  /** The server said `100 Continue`. */
  continued: boolean;
  error?: string;
}

export interface LargePostOptions {
  /** Send a `Content-Length`; default chunked. */
  declare?: boolean;
  /** `Expect: 100-continue`: the body goes only after `100 Continue`. */
  expectContinue?: boolean;
  /** Send the headers only, and wait for the answer. */
  withhold?: boolean;
  /** At most this long for the answer; default 20 s. */
  waitMs?: number;
}

/** POSTs `bytes` of `x` to `url` on a connection of its own; the client stops sending once it has an answer. */
export function largePost(url: string, bytes: number, options: LargePostOptions = {}): Promise<LargePostAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
  if (options.declare) headers['content-length'] = String(bytes);
  if (options.expectContinue) headers.expect = '100-continue';
  const req = request(url, { method: 'POST', agent: false, headers });
  let sent = 0;
  let continued = false;
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const body = new Readable({
    read() {
      if (sent >= bytes) return void this.push(null);
      const next = chunk.subarray(0, Math.min(chunk.length, bytes - sent));
      sent += next.length;
      this.push(next);
    },
  });
  return new Promise<LargePostAnswer>((resolve) => {
    const done = (answer: Pick<LargePostAnswer, 'status' | 'body' | 'error'>) => {
      clearTimeout(timer);
      body.unpipe(req);
      body.destroy();
      req.destroy();
      resolve({ ...answer, sent, continued });
    };
    const timer = setTimeout(() => done({ status: 0, body: '', error: 'no answer' }), options.waitMs ?? 20_000);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (part: string) => {
        text += part;
      });
      res.on('end', () => done({ status: res.statusCode ?? 0, body: text }));
      res.on('error', (error) => done({ status: res.statusCode ?? 0, body: text, error: error.message }));
    });
    req.on('error', (error) => done({ status: 0, body: '', error: error.message }));
    if (options.withhold) req.flushHeaders();
    else if (options.expectContinue)
      req.on('continue', () => {
        continued = true;
        body.pipe(req);
      });
    else body.pipe(req);
  });
}
