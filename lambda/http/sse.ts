import { noteClientMessage } from '../observability/request-context';
import { stringifyMessage } from '../protocol/request-id';
import type { JSONRPCMessage } from '../protocol/types';

/**
 * The one SSE writer: a response body written event by event. Writes after close (or after the
 * client went away) are dropped, so a relay never throws because its reader left.
 */
export class SseStream {
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private readonly encoder = new TextEncoder();
  private keepAlive?: NodeJS.Timeout;
  closed = false;
  readonly body: ReadableStream<Uint8Array>;
  /** Called once when the reader cancels the body (the client went away). */
  onCancel?: () => void;

  constructor() {
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.controller = controller;
      },
      cancel: () => {
        this.stop();
        this.onCancel?.();
      },
    });
  }

  response(headers: Record<string, string> = {}, status = 200): Response {
    return new Response(this.body, {
      status,
      headers: {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
        ...headers,
      },
    });
  }

  send(message: JSONRPCMessage): void {
    noteClientMessage(message); // an error's code goes to the request's access log line
    this.write(`event: message\ndata: ${stringifyMessage(message)}\n\n`);
  }

  comment(text = 'keep-alive'): void {
    this.write(`: ${text}\n\n`);
  }

  /** Raw SSE text (already framed), e.g. another stream's bytes piped through. */
  write(text: string): void {
    if (this.closed) return;
    try {
      this.controller.enqueue(this.encoder.encode(text));
    } catch {
      this.stop();
    }
  }

  /** SSE comments keep proxies and clients from timing out an idle stream while a person answers. */
  startKeepAlive(intervalMs: number): void {
    if (this.keepAlive) return;
    this.keepAlive = setInterval(() => this.comment(), intervalMs);
    this.keepAlive.unref();
  }

  close(): void {
    if (this.closed) return;
    this.stop();
    try {
      this.controller.close();
    } catch {
      // already cancelled by the reader
    }
  }

  private stop(): void {
    this.closed = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
  }
}
