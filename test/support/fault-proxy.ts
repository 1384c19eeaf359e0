import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * An HTTP proxy on loopback in front of a real target, failing on purpose: each POST (its JSON body
 * parsed) is passed on, answered with an HTTP status, or its connection reset — before or after it
 * was forwarded to the target. It can also behave like a NAT or load balancer that forgot an idle
 * connection: after `forgetIdleConnections()`, a request arriving on a connection that was idle then
 * gets a reset (the client wrote it on a pooled keep-alive socket that is dead), while the proxy still
 * advertises a long keep-alive so clients keep pooling. Responses (SSE included) are streamed as they arrive.
 */
export type FaultAction =
  | 'pass'
  /** Reset the connection without forwarding: the target never saw the request. */
  | 'reset'
  /** Forward, wait for the target's answer, then reset the client's connection (did it arrive? yes). */
  | 'forward-then-reset'
  | { status: number };

export interface ProxiedRequest {
  method: string;
  /** The parsed JSON-RPC body of a POST, if any. */
  body?: Record<string, unknown>;
  headers: IncomingMessage['headers'];
}

export interface FaultProxy {
  url: string;
  /** Decides what happens to each request (default: pass everything). */
  rule: (request: ProxiedRequest) => FaultAction;
  /** The connections idle now are dead from now on: the next request on one of them gets a reset. */
  forgetIdleConnections(): void;
  stats: {
    /** JSON-RPC responses POSTed through the proxy (answers to the target's requests), with what happened. */
    answers: Array<{ id: unknown; action: string }>;
    staleResets: number;
    forwarded: number;
  };
  close(): Promise<void>;
}

/** A JSON-RPC response (an answer to a target's request), as opposed to a request or notification. */
export const isAnswer = (body: Record<string, unknown> | undefined): boolean =>
  body !== undefined && !('method' in body) && ('result' in body || 'error' in body);

/** Fails the first `count` answers with `action`, passes everything else. */
export function failFirstAnswers(count: number, action: FaultAction): (request: ProxiedRequest) => FaultAction {
  let failed = 0;
  return (request) => {
    if (!isAnswer(request.body) || failed >= count) return 'pass';
    failed++;
    return action;
  };
}

export async function startFaultProxy(targetUrl: string): Promise<FaultProxy> {
  const target = new URL(targetUrl);
  /** Connections whose last response has finished and that carry no request now (pooled by the client). */
  const idle = new WeakSet<Socket>();
  const forgotten = new WeakSet<Socket>();
  const sockets = new Set<Socket>();
  const proxy: FaultProxy = {
    url: '',
    rule: () => 'pass',
    forgetIdleConnections: () => {
      for (const socket of sockets) if (idle.has(socket)) forgotten.add(socket);
    },
    stats: { answers: [], staleResets: 0, forwarded: 0 },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const server: Server = createServer((req, res) => {
    const socket = req.socket;
    idle.delete(socket);
    if (forgotten.has(socket)) {
      proxy.stats.staleResets++;
      socket.resetAndDestroy();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: Record<string, unknown> | undefined;
      try {
        body = raw.length ? (JSON.parse(raw.toString('utf8')) as Record<string, unknown>) : undefined;
      } catch {
        body = undefined;
      }
      const action = proxy.rule({ method: req.method ?? 'GET', body, headers: req.headers });
      if (isAnswer(body)) {
        proxy.stats.answers.push({
          id: body?.id,
          action: typeof action === 'string' ? action : `HTTP ${action.status}`,
        });
      }
      if (action === 'reset') {
        socket.resetAndDestroy();
        return;
      }
      if (typeof action === 'object') {
        res.writeHead(action.status, { 'content-type': 'text/plain' }).end('fault proxy');
        markIdle(res);
        return;
      }
      forward(req, res, raw, action === 'forward-then-reset');
    });
  });
  // The proxy never closes idle connections itself and advertises a long keep-alive: clients pool.
  server.keepAliveTimeout = 120_000;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  const markIdle = (res: ServerResponse) => {
    const socket = res.socket; // detached from the response once it finished
    if (socket) res.on('finish', () => idle.add(socket));
  };

  function forward(req: IncomingMessage, res: ServerResponse, body: Buffer, resetAfter: boolean): void {
    proxy.stats.forwarded++;
    const headers = { ...req.headers, host: target.host, 'content-length': String(body.length) };
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
      (answer) => {
        if (resetAfter) {
          answer.resume();
          answer.on('end', () => req.socket.resetAndDestroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, { ...answer.headers, 'keep-alive': 'timeout=120' });
        res.flushHeaders();
        answer.pipe(res);
        markIdle(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    upstream.end(body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${target.pathname}`;
  return proxy;
}
