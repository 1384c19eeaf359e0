import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A DynamoDB endpoint that is there and serves nothing: every request is answered 503 Service
 * Unavailable (DynamoDB's own retryable refusal), so every operation fails as against an unreachable
 * table, quickly. For the paths that must never touch DynamoDB (2026-07-28 requests). A closed port
 * fails the same way, but the AWS SDK arms a one-second connection timer per request that only an
 * established connection clears (@smithy/node-http-handler): against a closed port those timers
 * outlive the test file and keep a jest worker from exiting in time ("a worker process has failed to
 * exit gracefully"). One per test process, never keeping it alive.
 */
let server: Promise<string> | undefined;

export function unreachableDynamo(): Promise<string> {
  server ??= new Promise<string>((resolve, reject) => {
    const listening: Server = createServer((req, res) => {
      req.resume();
      res
        .writeHead(503, { 'content-type': 'application/x-amz-json-1.0', connection: 'close' })
        .end(
          '{"__type":"com.amazonaws.dynamodb.v20120810#ServiceUnavailableException","message":"no DynamoDB in this test"}',
        );
    });
    listening.once('error', reject);
    listening.listen(0, '127.0.0.1', () => {
      listening.unref();
      resolve(`http://127.0.0.1:${(listening.address() as AddressInfo).port}`);
    });
  });
  return server;
}
