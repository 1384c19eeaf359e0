import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';

/** The content type `awslambda.HttpResponseStream.from` sets: the body starts with a JSON prelude. */
export const PRELUDE_CONTENT_TYPE = 'application/vnd.awslambda.http-integration-response';
const DELIMITER = Buffer.alloc(8); // 8 NUL bytes end the prelude

interface Prelude {
  statusCode?: number;
  headers?: Record<string, string>;
  cookies?: string[];
}

type Done = (error?: Error | null) => void;

/**
 * The function URL's side of a streamed response: takes the bytes the runtime POSTs to
 * `/invocation/{id}/response` and writes them to the client as they come. With the prelude content
 * type, status, headers and cookies come from the JSON before the 8 NUL bytes; otherwise the
 * response is a 200 with the runtime's content type.
 *
 * A client that went away is not the function's business (as on Lambda): the bytes are still read
 * from the runtime and dropped, so the invocation runs on unaware.
 */
export class FunctionUrlSink extends Writable {
  private headersDone = false;
  private pending: Buffer[] = []; // bytes seen before the delimiter

  /**
   * `contentType` is the one the runtime declared for the response; `onFailure` hears why a response
   * became a 502 or was cut (the tests' in-process invoker warns with it).
   */
  constructor(
    protected readonly res: ServerResponse,
    protected contentType: string,
    private readonly onFailure: (reason: string) => void = () => undefined,
  ) {
    super();
  }

  /** Whether status and headers have reached the client (afterwards a failure can only cut the stream). */
  get started(): boolean {
    return this.headersDone;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, cb: Done): void {
    if (!this.headersDone && !this.contentType.startsWith(PRELUDE_CONTENT_TYPE)) {
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
    const prelude = parsePrelude(buffered.subarray(0, at));
    if (!prelude) {
      this.fail('the prelude is not JSON');
      cb();
      return;
    }
    const { statusCode = 200, headers = {}, cookies = [] } = prelude;
    this.sendHead(statusCode, cookies.length > 0 ? { ...headers, 'set-cookie': cookies } : headers);
    this.forward(buffered.subarray(at + DELIMITER.length), cb);
  }

  override _final(cb: Done): void {
    if (!this.headersDone) {
      // https://github.com/aws/aws-lambda-nodejs-runtime-interface-client/issues/97: end(data) without a write() sends the data without the prelude (502); a bare end()
      // after HttpResponseStream.from sends nothing (200 without the prelude's status and headers).
      if (this.pending.length > 0) {
        this.fail('a prelude without its delimiter (end(data) without a prior write())');
        cb();
        return;
      }
      this.sendHead(200, this.contentType.startsWith(PRELUDE_CONTENT_TYPE) ? {} : { 'content-type': this.contentType });
    }
    if (this.res.destroyed || this.res.writableEnded) cb();
    else this.res.end(() => cb());
  }

  /** The invocation failed or timed out: a 502 if nothing was sent yet, else the stream is cut. */
  fail(reason = 'the invocation failed'): void {
    if (this.res.destroyed || this.res.writableEnded) return;
    this.onFailure(reason);
    if (this.headersDone || this.res.headersSent) {
      this.res.destroy();
      return;
    }
    this.headersDone = true;
    this.res.writeHead(502, { 'content-type': 'application/json' }).end('{"Message":"Internal Server Error"}');
  }

  private sendHead(status: number, headers: Record<string, string | string[]>): void {
    this.headersDone = true;
    if (this.res.destroyed) return;
    this.res.writeHead(status, headers);
    this.res.flushHeaders(); // the client sees the headers before the first event, as on AWS
  }

  private forward(chunk: Buffer, cb: Done): void {
    if (this.res.destroyed || this.res.writableEnded || chunk.length === 0 || this.res.write(chunk)) {
      cb();
      return;
    }
    // Backpressure from the client; a client that leaves meanwhile releases it too.
    const release = (): void => {
      this.res.off('drain', release);
      this.res.off('close', release);
      cb();
    };
    this.res.on('drain', release);
    this.res.on('close', release);
  }
}

function parsePrelude(bytes: Buffer): Prelude | undefined {
  try {
    return JSON.parse(bytes.toString()) as Prelude;
  } catch {
    return undefined; // not JSON: the function URL answers 502
  }
}
