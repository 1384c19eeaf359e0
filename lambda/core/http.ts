import type { JSONRPCErrorResponse, JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { recordError } from '../observability/metrics';

/** Small builders for the responses every path sends. Protocol decisions live in the callers. */

export const MCP_HEADERS = {
  sessionId: 'mcp-session-id',
  protocolVersion: 'mcp-protocol-version',
  method: 'mcp-method',
  name: 'mcp-name',
} as const;

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** A JSON-RPC error the gateway authors (counted by code); `id` is null when the request's id could not be read (JSON-RPC 2.0 §5). */
export function jsonRpcError(
  id: RequestId | null,
  code: number,
  message: string,
  data?: unknown,
): JSONRPCErrorResponse {
  recordError(code);
  // The SDK type models an absent id, not JSON-RPC's null: the cast keeps the wire format exact.
  return {
    jsonrpc: '2.0',
    id: id as RequestId,
    error: data === undefined ? { code, message } : { code, message, data },
  };
}

export function errorResponse(
  status: number,
  id: RequestId | null,
  code: number,
  message: string,
  data?: unknown,
  headers: Record<string, string> = {},
): Response {
  return jsonResponse(status, jsonRpcError(id, code, message, data), headers);
}

export function accepted(headers: Record<string, string> = {}): Response {
  return new Response(null, { status: 202, headers });
}

export function methodNotAllowed(allow: string): Response {
  return errorResponse(405, null, -32000, 'Method not allowed', undefined, { allow });
}

/** How the client wants its answer: `Accept` MUST list both, but the reference page's sample sends only SSE. */
export interface AcceptPreference {
  json: boolean;
  sse: boolean;
}

export function parseAccept(header: string | null): AcceptPreference {
  if (!header) return { json: true, sse: true };
  const types = header.split(',').map((part) => part.split(';')[0].trim().toLowerCase());
  const any = types.includes('*/*');
  const json = any || types.includes('application/json') || types.includes('application/*');
  const sse = any || types.includes('text/event-stream') || types.includes('text/*');
  return { json, sse };
}

/** A single JSON-RPC message as JSON, or as one SSE event when the client accepts only SSE. */
export function messageResponse(
  message: JSONRPCMessage,
  accept: AcceptPreference,
  headers: Record<string, string> = {},
): Response {
  if (accept.json || !accept.sse) return jsonResponse(200, message, headers);
  const stream = new SseStream();
  stream.send(message);
  stream.close();
  return stream.response(headers);
}

/**
 * An SSE response body written event by event. Writes after close (or after the client went away)
 * are dropped, so a relay never throws because its reader left.
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

  response(headers: Record<string, string> = {}): Response {
    return new Response(this.body, {
      status: 200,
      headers: {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
        ...headers,
      },
    });
  }

  send(message: JSONRPCMessage): void {
    this.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  comment(text = 'keep-alive'): void {
    this.write(`: ${text}\n\n`);
  }

  /** SSE comments keep proxies and clients from timing out an idle stream while a person answers. */
  startKeepAlive(intervalMs: number): void {
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

  private write(text: string): void {
    if (this.closed) return;
    try {
      this.controller.enqueue(this.encoder.encode(text));
    } catch {
      this.stop();
    }
  }
}

/** Reads a request body up to `limit` bytes; undefined when it is larger. */
export async function readBodyLimited(request: Request, limit: number): Promise<string | undefined> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit) return undefined;
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
