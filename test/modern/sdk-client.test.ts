import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { clickOnConsentPage } from '../support/consent-page';
import { withModernGateway } from './helpers';

/**
 * The official v2 SDK client pinned to 2026-07-28, with an elicitation handler, through the gateway:
 * the client's automatic input_required retry completes the call (DynamoDB unreachable).
 */

jest.setTimeout(30_000);

const clients: Client[] = [];
// Registered before the fixture, so it runs before the fixture closes the gateway.
afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
});

const gateway = withModernGateway(
  { confirmTools: ['modern___confirm_stateless'] },
  { targets: { modern: () => startModernDemoTarget() } },
);

async function connect(
  answer: (request: { params: Record<string, unknown> }) => Record<string, unknown> | Promise<Record<string, unknown>>,
  seen: string[],
): Promise<Client> {
  const client = new Client(
    { name: 'sdk-test', version: '1.0.0' },
    { capabilities: { elicitation: { form: {}, url: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    seen.push(String(request.params.message));
    return (await answer(request as { params: Record<string, unknown> })) as never;
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
  clients.push(client);
  return client;
}

test('pinned v2 client: form elicitation through the gateway with the automatic retry', async () => {
  const seen: string[] = [];
  const client = await connect(() => ({ action: 'accept', content: { confirm: true } }), seen);
  expect(client.getNegotiatedProtocolVersion?.()).toBe('2026-07-28');
  const tools = await client.listTools();
  expect(tools.tools.map((t) => t.name)).toContain('modern___use_aws');
  const result = await client.callTool({
    name: 'modern___use_aws',
    arguments: { command: 'aws s3 rm s3://my-bucket/important-file' },
  });
  expect(seen).toEqual(['Run `aws s3 rm s3://my-bucket/important-file`?']);
  expect(result.content).toEqual([{ type: 'text', text: 'executed: aws s3 rm s3://my-bucket/important-file' }]);
});

test('pinned v2 client: URL elicitation, and a decline reaches the target as a decline', async () => {
  const seen: string[] = [];
  const client = await connect(async (request) => {
    if (request.params.mode !== 'url') return { action: 'decline' };
    await clickOnConsentPage(String(request.params.url), 'allow'); // the user allows it on the target's page
    return { action: 'accept' };
  }, seen);
  const url = await client.callTool({ name: 'modern___access_github_repo', arguments: { repo: 'my-org/my-repo' } });
  expect(url.content).toEqual([{ type: 'text', text: 'accessed my-org/my-repo' }]);
  const declined = await client.callTool({ name: 'modern___use_aws', arguments: { command: 'rm -rf /' } });
  expect(declined.content).toEqual([{ type: 'text', text: 'not executed (decline)' }]);
});

test("pinned v2 client: a gateway confirmation, then the target's own round, in one callTool", async () => {
  const seen: string[] = [];
  const client = await connect((request) => {
    const schema = request.params.requestedSchema as { properties: Record<string, unknown> };
    return { action: 'accept', content: 'confirm' in schema.properties ? { confirm: true } : { ok: true } };
  }, seen);
  const result = await client.callTool({ name: 'modern___confirm_stateless', arguments: { action: 'deploy' } });
  expect(seen).toHaveLength(2);
  expect(seen[0]).toContain('The MCP gateway asks you to confirm');
  expect(seen[1]).toBe('Do deploy?');
  expect(result.content).toEqual([{ type: 'text', text: 'done: deploy' }]);
});
