import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listen } from './loopback';

/**
 * A loopback HTTP target answering its n-th request with the n-th scripted step (the last step
 * repeats), recording what it was sent: for focused tests of how the gateway's target side reacts
 * to what a target does (status codes, SSE streams it ends or cuts, connections it drops).
 */

export type Step = (req: IncomingMessage, res: ServerResponse) => void;

export interface SeenRequest {
  method: string;
  /** The JSON-RPC method of a POSTed message, if any. */
  rpcMethod?: string;
  lastEventId?: string;
  sessionId?: string;
  /** Milliseconds since the previous response ended (or since the target started). */
  gapMs: number;
}

export interface ScriptedTarget {
  url: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

/** Answers with a complete SSE body. */
export function sse(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(body);
}

/** Opens an SSE stream and keeps it open (what a target's idle GET stream looks like). */
export function openSse(res: ServerResponse, first = ': open\n\n'): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(first);
}

/** Drops the connection without any response (a crash, a reset). */
export function drop(req: IncomingMessage): void {
  req.socket.destroy();
}

export async function scriptedTarget(steps: Step[]): Promise<ScriptedTarget> {
  const seen: SeenRequest[] = [];
  let lastEnd = performance.now();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      let rpcMethod: string | undefined;
      try {
        rpcMethod = (JSON.parse(Buffer.concat(chunks).toString()) as { method?: string }).method;
      } catch {
        // not JSON (a GET): no method
      }
      seen.push({
        method: req.method ?? '',
        rpcMethod,
        lastEventId: req.headers['last-event-id'] as string | undefined,
        sessionId: req.headers['mcp-session-id'] as string | undefined,
        gapMs: performance.now() - lastEnd,
      });
      res.once('close', () => {
        lastEnd = performance.now();
      });
      const step = steps[Math.min(seen.length - 1, steps.length - 1)];
      step?.(req, res);
    });
  });
  const { base, close } = await listen(server);
  return { url: `${base}/mcp`, seen, close };
}
