import { type Json, post, type SseEvent, sseEvents } from './mcp-http';

/**
 * A raw `subscriptions/listen` (2026-07-28) client: the request as a client sends it, and its answer
 * read the way a client reads it — a JSON body (a refusal), or an SSE stream whose messages are read
 * one by one (the acknowledgement first).
 */

const MODERN = '2026-07-28';

export function listenRequest(id: string, notifications: Json): Json {
  return {
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: {
      notifications,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientInfo': { name: 'listen-test', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  };
}

export interface OpenedListen {
  status: number;
  /** `application/json` (refused before any stream) or `text/event-stream`. */
  contentType: string;
  /** The JSON body, or the stream's first message (the acknowledgement). */
  first: Json | undefined;
  /** The stream's next message; undefined once it ended (or for a JSON body). */
  next(): Promise<Json | undefined>;
  /** Closes the stream (the client stops listening). */
  close(): void;
}

/** Sends a listen and reads its first message; `signal` bounds the whole exchange. */
export async function openListen(
  url: string,
  id: string,
  notifications: Json,
  signal?: AbortSignal,
): Promise<OpenedListen> {
  const stop = new AbortController();
  const res = await post(
    url,
    { 'mcp-protocol-version': MODERN, 'mcp-method': 'subscriptions/listen' },
    listenRequest(id, notifications),
    signal ? AbortSignal.any([signal, stop.signal]) : stop.signal,
  );
  const contentType = res.headers.get('content-type') ?? '';
  const close = () => stop.abort();
  if (!contentType.includes('text/event-stream')) {
    const text = await res.text();
    return {
      status: res.status,
      contentType,
      first: text ? JSON.parse(text) : undefined,
      next: async () => undefined,
      close,
    };
  }
  const events = sseEvents(res)[Symbol.asyncIterator]();
  const next = async (): Promise<Json | undefined> => {
    for (;;) {
      const { done, value } = await events.next();
      if (done) return undefined;
      if ((value as SseEvent).message) return (value as SseEvent).message;
    }
  };
  return { status: res.status, contentType, first: await next(), next, close };
}
