import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { DYNAMODB_ITEM_LIMIT_BYTES } from '../../lambda/protocol/errors';
import { type DynamoProcess, startDynamoProcess } from '../support/gateway-process';
import { type GatewayKind, type GatewayUnderTest, startGateway } from '../support/gateways';
import { forwardTo } from '../support/loopback';
import { initSession, type Json, post, readMessage, sseEvents } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * Every failure is told where DynamoDB is the fault: a DynamoDB that stops answering (dynalite
 * paused with SIGSTOP) gives 503 + Retry-After once the store's operation bound has passed, never a
 * hang; a failed claim is 503 and the answer can be sent again; what does not fit DynamoDB's 400 KB
 * item gets a non-retryable 413 naming the limit, never a 5xx — and what need not be stored (a
 * relayed answer) is not limited by it.
 */
const ALL = { elicitation: { form: {} } };
/** Short, so the paused-DynamoDB test does not wait 5 s (the default) per request. */
const STORE_OPERATION_TIMEOUT_MS = 1000;
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];

const echo = (id: string | number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'demo___echo', arguments: { text: String(id) } },
});

describe.each(kinds)('a paused DynamoDB, %s', (kind) => {
  let dynamo: DynamoProcess;
  let demo: Awaited<ReturnType<typeof startDemoTarget>>;
  let gateway: GatewayUnderTest;
  beforeAll(async () => {
    dynamo = await startDynamoProcess();
    demo = await startDemoTarget();
    gateway = await startGateway(
      kind,
      {
        targets: [{ name: 'demo', url: demo.url }],
        logLevel: 'SILENT',
        storeOperationTimeoutMs: STORE_OPERATION_TIMEOUT_MS,
      },
      dynamo.endpoint,
    );
  }, 90_000);
  afterAll(async () => {
    await gateway?.close();
    await demo?.close();
    await dynamo?.close();
  });

  it('answers 503 + Retry-After to every request while DynamoDB is stopped (never a hang), then serves again', async () => {
    const { headers } = await initSession(gateway.url);
    expect((await readMessage(await post(gateway.url, headers, echo('before')))).result).toBeDefined();
    dynamo.pause();
    const statuses: number[] = [];
    try {
      // A session's call and a new session's initialize, twice: each waits out the operation bound and is told so.
      for (let i = 0; i < 4; i++) {
        const res =
          i % 2 === 0
            ? await post(gateway.url, headers, echo(i))
            : await post(
                gateway.url,
                {},
                {
                  jsonrpc: '2.0',
                  id: i,
                  method: 'initialize',
                  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
                },
              );
        statuses.push(res.status);
        expect(res.headers.get('retry-after')).toBe('1');
        expect(await res.json()).toMatchObject({ id: i, error: { code: -32603, data: { retryable: true } } });
      }
    } finally {
      dynamo.resume();
    }
    expect(statuses).toEqual([503, 503, 503, 503]);
    // Back: the next request is served (the SDK's pooled connection may need one more attempt).
    const after = await readMessage(await post(gateway.url, headers, echo('after')));
    expect(after.result.content[0].text).toBe('echo: after');
  });
});

/** A DynamoDB endpoint in front of dynalite that drops the connection of the listed operations while `failing`. */
async function startOperationFailingProxy(operations: string[]) {
  const backend = await startEmbeddedDynamo();
  const url = new URL(backend.endpoint);
  const state = { failing: false, failed: 0 };
  const server: Server = createServer((req, res) => {
    const operation =
      String(req.headers['x-amz-target'] ?? '')
        .split('.')
        .pop() ?? '';
    if (state.failing && operations.includes(operation)) {
      state.failed++;
      req.socket.destroy();
      return;
    }
    const upstream = forwardTo(url, req, res, { verbatim: true });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await backend.close();
    },
  };
}

describe('a claim that fails in DynamoDB', () => {
  let dynamo: Awaited<ReturnType<typeof startOperationFailingProxy>>;
  let demo: Awaited<ReturnType<typeof startDemoTarget>>;
  let gateway: GatewayUnderTest;
  beforeAll(async () => {
    dynamo = await startOperationFailingProxy(['UpdateItem']);
    demo = await startDemoTarget();
    gateway = await startGateway(
      'local server',
      { targets: [{ name: 'demo', url: demo.url }], logLevel: 'SILENT' },
      dynamo.endpoint,
    );
  });
  afterAll(async () => {
    await gateway?.close();
    await demo?.close();
    await dynamo?.close();
  });

  it('is a 503 with Retry-After; the answer is still pending and the client’s retry completes the call', async () => {
    const { headers } = await initSession(gateway.url, { capabilities: ALL });
    const res = await post(gateway.url, headers, {
      jsonrpc: '2.0',
      id: 'claim',
      method: 'tools/call',
      params: { name: 'demo___use_aws', arguments: { command: 'claim' } },
    });
    const statuses: number[] = [];
    let final: Json | undefined;
    for await (const event of sseEvents(res)) {
      const message = event.message;
      if (message?.method === 'elicitation/create') {
        dynamo.state.failing = true;
        const answer = { jsonrpc: '2.0', id: message.id, result: { action: 'accept', content: { confirm: true } } };
        const first = await post(gateway.url, headers, answer);
        statuses.push(first.status);
        expect(first.headers.get('retry-after')).toBe('1');
        expect((await first.json()).error.data).toMatchObject({ type: 'ServiceUnavailable', retryable: true });
        dynamo.state.failing = false;
        const again = await post(gateway.url, headers, answer);
        statuses.push(again.status);
        await again.body?.cancel();
      } else if (message?.id === 'claim') {
        final = message;
        break;
      }
    }
    expect(dynamo.state.failed).toBeGreaterThan(0);
    expect(statuses).toEqual([503, 202]);
    expect(final?.result.content[0].text).toBe('executed: claim');
  }, 30_000);
});

describe.each(kinds)("DynamoDB's 400 KB item limit, %s", (kind) => {
  const gw = withGateway(
    { logLevel: 'SILENT', confirmTools: ['demo___confirm_action'] },
    { kind, targets: { demo: () => startDemoTarget() } },
  );

  it('refuses an initialize with 500 KB of clientInfo with 413 naming the limit, not retryable', async () => {
    const res = await post(
      gw.url,
      {},
      {
        jsonrpc: '2.0',
        id: 'big',
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: { experimental: { blob: { data: 'c'.repeat(250 * 1024) } } },
          clientInfo: { name: 'big', version: '1', description: 'x'.repeat(250 * 1024) },
        },
      },
    );
    expect(res.status).toBe(413);
    expect(res.headers.get('retry-after')).toBeNull();
    const body = await res.json();
    expect(body).toMatchObject({
      id: 'big',
      error: { code: -32602, data: { type: 'ItemTooLarge', limitBytes: DYNAMODB_ITEM_LIMIT_BYTES } },
    });
    expect(body.error.message).toMatch(/400 KB item limit/);
    expect(body.error.data.retryable).toBeUndefined();
  });

  it('delivers a 420 KB answer to a target’s elicitation: too large to keep for the holder, it is delivered directly, never stored', async () => {
    const { headers } = await initSession(gw.url, { capabilities: ALL });
    const res = await post(gw.url, headers, {
      jsonrpc: '2.0',
      id: 'large',
      method: 'tools/call',
      params: { name: 'demo___use_aws', arguments: { command: 'large' } },
    });
    let final: Json | undefined;
    const statuses: number[] = [];
    for await (const event of sseEvents(res)) {
      const message = event.message;
      if (message?.method === 'elicitation/create') {
        const answer = await post(gw.url, headers, {
          jsonrpc: '2.0',
          id: message.id,
          result: { action: 'accept', content: { confirm: true, note: 'n'.repeat(420 * 1024) } },
        });
        statuses.push(answer.status);
        await answer.body?.cancel();
      } else if (message?.id === 'large') {
        final = message;
        break;
      }
    }
    expect(statuses).toEqual([202]);
    expect(final?.result.content[0].text).toBe('executed: large');
  });

  it('refuses a 420 KB answer the gateway must keep (a confirmation) with 413; a smaller one is still taken', async () => {
    const { headers } = await initSession(gw.url, { capabilities: ALL });
    const res = await post(gw.url, headers, {
      jsonrpc: '2.0',
      id: 'confirm',
      method: 'tools/call',
      params: { name: 'demo___confirm_action', arguments: { action: 'deploy' } },
    });
    const refusals: Json[] = [];
    const statuses: number[] = [];
    let final: Json | undefined;
    for await (const event of sseEvents(res)) {
      const message = event.message;
      if (message?.method === 'elicitation/create' && message.id.startsWith('gw-') && refusals.length === 0) {
        const big = await post(gw.url, headers, {
          jsonrpc: '2.0',
          id: message.id,
          result: { action: 'accept', content: { confirm: true, note: 'n'.repeat(420 * 1024) } },
        });
        statuses.push(big.status);
        refusals.push(await big.json());
        const small = await post(gw.url, headers, {
          jsonrpc: '2.0',
          id: message.id,
          result: { action: 'accept', content: { confirm: true } },
        });
        statuses.push(small.status);
        await small.body?.cancel();
      } else if (message?.method === 'elicitation/create') {
        // The target's own confirmation, after the gateway's.
        const answer = await post(gw.url, headers, {
          jsonrpc: '2.0',
          id: message.id,
          result: { action: 'accept', content: { confirm: true } },
        });
        await answer.body?.cancel();
      } else if (message?.id === 'confirm') {
        final = message;
        break;
      }
    }
    expect(statuses).toEqual([413, 202]);
    expect(refusals[0]?.error).toMatchObject({ code: -32602, data: { type: 'ItemTooLarge' } });
    expect(refusals[0]?.error.message).toMatch(/400 KB item limit/);
    expect(final?.result.content[0].text).toBe('confirmed: deploy');
  });
});

describe('the per-session cap on pending requests (maxPendingRequestsPerSession)', () => {
  const gw = withGateway(
    { logLevel: 'SILENT', maxPendingRequestsPerSession: 1 },
    { targets: { demo: () => startDemoTarget() } },
  );

  it('refuses a target request beyond the cap (the target reports it), while the first keeps waiting and completes', async () => {
    const { headers } = await initSession(gw.url, { capabilities: ALL });
    const first = await post(gw.url, headers, {
      jsonrpc: '2.0',
      id: 'first',
      method: 'tools/call',
      params: { name: 'demo___use_aws', arguments: { command: 'first' } },
    });
    const events = sseEvents(first);
    const asked = (await events.next()).value?.message;
    expect(asked?.method).toBe('elicitation/create');
    // A second call of the same session asks too: refused at the target, which falls back (demo: an error result).
    const second = await readMessage(
      await post(gw.url, headers, {
        jsonrpc: '2.0',
        id: 'second',
        method: 'tools/call',
        params: { name: 'demo___use_aws', arguments: { command: 'second' } },
      }),
    );
    expect(second.result.isError).toBe(true);
    expect(second.result.content[0].text).toMatch(/Too many pending requests in this session/);
    const answer = await post(gw.url, headers, {
      jsonrpc: '2.0',
      id: asked?.id,
      result: { action: 'accept', content: { confirm: true } },
    });
    expect(answer.status).toBe(202);
    let final: Json | undefined;
    for (let next = await events.next(); !next.done; next = await events.next()) {
      if (next.value.message?.id === 'first') {
        final = next.value.message;
        break;
      }
    }
    await events.return(undefined);
    expect(final?.result.content[0].text).toBe('executed: first');
  });
});
