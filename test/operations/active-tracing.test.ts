import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from '../support/mcp-http';

/**
 * X-Ray active tracing with Powertools Tracer (`lambda/observability/active-tracing.ts`), against a real
 * UDP listener standing in for the X-Ray daemon Lambda runs: the environment is the one Lambda gives
 * an invocation with active tracing (task root, function name, `_X_AMZN_TRACE_ID`, daemon address).
 */

const LAMBDA_ENV = {
  LAMBDA_TASK_ROOT: '/var/task',
  AWS_LAMBDA_FUNCTION_NAME: 'mcp-gateway-test',
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
  _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
};
const saved: Record<string, string | undefined> = {};
let daemon: Socket;
let target: Server;
const datagrams: string[] = [];

beforeAll(async () => {
  daemon = createSocket('udp4');
  daemon.on('message', (message) => datagrams.push(message.toString('utf8')));
  await new Promise<void>((resolve) => daemon.bind(0, '127.0.0.1', resolve));
  target = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const env = { ...LAMBDA_ENV, AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.address().port}` };
  for (const [key, value] of Object.entries(env)) {
    saved[key] = process.env[key];
    process.env[key] = value;
  }
});

afterAll(async () => {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  daemon.close();
  await new Promise<void>((resolve) => target.close(() => resolve()));
});

/** The segment documents received (each datagram is a JSON header line, then the document). */
async function segments(count: number): Promise<Array<Record<string, any>>> {
  await eventually(() => expect(datagrams.length).toBeGreaterThanOrEqual(count));
  return datagrams.map((datagram) => JSON.parse(datagram.split('\n')[1] ?? '{}'));
}

test('a subsegment per request under the invocation, target calls nested, annotated with the W3C trace id', async () => {
  const { createActiveTracer } = await import('../../lambda/observability/active-tracing');
  const tracer = await createActiveTracer('mcp-gateway-test');
  const span = tracer.begin();
  expect(span).toBeDefined();
  const { port } = target.address() as AddressInfo;
  expect(await (await fetch(`http://127.0.0.1:${port}/mcp`)).text()).toBe('ok');
  span?.end({
    requestId: 'r-1',
    traceId: '0af7651916cd43dd8448eb211c80319c',
    httpMethod: 'POST',
    era: 'legacy',
    method: 'tools/call',
    target: 'demo',
    tool: 'echo',
    status: 200,
    rpcErrorCode: -32602,
    inputRounds: 0,
    durationMs: 3,
    outcome: 'complete',
  });
  const received = await segments(2);
  const request = received.find((segment) => segment.name === '## mcp');
  const call = received.find((segment) => segment.name === '127.0.0.1');
  expect(request).toMatchObject({
    type: 'subsegment',
    trace_id: '1-5759e988-bd862e3fe1be46a994272793',
    parent_id: '53995c3f42cd8ad8', // Lambda's function segment
    annotations: {
      w3c_trace_id: '0af7651916cd43dd8448eb211c80319c',
      mcp_method: 'tools/call',
      mcp_target: 'demo',
      mcp_tool: 'echo',
      mcp_era: 'legacy',
      http_status: 200,
      rpc_error_code: -32602,
    },
  });
  expect(call).toMatchObject({ parent_id: request?.id, namespace: 'remote', http: { response: { status: 200 } } });
});
