import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { type FunctionUrlEventOptions, toFunctionUrlEvent } from './function-url-event';

/** Lambda's limit on a synchronous invocation's request payload (the event), function URLs included. */
export const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024;
const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];
const TOO_LARGE = `{"Message":"Request must be smaller than ${MAX_PAYLOAD_BYTES} bytes for the InvokeWithResponseStream operation"}`;
/** How long a refused request's connection is kept for its client to read the 413 and leave. */
const REFUSED_LINGER_MS = 5000;

export interface FrontEnd {
  url: string;
  close(): Promise<void>;
}

/**
 * What runs one invocation: writes the function's response to `res` (through a `FunctionUrlSink`) and
 * settles when it is over. The execution-environment pool here; the in-process invoker of the tests.
 */
export type Invoke = (event: LambdaFunctionURLEvent, res: ServerResponse) => Promise<void>;

export interface FrontEndOptions extends FunctionUrlEventOptions {
  host: string;
  /** 0 picks a free one. */
  port: number;
  /**
   * On a loopback address, refuse foreign Host and Origin headers (DNS rebinding), which the real URL's
   * unguessable host name makes moot; default true. Off where the caller checks them itself (tests of
   * the function's own answers).
   */
  refuseForeignHosts?: boolean;
  /** Cross-origin callers let past the Origin check (the function answers their CORS itself). */
  originAllowed?: (origin: string) => boolean;
}

/**
 * The function URL (auth type NONE, invoke mode RESPONSE_STREAM): each HTTP request becomes one
 * invocation with a payload 2.0 event, the response streams back as the function writes it. A request
 * over the payload limit is refused without an invocation.
 */
export async function startFrontEnd(invoke: Invoke, options: FrontEndOptions): Promise<FrontEnd> {
  let allowedHosts: string[] = [];
  const originAllowed = options.originAllowed ?? (() => false);
  const inflight = new Set<Promise<void>>();
  const serve = (req: IncomingMessage, res: ServerResponse, expectsContinue: boolean) => {
    const run = handle(req, res, expectsContinue).catch(() => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' }).end(INTERNAL_ERROR);
      else res.destroy();
    });
    inflight.add(run);
    void run.finally(() => inflight.delete(run));
  };
  const server: Server = createServer((req, res) => serve(req, res, false));
  // `Expect: 100-continue`: a body declared too large is refused before the client sends it.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => serve(req, res, true));

  async function handle(req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): Promise<void> {
    if (options.refuseForeignHosts !== false && !hostAndOriginAllowed(req, allowedHosts, originAllowed)) {
      res.writeHead(403, { 'content-type': 'application/json' }).end('{"Message":"Forbidden"}');
      return;
    }
    if (Number(req.headers['content-length'] ?? 0) > MAX_PAYLOAD_BYTES) return refuseTooLarge(req, res);
    if (expectsContinue) res.writeContinue();
    const body = await readBody(req, MAX_PAYLOAD_BYTES);
    if (body === undefined) return refuseTooLarge(req, res);
    const event = toFunctionUrlEvent(req, body, options);
    if (Buffer.byteLength(JSON.stringify(event)) > MAX_PAYLOAD_BYTES) {
      // The whole body was read: the connection may close as soon as the 413 is out.
      res.writeHead(413, { 'content-type': 'application/json', connection: 'close' }).end(TOO_LARGE);
      return;
    }
    await invoke(event, res);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const loopback = ['127.0.0.1', 'localhost', '::1'].includes(options.host);
  allowedHosts = loopback ? LOOPBACK_NAMES.map((name) => `${name}:${port}`) : [];
  const hostForUrl = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${hostForUrl}:${port}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await Promise.race([Promise.allSettled(inflight), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
      await closed;
    },
  };
}

const INTERNAL_ERROR = '{"Message":"Internal Server Error"}';

function hostAndOriginAllowed(
  req: IncomingMessage,
  allowedHosts: string[],
  originAllowed: (origin: string) => boolean,
): boolean {
  const host = (req.headers.host ?? '').toLowerCase();
  if (allowedHosts.length && !allowedHosts.includes(host)) return false;
  const origin = req.headers.origin;
  if (origin === undefined || originAllowed(origin)) return true;
  try {
    return (allowedHosts.length ? allowedHosts : [host]).includes(new URL(origin).host.toLowerCase());
  } catch {
    return false;
  }
}

/**
 * 413 at once, and no more of the body read: the request is paused (the socket with it, once its small
 * buffer is full), so the client's sending stalls instead of the front end taking it in. The response is
 * written whole but not ended: ending it would close the connection with the client's bytes unread, and
 * a client still sending would then meet a reset before it read the 413. The connection closes when the
 * client leaves (`Connection: close` asks it to), else after `REFUSED_LINGER_MS`.
 */
function refuseTooLarge(req: IncomingMessage, res: ServerResponse): void {
  req.pause();
  if (res.destroyed) return;
  res.writeHead(413, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(TOO_LARGE),
    connection: 'close',
  });
  res.write(TOO_LARGE);
  const linger = setTimeout(() => res.destroy(), REFUSED_LINGER_MS).unref();
  res.on('close', () => clearTimeout(linger));
}

/** The request body, or undefined as soon as it passes `limit` (nothing more is read: the request is left paused). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      req.off('data', onData);
      req.pause();
      chunks.length = 0;
      resolve(undefined);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('close', () => {
      if (!req.complete) reject(new Error('the client went away before sending its whole request'));
    });
  });
}
