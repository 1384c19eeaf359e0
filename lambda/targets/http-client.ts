import { Agent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/**
 * The gateway's outbound HTTP to targets: node:http(s) with one keep-alive agent per protocol,
 * instead of `fetch`. Measured on the project's 2-core machine (bench/README in the Performance
 * section of README.md): a keep-alive `fetch` POST costs about 1 ms of CPU in the caller, the same
 * request through `http.request` with a keep-alive agent about 0.3 ms — `fetch` builds a web
 * `Request`, `Headers`, a `Response` and a web stream per request. undici's `Pool` was measured at
 * 0.24 ms but adds a dependency the bundle must load at every cold start.
 *
 * A request whose socket came from the pool and was closed by the peer meanwhile (an idle timeout
 * at the target or a proxy, or a Lambda environment frozen longer than that) fails before any byte
 * of a response: it is sent once more on a fresh connection. The target cannot have processed it.
 */

/**
 * How long a pooled connection may stay idle, at most; less when the target announces a shorter idle
 * timeout (`Keep-Alive: timeout=N`: Node's agent then lets go a second before it). Without this
 * option Node's agent ignores the announcement and keeps the connection until the target closes it,
 * and a call sent as the target closes it fails with a reset: a `tools/call` is not sent twice (the
 * tool could run twice), so its client got "unreachable". 4 s, as undici's default.
 */
const IDLE_MS = 4000;

const agents = {
  'http:': new Agent({ keepAlive: true, timeout: IDLE_MS }),
  'https:': new HttpsAgent({ keepAlive: true, timeout: IDLE_MS }),
};

export interface TargetResponse {
  status: number;
  ok: boolean;
  headers: { get(name: string): string | null };
  /** The body as it arrives; read it, `text()` it, or `discard()` it. */
  body: IncomingMessage;
  /**
   * The whole body as text; rejects with a BodyTooLargeError (the body destroyed) as soon as it
   * grows past `maxBytes`, so a huge body is never held. `onChunk` sees every chunk.
   */
  text(maxBytes?: number, onChunk?: () => void): Promise<string>;
  /** Drops the body; a complete response leaves the connection reusable. */
  discard(): void;
}

export interface SendOptions {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /**
   * Send once more on a fresh connection when the pooled socket turned out dead before any response
   * byte. Only for messages that are safe twice: the peer may have closed while a request was on its
   * way, and a tool must never run twice (Node's own advice for `reusedSocket`).
   */
  resendOnStale?: boolean;
}

export async function send(url: URL, options: SendOptions): Promise<TargetResponse> {
  try {
    return await sendOnce(url, options, false);
  } catch (error) {
    if (!(error instanceof StaleSocketError) || !options.resendOnStale) throw unwrap(error);
    return sendOnce(url, options, true);
  }
}

/** The pooled socket was found closed by the peer before any response byte. */
class StaleSocketError extends Error {}

/** A stale socket not sent again surfaces as the connection error it was. */
function unwrap(error: unknown): unknown {
  return error instanceof StaleSocketError ? (error.cause ?? error) : error;
}

function sendOnce(url: URL, options: SendOptions, fresh: boolean): Promise<TargetResponse> {
  const headers: OutgoingHttpHeaders = { ...options.headers };
  if (options.body !== undefined) headers['content-length'] = Buffer.byteLength(options.body);
  const secure = url.protocol === 'https:';
  const agent = secure ? agents['https:'] : agents['http:'];
  const request = secure ? httpsRequest : httpRequest;
  return new Promise<TargetResponse>((resolve, reject) => {
    const req = request(url, {
      method: options.method,
      headers,
      signal: options.signal,
      // A retry after a stale socket takes a new connection rather than the next pooled one.
      agent: fresh ? false : agent,
    });
    req.once('response', (res) => resolve(wrap(res)));
    req.once('error', (error: NodeJS.ErrnoException) => {
      const stale =
        !fresh &&
        req.reusedSocket &&
        (error.code === 'ECONNRESET' || error.code === 'EPIPE') &&
        !options.signal?.aborted;
      reject(stale ? new StaleSocketError(error.message, { cause: error }) : error);
    });
    // Headers and body in one write.
    req.end(options.body);
  });
}

/** A body larger than the reader accepts. */
export class BodyTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`a body over ${limitBytes} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

function wrap(res: IncomingMessage): TargetResponse {
  const status = res.statusCode ?? 0;
  return {
    status,
    ok: status >= 200 && status < 300,
    headers: {
      get: (name) => {
        const value = res.headers[name.toLowerCase()];
        if (value === undefined) return null;
        return Array.isArray(value) ? value.join(', ') : value;
      },
    },
    body: res,
    text: (maxBytes = Number.POSITIVE_INFINITY, onChunk) =>
      new Promise<string>((resolve, reject) => {
        const declared = Number(res.headers['content-length']);
        if (declared > maxBytes) {
          res.destroy();
          reject(new BodyTooLargeError(maxBytes));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          onChunk?.();
          size += chunk.length;
          if (size > maxBytes) {
            res.destroy();
            reject(new BodyTooLargeError(maxBytes));
            return;
          }
          chunks.push(chunk);
        });
        res.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.once('error', reject);
        res.once('close', () => {
          if (!res.complete) reject(new Error('the body was cut'));
        });
      }),
    discard: () => {
      res.on('error', () => undefined);
      res.resume();
    },
  };
}
