import { systemClock } from '../../lambda/scheduling/clock';
// The wiring is loaded as in production: whatever it installs, building an error must still have no effect.
import '../../lambda/app/gateway';
import { createServer } from 'node:http';
import { errorResponse } from '../../lambda/http/errors';
import { jsonResponse } from '../../lambda/http/responses';
import { SseStream } from '../../lambda/http/sse';
import { configureMetrics, recordRelayedInput } from '../../lambda/observability/metrics';
import { currentRequest, type RequestContext, runInRequest } from '../../lambda/observability/request-context';
import { authoredErrorOf, GatewayError, rpcError, rpcErrorOf } from '../../lambda/protocol/errors';
import { TargetEndpoint } from '../../lambda/targets/endpoint';
import { LegacyTargetClient } from '../../lambda/targets/legacy-client';
import { listen } from '../support/loopback';

/**
 * The error model's contract with what observes it: an error body is a value. Building one
 * (`rpcError`, `rpcErrorOf`, `errorResponse`'s body) counts nothing and notes nothing; the
 * `GatewayErrors` metric and the access log's facts come from the places that send messages — to the
 * client (`jsonResponse`, the SSE writer) and to a target (the legacy client's `send`).
 */

type Emitted = { name: string; code?: string };

/** The EMF metrics written while `fn` runs, with metrics on as in Lambda. */
async function metricsOf(fn: () => unknown): Promise<Emitted[]> {
  configureMetrics({ enabled: true, namespace: 'Test' });
  const lines: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    await fn();
  } finally {
    spy.mockRestore();
    configureMetrics({});
  }
  return lines
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"_aws"'))
    .map((line) => JSON.parse(line))
    .map((emf) => ({ name: emf._aws.CloudWatchMetrics[0].Metrics[0].Name, code: emf.code }));
}

function newContext(): RequestContext {
  return {
    requestId: 'r-1',
    trace: { traceId: 'a'.repeat(32) } as RequestContext['trace'],
    startedAt: 0,
    facts: { inputRounds: 0 },
  };
}

/** Runs `fn` inside a fresh request context and returns that context's facts afterwards. */
async function factsOf(fn: () => unknown): Promise<RequestContext['facts']> {
  const context = newContext();
  await runInRequest(context, async () => {
    expect(currentRequest()).toBe(context);
    await fn();
  });
  return context.facts;
}

describe('building an error body', () => {
  it('emits no metric and leaves the request record untouched (rpcError, rpcErrorOf, an unknown thrown value)', async () => {
    let facts: RequestContext['facts'] | undefined;
    const metrics = await metricsOf(async () => {
      facts = await factsOf(() => {
        rpcError(1, new GatewayError('InvalidParams', 'Invalid params: x'));
        rpcErrorOf(2, 'Internal', 'Internal error');
        rpcError(3, new Error('boom'));
      });
    });
    expect(metrics).toEqual([]);
    expect(facts).toEqual({ inputRounds: 0 });
  });

  it('is plain JSON-RPC: what marks it as the gateway’s own shows in neither its JSON nor an equality check', () => {
    const body = rpcErrorOf(7, 'MethodNotFound', 'Method not found: x/y');
    expect(body).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found: x/y' } });
    expect(JSON.parse(JSON.stringify(body))).toEqual(body);
    expect(Object.keys(body.error)).toEqual(['code', 'message']);
  });

  it('stays the gateway’s own when its envelope is copied with another id, and a parsed copy is not', () => {
    const body = rpcErrorOf('gw-1', 'Internal', 'Internal error');
    expect(authoredErrorOf({ ...body, id: 'client-1' })).toEqual({ kind: 'Internal', code: -32603 });
    expect(authoredErrorOf(JSON.parse(JSON.stringify(body)))).toBeUndefined();
    // An answer the protocol expects (405 to GET /mcp where the stream is off) does not count.
    expect(authoredErrorOf(rpcErrorOf(null, 'NoStandaloneStream', 'Method not allowed'))).toBeUndefined();
  });
});

describe('sending a message to the client', () => {
  it('counts a gateway error once, when it is sent as JSON, and notes its code for the access log', async () => {
    const body = rpcErrorOf(1, 'MethodNotFound', 'Method not found: x/y');
    let facts: RequestContext['facts'] | undefined;
    const metrics = await metricsOf(async () => {
      facts = await factsOf(() => jsonResponse(200, body));
    });
    expect(metrics).toEqual([{ name: 'GatewayErrors', code: '-32601' }]);
    expect(facts).toMatchObject({ rpcErrorCode: -32601 });
  });

  it('counts a gateway error sent on an SSE stream, but not a target’s error relayed as it came', async () => {
    const own = rpcErrorOf(1, 'RequestTimeout', 'Request timed out');
    const targets = { jsonrpc: '2.0' as const, id: 2, error: { code: -32603, message: 'the target failed' } };
    const metrics = await metricsOf(async () => {
      const sse = new SseStream();
      sse.send(targets);
      sse.end(own);
    });
    expect(metrics).toEqual([{ name: 'GatewayErrors', code: '-32001' }]);
  });

  it('does not count the answers the error table marks expected (whole responses built by errorResponse)', async () => {
    const metrics = await metricsOf(() =>
      errorResponse(null, new GatewayError('NoStandaloneStream', 'Method not allowed')),
    );
    expect(metrics).toEqual([]);
  });

  it('counts the input requests the client is sent in the access log: 2025 server requests, 2026-07-28 round entries', async () => {
    const facts = await factsOf(() => {
      const sse = new SseStream();
      sse.send({ jsonrpc: '2.0', id: 'gw-1', method: 'elicitation/create', params: { message: 'ok?' } });
      sse.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } });
      sse.close();
      jsonResponse(200, {
        jsonrpc: '2.0',
        id: 3,
        result: {
          resultType: 'input_required',
          inputRequests: { a: { method: 'roots/list' }, b: { method: 'sampling/createMessage' } },
        },
      });
    });
    expect(facts.inputRounds).toBe(3);
  });

  it('the RelayedInputRequests metric helper only counts its metric: the access log is not its business', async () => {
    let facts: RequestContext['facts'] | undefined;
    const metrics = await metricsOf(async () => {
      facts = await factsOf(() => recordRelayedInput('elicitation/create'));
    });
    expect(metrics).toEqual([{ name: 'RelayedInputRequests', code: undefined }]);
    expect(facts).toEqual({ inputRounds: 0 });
  });
});

describe('sending a message to a target', () => {
  /** A loopback target that takes every message with 202 and keeps its body. */
  let target: { url: string; bodies: unknown[]; close(): Promise<void> };
  beforeAll(async () => {
    const bodies: unknown[] = [];
    const server = createServer((req, res) => {
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => {
        text += chunk;
      });
      req.on('end', () => {
        bodies.push(JSON.parse(text));
        res.writeHead(202).end();
      });
    });
    const { base, close } = await listen(server);
    target = { url: `${base}/mcp`, bodies, close };
  });
  afterAll(() => target.close());

  function legacyClient(): LegacyTargetClient {
    const config = { name: 'docs', url: target.url } as ConstructorParameters<typeof TargetEndpoint>[0];
    return new LegacyTargetClient(new TargetEndpoint(config, systemClock), { name: 'gw', version: '0' });
  }
  // A message to a target also times it (TargetLatency): only the error count is the point here.
  const errorsIn = (metrics: Emitted[]) => metrics.filter((metric) => metric.name === 'GatewayErrors');
  const session = { targetSessionId: 'ts-1', protocolVersion: '2025-11-25' };

  it('counts the gateway’s refusal of a target’s request (sent to the target, not the client) once', async () => {
    const refusal = rpcErrorOf('t-1', 'Internal', 'Gateway could not relay the request; retry later');
    const metrics = await metricsOf(() => legacyClient().send(session, refusal));
    expect(target.bodies.at(-1)).toEqual(refusal);
    expect(errorsIn(metrics)).toEqual([{ name: 'GatewayErrors', code: '-32603' }]);
  });

  it('counts nothing for a client’s answer or a notification passed on', async () => {
    const metrics = await metricsOf(async () => {
      await legacyClient().send(session, { jsonrpc: '2.0', id: 't-2', error: { code: -1, message: 'no' } });
      await legacyClient().send(session, { jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    });
    expect(errorsIn(metrics)).toEqual([]);
  });
});
