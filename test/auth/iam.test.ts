import { startDemoTarget } from '../../examples/targets/demo-target';
import { createDocumentClient, ensureTable } from '../../lambda/state/dynamo-client';
import { installLambdaGlobals, type LambdaInvoker, startLambdaInvoker } from '../support/lambda-invoker';
import { initSession, post, readMessage, sessionItems } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * auth.type "iam": the function URL's AWS_IAM auth has verified the SigV4 signature before the
 * handler runs; the caller's IAM ARN from the request context is the principal. Without that
 * context (a URL misconfigured as NONE, or the local server) every request is refused.
 */

jest.setTimeout(30_000);

const ALICE = 'arn:aws:iam::123456789012:user/alice';
const BOB = 'arn:aws:iam::123456789012:role/bob';

const invokers: LambdaInvoker[] = [];
// Declared before the fixture: the invokers stop before the fixture closes the target and DynamoDB.
afterAll(async () => {
  for (const invoker of invokers) await invoker.close();
});

// DynamoDB and the demo target; the Lambda handler is started below, behind one invoker per caller.
const gw = withGateway(
  { auth: { type: 'iam' }, logLevel: 'SILENT' },
  { targets: { demo: () => startDemoTarget() }, instances: 0 },
);

beforeAll(async () => {
  const dynamo = gw.dynamo;
  await ensureTable(createDocumentClient({ endpoint: dynamo.endpoint }), 'mcp-gateway');
  installLambdaGlobals();
  process.env.GATEWAY_CONFIG = JSON.stringify(gw.config);
  process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
  let handlerModule!: typeof import('../../lambda/handler');
  jest.isolateModules(() => {
    handlerModule = require('../../lambda/handler');
  });
  // One execution environment, three callers: two signed (as the function URL reports them), one not.
  for (const iamUserArn of [ALICE, BOB, undefined])
    invokers.push(await startLambdaInvoker(handlerModule, { iamUserArn }));
});
const mcpUrl = (invoker: LambdaInvoker) => `${invoker.url.replace(/\/$/, '')}/mcp`;

test('the IAM caller owns its session; another IAM caller presenting it gets 404', async () => {
  const [alice, bob] = invokers.map(mcpUrl);
  const session = await initSession(alice);
  const items = await sessionItems(gw.dynamo.endpoint, session.sessionId);
  expect(items.find((item) => item.sk === 'SESSION')!.principal).toBe(ALICE);
  const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
  expect((await post(alice, session.headers, list)).status).toBe(200);
  const foreign = await post(bob, session.headers, list);
  expect(foreign.status).toBe(404);
  await foreign.body?.cancel();
});

test('a request without the IAM context → 401', async () => {
  const res = await post(
    mcpUrl(invokers[2]),
    {},
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    },
  );
  expect(res.status).toBe(401);
  expect(res.headers.get('www-authenticate')).toBe('AWS4-HMAC-SHA256');
  expect((await readMessage(res)).error.message).toMatch(/SigV4/);
});

test('the local server has no IAM context: every request → 401, no protected resource metadata', async () => {
  const gateway = await gw.start({ targets: [] });
  try {
    const res = await post(gateway.url, {}, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(res.status).toBe(401);
    await res.body?.cancel();
    expect((await fetch(`${new URL(gateway.url).origin}/.well-known/oauth-protected-resource`)).status).toBe(404);
  } finally {
    await gateway.close();
  }
});
