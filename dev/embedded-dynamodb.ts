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
  const { port: listening } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${listening}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
