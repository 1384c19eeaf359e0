import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An in-memory DynamoDB API (dynalite) on a free loopback port: the local default store. */
export async function startEmbeddedDynamo(): Promise<{ endpoint: string; close(): Promise<void> }> {
  // Loaded lazily: dynalite is a development dependency and never part of the Lambda bundle.
  const { default: dynalite } = await import('dynalite');
  const server: Server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
