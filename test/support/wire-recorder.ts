import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One HTTP request as a target received it. */
export interface WireRequest {
  method: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (POSTs), else undefined. */
  body?: any; // test-side JSON access
}

export interface WireRecorder {
  url: string;
  seen: WireRequest[];
  /** The POSTed JSON-RPC requests of `method`. */
  posts(method: string): WireRequest[];
  close(): Promise<void>;
}

/**
 * A pass-through HTTP proxy in front of a target that records every request's headers and JSON body
 * (what the gateway really sent on the wire), then forwards it unchanged and streams the answer back.
 */
export async function startWireRecorder(targetUrl: string): Promise<WireRecorder> {
  const upstream = new URL(targetUrl);
  const seen: WireRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: unknown;
      try {
        body = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
      } catch {
        body = undefined;
      }
      seen.push({ method: req.method ?? 'GET', headers: { ...req.headers }, body });
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: upstream.pathname,
          headers: { ...req.headers, host: upstream.host },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      res.on('close', () => forward.destroy());
      forward.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    seen,
    posts: (method) => seen.filter((r) => r.method === 'POST' && r.body?.method === method),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
