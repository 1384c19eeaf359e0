import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Serves a web-standard `fetch` handler (what the v2 SDK's entry points are) on node:http at
 * 127.0.0.1, port 0: the few lines every v2 server on plain node:http needs (the SDK leaves this to
 * `@modelcontextprotocol/node`, which this project does not install). A client that goes away aborts
 * the `Request`'s signal, which is how the v2 SDK learns that a 2026-07-28 request was cancelled.
 */
export async function serveFetch(
  fetchHandler: (request: Request) => Promise<Response>,
  observe?: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; close(): Promise<void> }> {
  const http = createServer((req, res) => {
    observe?.(req, res);
    serve(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const response = await fetchHandler(
      new Request(`http://${req.headers.host}${req.url}`, {
        method: req.method,
        headers,
        body: hasBody ? Buffer.concat(chunks) : undefined,
        signal: abort.signal,
      }),
    );
    const out: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      out[name] = value;
    });
    res.writeHead(response.status, out);
    if (!response.body) return void res.end();
    const reader = response.body.getReader();
    abort.signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined), { once: true });
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
    res.end();
  }

  http.requestTimeout = 0;
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}

/** The sessions whose GET request became a live SSE stream (answered 200, not ended). */
export function liveStreamSessions(responses: Map<ServerResponse, string>): string[] {
  return [...responses].filter(([r]) => r.headersSent && r.statusCode === 200 && !r.writableEnded).map(([, id]) => id);
}
