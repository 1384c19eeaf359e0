/**
 * Runs a `streamifyResponse` handler behind a local HTTP server the way the Node.js Lambda runtime and a
 * function URL (InvokeMode RESPONSE_STREAM) do, with real streaming, so tests exercise the same bytes:
 * payload 2.0 event in, prelude JSON + 8 NUL bytes + body out (as aws-lambda-ric's streaming response writes it).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { Context, LambdaFunctionURLEvent, StreamifyHandler } from 'aws-lambda';

const STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');
const PRELUDE_CONTENT_TYPE = 'application/vnd.awslambda.http-integration-response';
const DELIMITER = Buffer.alloc(8); // 8 NUL bytes end the prelude
const MAX_REQUEST_BYTES = 6 * 1024 * 1024; // function URL request payload limit
type Handler = StreamifyHandler<LambdaFunctionURLEvent, unknown>;
type WriteCallback = (error: Error | null | undefined) => void;
type Done = (error?: Error | null) => void;
interface Prelude {
  statusCode?: number;
  headers?: Record<string, string>;
  cookies?: string[];
}

/** Defines the `awslambda` global the managed runtime provides (no-op if already there). */
export function installLambdaGlobals(): void {
  const g = globalThis as { awslambda?: Record<string, unknown> };
  // Powertools (through @aws/lambda-invoke-store) may already have put its own keys on `awslambda`.
  if (typeof g.awslambda?.streamifyResponse === 'function') return;
  g.awslambda = {
    ...g.awslambda,
    streamifyResponse: (fn: Handler) => Object.assign(fn, { [STREAMING]: 'response' }),
    HttpResponseStream: {
      // Same protocol as the RIC's HttpResponseStream.from: the prelude rides on the first write().
      from(stream: LocalResponseStream, prelude: Record<string, unknown>) {
        stream.setContentType(PRELUDE_CONTENT_TYPE);
        const json = JSON.stringify(prelude);
        stream._onBeforeFirstWrite = (write) => {
          write(json);
          write(new Uint8Array(DELIMITER.length));
        };
        return stream;
      },
    },
  };
}

/** The runtime's response stream; `_write` plays the function URL that parses the prelude. */
class LocalResponseStream extends Writable {
  _onBeforeFirstWrite?: (write: (chunk: string | Uint8Array) => void) => void;
  private contentType = 'application/octet-stream';
  private writeCalled = false;
  private headersDone = false;
  private pending: Buffer[] = []; // bytes seen before the delimiter

  constructor(private readonly res: ServerResponse) {
    super();
  }

  setContentType(type: string): void {
    if (this.writeCalled) throw new Error('Cannot set content-type, too late.');
    this.contentType = type;
  }

  // Like the RIC, only write() runs the prelude hook; end(data) bypasses it, which is RIC issue #97.
  override write(chunk: unknown, encoding?: BufferEncoding | WriteCallback, cb?: WriteCallback): boolean {
    if (!this.writeCalled) {
      this.writeCalled = true;
      this._onBeforeFirstWrite?.((c) => super.write(c));
    }
    return typeof encoding === 'string' ? super.write(chunk, encoding, cb) : super.write(chunk, encoding ?? cb);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, cb: Done): void {
    // Without HttpResponseStream.from the body is sent as is, with the content type set on the stream.
    if (!this.headersDone && this.contentType !== PRELUDE_CONTENT_TYPE) {
      this.sendHead(200, { 'content-type': this.contentType });
    }
    if (this.headersDone) {
      this.forward(chunk, cb);
      return;
    }
    this.pending.push(chunk);
    const buffered = Buffer.concat(this.pending);
    const at = buffered.indexOf(DELIMITER);
    if (at < 0) {
      cb();
      return;
    }
    this.pending = [];
    try {
      const prelude = JSON.parse(buffered.subarray(0, at).toString()) as Prelude;
      const { statusCode = 200, headers = {}, cookies = [] } = prelude;
      this.sendHead(statusCode, cookies.length > 0 ? { ...headers, 'set-cookie': cookies } : headers);
    } catch (error) {
      this.fail(`bad prelude: ${String(error)}`);
      cb();
      return;
    }
    this.forward(buffered.subarray(at + DELIMITER.length), cb);
  }

  override _final(cb: Done): void {
    if (!this.headersDone) {
      if (this.contentType === PRELUDE_CONTENT_TYPE && this.pending.length > 0) {
        this.fail('prelude without delimiter: end(data) without a prior write() (RIC issue #97)');
        cb();
        return;
      }
      // A bare end() after from(): 200 without the prelude's status and headers (issue #97).
      this.sendHead(200, this.contentType === PRELUDE_CONTENT_TYPE ? {} : { 'content-type': this.contentType });
    }
    this.res.end(() => cb());
  }

  override _destroy(error: Error | null, cb: Done): void {
    // Handler error, timeout or client disconnect: a 502 if nothing was sent yet, else cut the connection.
    if (!this.res.destroyed && !this.res.writableEnded) {
      if (this.headersDone) this.res.destroy();
      else this.fail(`response stream destroyed: ${error?.message ?? 'no error'}`);
    }
    cb(error);
  }

  private sendHead(status: number, headers: Record<string, string | string[]>): void {
    this.headersDone = true;
    this.res.writeHead(status, headers);
    this.res.flushHeaders(); // headers reach the client before the first event, as on AWS
  }

  private forward(chunk: Buffer, cb: Done): void {
    if (this.res.destroyed || this.res.writableEnded || chunk.length === 0 || this.res.write(chunk)) cb();
    else this.res.once('drain', () => cb());
  }

  private fail(reason: string): void {
    console.warn(`[lambda-invoker] 502: ${reason}`);
    this.headersDone = true;
    if (this.res.headersSent) return void this.res.destroy();
    this.res.writeHead(502, { 'content-type': 'application/json' }).end('{"Message":"Internal Server Error"}');
  }
}

export interface LambdaInvokerOptions {
  /** Function timeout; default 900 s (the Lambda maximum). */
  timeoutMs?: number;
  host?: '127.0.0.1';
  /** How long to wait for the stream to end after the handler resolved; AWS waits until timeout. */
  endGraceMs?: number;
  /** Simulates AWS_IAM auth: puts `requestContext.authorizer.iam.userArn` into every event. */
  iamUserArn?: string;
}

export interface LambdaInvoker {
  url: string;
  close(): Promise<void>;
}

export async function startLambdaInvoker(
  target: Handler | { handler: Handler },
  opts: LambdaInvokerOptions = {},
): Promise<LambdaInvoker> {
  const handler = typeof target === 'function' ? target : target.handler;
  if ((handler as unknown as Record<symbol, unknown>)[STREAMING] !== 'response') {
    throw new Error('handler is not wrapped in awslambda.streamifyResponse (call installLambdaGlobals first)');
  }
  const { timeoutMs = 900_000, host = '127.0.0.1', endGraceMs = 500 } = opts;
  const inflight = new Set<Promise<void>>();

  const invoke = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    if (!body) {
      res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
      return void res.end(`{"Message":"Request must be smaller than ${MAX_REQUEST_BYTES} bytes"}`);
    }
    const event = toFunctionUrlEvent(req, body, opts.iamUserArn);
    const stream = new LocalResponseStream(res);
    stream.on('error', () => undefined); // the handler may not listen; an unhandled 'error' would crash jest
    res.on('close', () => {
      // Client went away before the response finished: surface it to the handler like a broken socket.
      if (res.writableFinished) return;
      stream.destroy(Object.assign(new Error('Client disconnected'), { code: 'ECONNRESET' }));
    });
    const startedAt = Date.now();
    const timer = setTimeout(() => {
      console.warn(`[lambda-invoker] Task timed out after ${timeoutMs / 1000} seconds`);
      stream.destroy(new Error('Task timed out'));
    }, timeoutMs).unref();
    try {
      const context = makeContext(event.requestContext.requestId, startedAt, timeoutMs);
      const result: unknown = handler(event, stream as unknown as awslambda.HttpResponseStream, context);
      if (!(result instanceof Promise)) throw new Error('Streaming does not support non-async handlers.');
      await result; // the return value is ignored, as on AWS
      if (!stream.writableFinished && !stream.destroyed) {
        const grace = new Promise((resolve) => setTimeout(resolve, endGraceMs).unref());
        await Promise.race([new Promise((resolve) => stream.once('close', resolve)), grace]);
        if (!stream.writableEnded && !stream.destroyed) {
          console.warn('[lambda-invoker] handler resolved without ending the response stream (AWS: hangs)');
          stream.end();
        }
      }
    } catch (error) {
      console.warn('[lambda-invoker] handler failed:', error);
      stream.destroy(error instanceof Error ? error : new Error(String(error)));
    } finally {
      clearTimeout(timer);
    }
  };

  const server = createServer((req, res) => {
    const run = invoke(req, res).catch(() => void res.destroy());
    inflight.add(run);
    void run.finally(() => inflight.delete(run));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections(); // idle keep-alive sockets too, or jest never exits
      const settle = new Promise<void>((r) => setTimeout(r, 2000).unref());
      await Promise.race([Promise.all(inflight), settle]);
      await closed;
    },
  };
}

/** Reads the body; undefined past the function URL's 6 MB limit (the rest is drained, not stored). */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_REQUEST_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_REQUEST_BYTES ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Payload format 2.0 as a function URL builds it (the AWS Lambda guide, "Invoking Lambda function URLs"). */
function toFunctionUrlEvent(req: IncomingMessage, body: Buffer, iamUserArn?: string): LambdaFunctionURLEvent {
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const [name, value] = [req.rawHeaders[i].toLowerCase(), req.rawHeaders[i + 1]];
    if (name === 'cookie')
      cookies.push(
        ...value
          .split(';')
          .map((c) => c.trim())
          .filter(Boolean),
      );
    else headers[name] = name in headers ? `${headers[name]},${value}` : value; // repeats comma-joined
  }
  const sourceIp = req.socket.remoteAddress ?? '127.0.0.1';
  // What the function URL front end adds; x-forwarded-proto lets the Request URL say http:// locally.
  Object.assign(headers, {
    'x-forwarded-proto': 'http',
    'x-forwarded-for': sourceIp,
    'x-forwarded-port': String(req.socket.localPort),
    'x-amzn-trace-id': `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${randomBytes(12).toString('hex')}`,
  });
  const [rawPath, rawQueryString = ''] = (req.url ?? '/').split(/\?(.*)/s);
  const query: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(rawQueryString)) query[k] = k in query ? `${query[k]},${v}` : v;
  const domainName = headers.host ?? 'localhost';
  const http = { method: req.method ?? 'GET', path: rawPath, protocol: `HTTP/${req.httpVersion}`, sourceIp };
  // AWS_IAM auth: the real iam block has more ids; the gateway reads only userArn.
  const ids = { callerId: 'AIDALOCAL', userId: 'AIDALOCAL', accessKey: 'ASIALOCAL', cognitoIdentity: null };
  const iam = iamUserArn && { ...ids, userArn: iamUserArn, accountId: iamUserArn.split(':')[4] ?? '' };
  // Text bodies arrive as is; anything else (or invalid UTF-8) base64-encoded, as function URLs do.
  const textual = /^$|^text\/|[/+](json|xml)\b|javascript|x-www-form-urlencoded/i.test(headers['content-type'] ?? '');
  const text = body.length > 0 && textual ? decodeUtf8(body) : undefined;
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    ...(cookies.length ? { cookies } : {}),
    headers,
    ...(rawQueryString ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'local',
      domainName,
      domainPrefix: domainName.split('.')[0],
      http: { ...http, userAgent: headers['user-agent'] ?? '' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
      ...(iam ? { authorizer: { iam } } : {}),
    },
    ...(body.length === 0 ? {} : { body: text ?? body.toString('base64') }),
    isBase64Encoded: body.length > 0 && text === undefined,
  };
}

function decodeUtf8(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function makeContext(requestId: string, startedAt: number, timeoutMs: number): Context {
  const unsupported = (): never => {
    throw new Error('done/fail/succeed are not available to streaming handlers');
  };
  const name = 'mcp-gateway-local';
  return {
    functionName: name,
    functionVersion: '$LATEST',
    memoryLimitInMB: '1024',
    callbackWaitsForEmptyEventLoop: true,
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${name}`,
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: `local/[$LATEST]${startedAt}`,
    getRemainingTimeInMillis: () => Math.max(0, startedAt + timeoutMs - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}
