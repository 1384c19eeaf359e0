import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import type { GatewayUnderTest } from '../support/gateways';
import { callAndAnswer, initSession, post, readMessage } from '../support/mcp-http';
import { type Json, withModernGateway } from './helpers';

/**
 * confirmTools on 2025-11-25 sessions: the gateway sends its own elicitation/create on the call's
 * stream before relaying. This is the 2025 path, so DynamoDB is needed (an embedded dynalite, shared
 * by two gateway instances to show the answer may reach another instance).
 */

jest.setTimeout(30_000);

const gw = withModernGateway(
  { confirmTools: ['demo___echo', 'demo___use_aws'] },
  { targets: { demo: () => startDemoTarget() }, dynamo: 'counted', instances: 2 },
);
let target: DemoTarget;
let gateway: GatewayUnderTest;
let second: GatewayUnderTest;

beforeAll(() => {
  target = gw.targets.demo;
  [gateway, second] = gw.instances;
});

const toolCalls = () => target.stats().requestsByMethod['tools/call'] ?? 0;
const FORM = { elicitation: { form: {} } };

test('the gateway asks first; accept → the call is relayed on the same stream (answer POSTed to another instance)', async () => {
  const { headers } = await initSession(gateway.url, { capabilities: FORM });
  const before = toolCalls();
  const call = await callAndAnswer(
    gateway.url,
    headers,
    { id: 'call-1', params: { name: 'demo___echo', arguments: { text: 'rm -rf /' } } },
    () => ({ result: { action: 'accept', content: { confirm: true } } }),
    { answerUrl: second.url },
  );
  const asked = call.messages[0];
  expect(asked.method).toBe('elicitation/create');
  expect(asked.id).toMatch(/^gw-/);
  expect(asked.params.message).toContain('demo___echo');
  expect(asked.params.message).toContain('"text": "rm -rf /"');
  expect(call.answerStatuses).toEqual([202]);
  expect(call.response.result.content).toEqual([{ type: 'text', text: 'echo: rm -rf /' }]);
  expect(toolCalls()).toBe(before + 1);
});

test('decline → an isError result, the target is not called', async () => {
  const { headers } = await initSession(gateway.url, { capabilities: FORM });
  const before = toolCalls();
  const call = await callAndAnswer(
    gateway.url,
    headers,
    { id: 'call-2', params: { name: 'demo___echo', arguments: { text: 'x' } } },
    () => ({ result: { action: 'decline' } }),
  );
  expect(call.response.result).toMatchObject({
    isError: true,
    content: [{ text: 'The tool demo___echo was not called: the user declined the confirmation.' }],
  });
  expect(toolCalls()).toBe(before);
});

test("confirmation, then the target's own elicitation, on one stream", async () => {
  const { headers } = await initSession(gateway.url, { capabilities: FORM });
  const call = await callAndAnswer(
    gateway.url,
    headers,
    { id: 'call-3', params: { name: 'demo___use_aws', arguments: { command: 'aws s3 ls' } } },
    () => ({ result: { action: 'accept', content: { confirm: true } } }),
  );
  expect(call.messages.filter((m: Json) => m.method === 'elicitation/create')).toHaveLength(2);
  expect(call.response.result.content).toEqual([{ type: 'text', text: 'executed: aws s3 ls' }]);
});

test('a session without the elicitation capability → an error result, the target is not called', async () => {
  const { headers } = await initSession(gateway.url, { capabilities: {} });
  const before = toolCalls();
  const res = await post(gateway.url, headers, {
    jsonrpc: '2.0',
    id: 'call-4',
    method: 'tools/call',
    params: { name: 'demo___echo', arguments: { text: 'x' } },
  });
  const message = await readMessage(res);
  expect(message.result.isError).toBe(true);
  expect(message.result.content[0].text).toContain('requires a confirmation');
  expect(toolCalls()).toBe(before);
});

test('a second answer to the same confirmation is refused', async () => {
  const { headers } = await initSession(gateway.url, { capabilities: FORM });
  let askedId = '';
  const call = await callAndAnswer(
    gateway.url,
    headers,
    { id: 'call-5', params: { name: 'demo___echo', arguments: { text: 'once' } } },
    (request) => {
      askedId = request.id;
      return { result: { action: 'accept', content: { confirm: true } } };
    },
  );
  expect(call.response.result.content[0].text).toBe('echo: once');
  const again = await post(gateway.url, headers, {
    jsonrpc: '2.0',
    id: askedId,
    result: { action: 'accept', content: { confirm: true } },
  });
  expect(again.status).toBe(400);
});
