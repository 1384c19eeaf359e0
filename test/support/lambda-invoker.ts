/**
 * Runs a `streamifyResponse` handler in this process behind the Lambda emulator's function URL
 * (tools/lambda-emulator: the same payload 2.0 event builder, 6 MB limit and response sink that
 * `npm start -- --lambda` uses), so tests exercise the same bytes: payload 2.0 event in, prelude JSON +
 * 8 NUL bytes + body out (as aws-lambda-ric's streaming response writes it). Unlike Lambda, a client
 * that disconnects is signalled to the handler (its response stream is destroyed), so the handler's
 * own disconnect handling can be tested; `npm start -- --lambda` is the faithful one.
 */
import type { ServerResponse } from 'node:http';
import type { Context, LambdaFunctionURLEvent, StreamifyHandler } from 'aws-lambda';
import { type FrontEnd, startFrontEnd } from '../../tools/lambda-emulator/front-end';
import { FunctionUrlSink, PRELUDE_CONTENT_TYPE } from '../../tools/lambda-emulator/response-sink';

const STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');
const DELIMITER_BYTES = 8; // 8 NUL bytes end the prelude
type Handler = StreamifyHandler<LambdaFunctionURLEvent, unknown>;
type WriteCallback = (error: Error | null | undefined) => void;
type Done = (error?: Error | null) => void;

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
      from(stream: InProcessResponseStream, prelude: Record<string, unknown>) {
        stream.setContentType(PRELUDE_CONTENT_TYPE);
        const json = JSON.stringify(prelude);
        stream._onBeforeFirstWrite = (write) => {
          write(json);
          write(new Uint8Array(DELIMITER_BYTES));
        };
        return stream;
      },
    },
  };
}

const warn = (reason: string): void => console.warn(`[lambda-invoker] 502 or cut stream: ${reason}`);

/**
 * The runtime's response stream as the handler sees it (content type settable until the first write,
 * the prelude hook of `HttpResponseStream.from`), writing straight into the function URL's sink.
 */
class InProcessResponseStream extends FunctionUrlSink {
  _onBeforeFirstWrite?: (write: (chunk: string | Uint8Array) => void) => void;
  private writeCalled = false;

  constructor(res: ServerResponse) {
    super(res, 'application/octet-stream', warn);
  }

  setContentType(type: string): void {
    if (this.writeCalled) throw new Error('Cannot set content-type, too late.');
    this.contentType = type;
  }

  // Like the RIC, only write() runs the prelude hook; end(data) bypasses it (https://github.com/aws/aws-lambda-nodejs-runtime-interface-client/issues/97).
  override write(chunk: unknown, encoding?: BufferEncoding | WriteCallback, cb?: WriteCallback): boolean {
    if (!this.writeCalled) {
      this.writeCalled = true;
      this._onBeforeFirstWrite?.((c) => super.write(c));
    }
    return typeof encoding === 'string' ? super.write(chunk, encoding, cb) : super.write(chunk, encoding ?? cb);
  }

  override _destroy(error: Error | null, cb: Done): void {
    // Handler error, timeout or client disconnect: a 502 if nothing was sent yet, else the stream is cut.
    this.fail(`response stream destroyed: ${error?.message ?? 'no error'}`);
    cb(error);
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

export type LambdaInvoker = FrontEnd;

export async function startLambdaInvoker(
  target: Handler | { handler: Handler },
  opts: LambdaInvokerOptions = {},
): Promise<LambdaInvoker> {
  const handler = typeof target === 'function' ? target : target.handler;
  if ((handler as unknown as Record<symbol, unknown>)[STREAMING] !== 'response') {
    throw new Error('handler is not wrapped in awslambda.streamifyResponse (call installLambdaGlobals first)');
  }
  const { timeoutMs = 900_000, host = '127.0.0.1', endGraceMs = 500 } = opts;

  const invoke = async (event: LambdaFunctionURLEvent, res: ServerResponse): Promise<void> => {
    const stream = new InProcessResponseStream(res);
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

  // The function's own Host and Origin checks are under test here: no loopback guard in front of them.
  return startFrontEnd(invoke, { host, port: 0, refuseForeignHosts: false, iamUserArn: opts.iamUserArn });
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
