import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeWhenAnswered, startEmbeddedDynamo, trackAnswers } from '../../dev/embedded-dynamodb';
import { forwardTo } from './loopback';

/**
 * dynalite on loopback behind a small counting proxy: tests read how many DynamoDB requests of
 * each operation the gateway made (an operation the SDK retried counts once), and can make the endpoint fail ("down", "throttle").
 */
export interface CountedDynamo {
  endpoint: string;
  counts: Map<string, number>;
  /** Each request since the last reset: its operation and JSON body (to tell whose request it was). */
  requests: Array<{ operation: string; body: string }>;
  total(): number;
  /** Requests forwarded to DynamoDB whose answer has not gone out yet. */
  inFlight(): number;
  reset(): void;
  mode: 'ok' | 'down' | 'throttle';
  close(): Promise<void>;
}

/** `backendEndpoint`: count in front of an existing DynamoDB API instead of a new embedded one. */
export async function startCountedDynamo(backendEndpoint?: string): Promise<CountedDynamo> {
  const backend = backendEndpoint
    ? { endpoint: backendEndpoint, close: async () => undefined }
    : await startEmbeddedDynamo();
  const backendUrl = new URL(backend.endpoint);
  const counts = new Map<string, number>();
  const requests: CountedDynamo['requests'] = [];
  const state: CountedDynamo = {
    endpoint: '',
    counts,
    requests,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    inFlight: () => inFlight.size,
    reset: () => {
      counts.clear();
      requests.length = 0;
    },
    mode: 'ok',
    close: async () => {
      // New requests are refused from here; the ones already forwarded get their answer first (the
      // backend, too, answers what it took before its database closes).
      await closeWhenAnswered(proxy, inFlight);
      await backend.close();
    },
  };
  const proxy: Server = createServer((req, res) => {
    const operation =
      String(req.headers['x-amz-target'] ?? '')
        .split('.')
        .pop() ?? 'unknown';
    // The SDK sends its retries of one operation (after a timeout on a loaded machine, say) with
    // `amz-sdk-request: attempt=N`: the gateway made one request, counted once.
    const attempt = Number(/attempt=(\d+)/.exec(String(req.headers['amz-sdk-request'] ?? ''))?.[1] ?? 1);
    if (attempt === 1) counts.set(operation, (counts.get(operation) ?? 0) + 1);
    if (state.mode === 'down') {
      res.destroy();
      return;
    }
    if (state.mode === 'throttle') {
      req.resume();
      res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
      res.end(
        JSON.stringify({
          __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
          message: 'throttled',
        }),
      );
      return;
    }
    const upstream = forwardTo(backendUrl, req, res, { verbatim: true });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (attempt === 1) requests.push({ operation, body: Buffer.concat(chunks).toString('utf8') });
    });
    req.pipe(upstream);
  });
  /** Each request's answer, until it is out. */
  const inFlight = trackAnswers(proxy);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()));
  state.endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  return state;
}
