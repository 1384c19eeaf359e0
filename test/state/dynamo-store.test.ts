import { createServer, type Server } from 'node:http';
import { buildGatewayDeps } from '../../lambda/app/bootstrap';
import { parseConfig } from '../../lambda/config/schema';
import { createLogger } from '../../lambda/observability/logger';
import { StoreUnavailableError } from '../../lambda/protocol/errors';
import { systemClock } from '../../lambda/scheduling/clock';
import { createDocumentClient } from '../../lambda/state/dynamo-client';
import { DynamoSessionStore } from '../../lambda/state/dynamo-store';
import { listen } from '../support/loopback';

/**
 * The DynamoDB store's bound on one operation (`operationTimeoutMs`, config `storeOperationTimeoutMs`),
 * against a loopback DynamoDB endpoint that takes requests and never answers (an outage, a paused
 * DynamoDB): the operation is abandoned at the bound — before the SDK's own per-attempt timeout
 * could retry it — and fails as StoreUnavailable (503 + Retry-After), never a hang.
 */
/** Well below the SDK's per attempt (2 s in AWS, the operation's 5 s locally), well above a loopback request's time to arrive. */
const BOUND_MS = 500;

describe('a DynamoDB that does not answer', () => {
  let requests = 0;
  let endpoint: { base: string; close(): Promise<void> };
  beforeAll(async () => {
    const server: Server = createServer((req) => {
      requests++;
      req.resume(); // read the request, answer nothing
    });
    endpoint = await listen(server);
  });
  afterAll(() => endpoint.close());

  it('fails one operation as StoreUnavailable at the configured bound, before the SDK tries again', async () => {
    const store = new DynamoSessionStore(createDocumentClient({ endpoint: endpoint.base }), 'silent', {
      clock: systemClock,
      operationTimeoutMs: BOUND_MS,
    });
    await store.loadSession('warm-up').catch(() => undefined); // the SDK's first use is slow on a loaded machine
    const before = requests;
    const failure = await store.loadSession('s-1').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure).toMatchObject({ kind: 'StoreUnavailable' });
    // The SDK's per-attempt timeout is longer (3 attempts): a second attempt would mean the bound was not applied.
    expect(requests - before).toBeLessThanOrEqual(1);
    expect(requests).toBeGreaterThan(0);
  });

  it('takes the bound from the configuration (storeOperationTimeoutMs) when the gateway is built', async () => {
    const deps = buildGatewayDeps(parseConfig({ storeOperationTimeoutMs: BOUND_MS, logLevel: 'SILENT' }), {
      documentClient: createDocumentClient({ endpoint: endpoint.base }),
      logger: createLogger('SILENT'),
    });
    await deps.store.loadSession('warm-up').catch(() => undefined);
    const before = requests;
    await expect(deps.store.loadSession('s-2')).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(requests - before).toBeLessThanOrEqual(1);
  });
});
