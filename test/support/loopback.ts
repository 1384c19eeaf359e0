import {
  type ClientRequest,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { type AddressInfo, createServer } from 'node:net';

/** Small pieces the loopback stand-ins (targets, proxies, issuers) share. */

/** Listens on a free loopback port; `close` also ends idle keep-alive sockets, or jest never exits. */
export async function listen(server: Server): Promise<{ base: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Forwards `req` to `upstream` and streams the answer back to `res`; the caller sends the body
 * (`end(bytes)` or `req.pipe(...)`) on the request this returns. By default to `upstream`'s path
 * with its Host; `verbatim` keeps the request's own path and headers (a signed AWS request).
 */
export function forwardTo(
  upstream: URL,
  req: IncomingMessage,
  res: ServerResponse,
  options: { verbatim?: boolean } = {},
): ClientRequest {
  const forward = httpRequest(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: options.verbatim ? req.url : `${upstream.pathname}${upstream.search}`,
      headers: options.verbatim ? req.headers : { ...req.headers, host: upstream.host },
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      // An answer cut mid-way (its server died) is cut for the client too, as a real proxy does: pipe alone would leave it hanging.
      answer.on('close', () => {
        if (!answer.complete) res.destroy();
      });
    },
  );
  forward.on('error', () => res.destroy());
  res.on('close', () => forward.destroy());
  return forward;
}

/** A port free on loopback now (for a process that takes its port as a setting, not port 0). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Settles when `res` can take more (drain) or is gone (close); both listeners go, so a long flood does not pile them up. */
export function drained(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/** A request's whole body as JSON (undefined when empty). */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw ? JSON.parse(raw) : undefined;
}
