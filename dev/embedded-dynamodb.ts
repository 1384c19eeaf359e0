import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An in-memory DynamoDB API (dynalite) on a loopback port (default 0: a free one): the local default store. */
export async function startEmbeddedDynamo(port = 0): Promise<{ endpoint: string; close(): Promise<void> }> {
  // Loaded lazily: dynalite is a development dependency and never part of the Lambda bundle.
  const { default: dynalite } = await import('dynalite');
  const server: Server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  // Never closes an idle keep-alive connection: closing one as a client sends on it resets that request
  // (read ECONNRESET). The clients' sockets are the ones that go (at their process's end, or close()).
  server.keepAliveTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const answering = trackAnswers(server);
  const { port: listening } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${listening}`,
    // dynalite closes its database when its server closes: a request still inside it would then throw
    // "Database is closed" in this process. The requests it took are answered first.
    close: () => closeWhenAnswered(server, answering),
  };
}

/** The responses `server` is still writing, each settled when its response closes. */
export function trackAnswers(server: Server): Set<Promise<void>> {
  const answering = new Set<Promise<void>>();
  server.on('request', (_req, res) => {
    const answered = new Promise<void>((resolve) => res.on('close', () => resolve()));
    answering.add(answered);
    void answered.then(() => answering.delete(answered));
  });
  return answering;
}

/**
 * Closes `server` once every request it took (`trackAnswers`) is answered: new connections are refused
 * at once, idle ones closed, the rest closed after their answers. A watchdog, not a wait: a request
 * never answered is cut after `boundMs` (cutting it ends its wait), instead of holding the close up.
 */
export async function closeWhenAnswered(server: Server, answering: Set<Promise<void>>, boundMs = 2000): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const watchdog = setTimeout(() => server.closeAllConnections(), boundMs);
  // A request that arrived on a kept-alive connection meanwhile is waited for too.
  while (answering.size > 0) await Promise.all(answering);
  clearTimeout(watchdog);
  server.closeAllConnections();
  await closed;
}
