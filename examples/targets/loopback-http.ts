import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** node:http basics both demo hosts share: listening, the Host names they answer, small bodies. */

/** Listens and returns the port; a busy port rejects with Node's EADDRINUSE error (its `port` says which). */
export async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

export function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** Host header values a loopback server answers (DNS-rebinding defence): the loopback names with our port. */
export function loopbackHostHeaders(host: string, port: number): Set<string> {
  return new Set(
    [`${hostForUrl(host)}:${port}`, `127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].map((h) =>
      h.toLowerCase(),
    ),
  );
}

/** Closes the server and its open connections (long SSE streams included). */
export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
