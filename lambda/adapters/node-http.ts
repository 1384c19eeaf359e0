import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CorsPolicy } from '../http/cors';
import { refuse, unrepresentableMethod } from '../http/errors';
import {
  type ExchangeContext,
  type ExchangeRequest,
  type FetchHandler,
  type ResponseOutcome,
  requestAbortController,
  responseEndListeners,
} from '../http/exchange';
import { StalledClientError } from '../http/sse';
import type { Clock } from '../scheduling/clock';

/**
 * The gateway core on node:http: Request in, Response out, streamed chunk by chunk, many requests at
 * once in one process. It serves `npm start` and the tests, and the Lambda Web Function (`../web-function.ts`),
 * where this server runs in the execution environment behind the function's endpoint. Its own job is what
 * Lambda's function URL does for the other form (the body buffered, 6 MB at most), plus DNS-rebinding
 * protection on a local run: a loopback server only answers Host and Origin values that name the loopback.
 */

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];
/** What a Lambda function URL accepts as a request payload. */
const MAX_REQUEST_BYTES = 6 * 1024 * 1024;
const isLoopback = (host: string) => host === '127.0.0.1' || host === 'localhost' || host === '::1';

export interface NodeServerOptions {
  host: string;
  port: number;
  /** The gateway's clock: a request's deadline is set on it, as the gateway reads it. */
  clock: Clock;
  /** Longest time one request may take (the Lambda's timeout, locally). */
  requestTimeoutMs?: number;
  /** Browser origins the configuration allows (`cors.allowedOrigins`) besides the server's own. */
  allowedOrigins?: readonly string[];
  /**
   * Behind a front end that names the public host (a Web Function's endpoint, which reaches the server on
   * the loopback address its runtime gives): no loopback Host check, the request's Host is the endpoint's.
   */
  behindEndpoint?: boolean;
}

export interface RunningServer {
  server: Server;
  url: string;
  /** Takes no new connection (requests under way go on): the first step of a graceful shutdown. */
  stopAccepting(): void;
  close(): Promise<void>;
}

/**
 * How long an idle kept-alive connection stays open: longer than what sits in front keeps one idle (a
 * Web Function's runtime, a load balancer's 60 s, an SDK client's pool), so the client side always
 * lets go first. Node's default (5 s) races it: a request sent on a connection the server is just
 * closing fails as "other side closed" before it arrives, which a busy machine makes likely.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 75_000;

export async function serveOnNode(handler: FetchHandler, options: NodeServerOptions): Promise<RunningServer> {
  const requestTimeoutMs = options.requestTimeoutMs ?? 900_000;
  const allowedOrigins = new CorsPolicy(options.allowedOrigins ?? []);
  let allowedHosts: string[] = [];
  const server = createServer((req, res) => {
    const ends = responseEndListeners();
    void handle(req, res, ends.register).then(ends.end, () => {
      ends.end('error');
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // A request's headers may take as long as a kept connection may idle (Node's rule: at least as long).
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1000;

  async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    onResponseEnd: ExchangeContext['onResponseEnd'],
  ): Promise<ResponseOutcome> {
    const refusal = checkHostAndOrigin(req, allowedHosts, allowedOrigins);
    if (refusal) return send(res, refusal, new AbortController());
    const abort = requestAbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const method = req.method ?? 'GET';
    const unrepresentable = unrepresentableMethod(method);
    if (unrepresentable) return send(res, unrepresentable, abort);
    const hasBody = method !== 'GET' && method !== 'HEAD';
    // Buffered like a function URL does (6 MB at most); a web stream per request costs more than the body.
    const body = hasBody ? await readBody(req, MAX_REQUEST_BYTES) : undefined;
    if (body === null) {
      // The rest of the body is not read: close the connection after answering.
      return send(res, refuse('PayloadTooLarge', 'Payload Too Large', { headers: { connection: 'close' } }), abort);
    }
    // The body is already here: no web Request (headers copy, signal, body stream) is built for it.
    const text = body ? body.toString('utf8') : '';
    const request: ExchangeRequest = {
      url: `http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`,
      method,
      headers: toHeaders(req),
      text: async () => text,
    };
    const response = await handler(request, {
      signal: abort.signal,
      deadline: options.clock.now() + requestTimeoutMs,
      onResponseEnd,
    });
    return send(res, response, abort);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  allowedHosts =
    isLoopback(options.host) && !options.behindEndpoint ? LOOPBACK_NAMES.map((name) => `${name}:${port}`) : [];
  const hostForUrl = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    server,
    url: `http://${hostForUrl}:${port}/mcp`,
    stopAccepting: () => {
      server.close();
      server.closeIdleConnections();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * 403 for a foreign Host (on a loopback bind) or a foreign Origin: the DNS-rebinding defence. An
 * origin in `cors.allowedOrigins` is not foreign: the operator allowed its pages to call (the Host
 * check still holds, and a rebinding attack cannot pass it).
 */
function checkHostAndOrigin(req: IncomingMessage, allowedHosts: string[], cors: CorsPolicy): Response | undefined {
  const host = req.headers.host ?? '';
  if (allowedHosts.length && !allowedHosts.includes(host.toLowerCase())) {
    return refuse('Forbidden', 'Forbidden: Host header not allowed');
  }
  const origin = req.headers.origin;
  if (origin !== undefined && !cors.allows(origin)) {
    let originHost: string | undefined;
    try {
      originHost = new URL(origin).host.toLowerCase();
    } catch {
      originHost = undefined;
    }
    const allowed = allowedHosts.length ? allowedHosts : [host.toLowerCase()];
    if (!originHost || !allowed.includes(originHost)) {
      return refuse('Forbidden', 'Forbidden: Origin not allowed');
    }
  }
  return undefined;
}

/** The request body, or null as soon as it exceeds `limit`. */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function toHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

/** Writes `response`; how it ended: sent completely, the client gone first, or the body failed. */
async function send(res: ServerResponse, response: Response, abort: AbortController): Promise<ResponseOutcome> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  if (!response.body) {
    res.writeHead(response.status, headers).end();
    return 'complete';
  }
  if (!(headers['content-type'] ?? '').startsWith('text/event-stream')) {
    // A complete body: headers and body leave in one write.
    const body = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, { ...headers, 'content-length': String(body.length) }).end(body);
    return 'complete';
  }
  res.writeHead(response.status, headers);
  res.flushHeaders(); // a stream's headers go out at once, before its first event
  const reader = response.body.getReader();
  abort.signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined), { once: true });
  // The body failing (a client stalled past its bound: StalledClientError) must end a wait for 'drain' too.
  const failed = reader.closed.then(
    () => new Promise<never>(() => undefined),
    (error: unknown) => Promise.reject(error),
  );
  failed.catch(() => undefined);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      // Corked until the next tick: an event and the end that follows it share one write.
      res.cork();
      const room = res.write(value);
      process.nextTick(() => res.uncork());
      // Backpressure: a client that does not read leaves the rest in the body (bounded, see http/sse.ts),
      // not in this socket's buffer.
      if (!room) await Promise.race([once(res, 'drain', { signal: abort.signal }), failed]);
    }
    res.end();
    return abort.signal.aborted ? 'cancelled' : 'complete';
  } catch (error) {
    res.destroy();
    return abort.signal.aborted || error instanceof StalledClientError ? 'cancelled' : 'error';
  }
}
