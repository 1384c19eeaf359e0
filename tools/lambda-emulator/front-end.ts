import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { type FunctionUrlEventOptions, toFunctionUrlEvent } from './function-url-event';

/** Lambda's limit on a synchronous invocation's request payload (the event), function URLs included. */
export const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024;
const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

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
  const server: Server = createServer((req, res) => {
    const run = handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' }).end(INTERNAL_ERROR);
      else res.destroy();
    });
    inflight.add(run);
    void run.finally(() => inflight.delete(run));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (options.refuseForeignHosts !== false && !hostAndOriginAllowed(req, allowedHosts, originAllowed)) {
      res.writeHead(403, { 'content-type': 'application/json' }).end('{"Message":"Forbidden"}');
      return;
    }
    const body = await readBody(req, MAX_PAYLOAD_BYTES);
    const event = body && toFunctionUrlEvent(req, body, options);
    if (!event || Buffer.byteLength(JSON.stringify(event)) > MAX_PAYLOAD_BYTES) {
      res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
      res.end(
        `{"Message":"Request must be smaller than ${MAX_PAYLOAD_BYTES} bytes for the InvokeWithResponseStream operation"}`,
      );
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
 * The request body, or undefined past `limit`. The rest of an oversized body is read and dropped
 * (up to 16 times the limit), so the client can send it all and then read the 413.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > 16 * limit) req.destroy();
    });
    req.on('end', () => resolve(size > limit ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('close', () => {
      if (!req.complete) reject(new Error('the client went away before sending its whole request'));
    });
  });
}
