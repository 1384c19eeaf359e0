import { createServer, type IncomingHttpHeaders } from 'node:http';
import { forwardTo, listen } from './loopback';

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
      const forward = forwardTo(upstream, req, res);
      forward.end(raw);
    });
  });
  const started = await listen(server);
  return {
    url: `${started.base}/mcp`,
    seen,
    posts: (method) => seen.filter((r) => r.method === 'POST' && r.body?.method === method),
    close: started.close,
  };
}
