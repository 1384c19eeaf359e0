/**
 * dynalite in its own process (as DynamoDB is out of process in AWS): prints `ready <endpoint>`.
 * Counts requests by operation (and the response bytes of each) where they arrive, so counting adds
 * no hop: a `counts` line on stdin is answered with `counts <json>`.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';

const counts: Record<string, { requests: number; responseBytes: number }> = {};

void (async () => {
  const { default: dynalite } = await import('dynalite');
  const server: Server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const operation =
      String(req.headers['x-amz-target'] ?? '')
        .split('.')
        .pop() || 'unknown';
    const entry = counts[operation] ?? { requests: 0, responseBytes: 0 };
    counts[operation] = entry;
    entry.requests++;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.end = ((...args: unknown[]) => {
      const [chunk] = args;
      if (typeof chunk === 'string' || chunk instanceof Uint8Array) entry.responseBytes += Buffer.byteLength(chunk);
      return end(...args);
    }) as ServerResponse['end'];
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  console.log(`ready http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.trim() === 'counts') console.log(`counts ${JSON.stringify(counts)}`);
  });
  process.on('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
})();
