import { type ModernDemoTarget, startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { type Json, modernCall, withModernGateway } from './helpers';

/**
 * confirmTools on 2026-07-28: the gateway itself asks (an input_required round keyed
 * `gateway_confirm`, with its own sealed state) before the target is called. DynamoDB unreachable.
 */

jest.setTimeout(30_000);

const gw = withModernGateway(
  (targets) => ({
    targets: [
      { name: 'modern', url: targets.modern.url },
      { name: 'guarded', url: targets.modern.url },
    ],
    confirmTools: ['modern___echo', 'modern___use_aws', 'guarded___*'],
  }),
  { targets: { modern: () => startModernDemoTarget() } },
);
let target: ModernDemoTarget;
let url: string;

beforeAll(() => {
  target = gw.targets.modern;
  url = gw.url;
});

const ECHO = { name: 'modern___echo', arguments: { text: 'delete everything' } };
const calls = () => target.stats().calls.length;

async function ask(params: Json = ECHO): Promise<Json> {
  const before = calls();
  const res = await modernCall(url, 'tools/call', params, 'c1');
  expect(res.status).toBe(200);
  expect(calls()).toBe(before);
  return res.body.result;
}

test('the first call is answered by the gateway: a form naming the tool and showing its arguments; the target is not called', async () => {
  const result = await ask();
  expect(result.resultType).toBe('input_required');
  expect(Object.keys(result.inputRequests)).toEqual(['gateway_confirm']);
  const request = result.inputRequests.gateway_confirm;
  expect(request.method).toBe('elicitation/create');
  expect(request.params.mode).toBe('form');
  expect(request.params.message).toContain('modern___echo');
  expect(request.params.message).toContain('"text": "delete everything"');
  expect(request.params.requestedSchema).toMatchObject({
    type: 'object',
    properties: { confirm: { type: 'boolean' } },
    required: ['confirm'],
  });
  expect(result.requestState).toMatch(/^gw1\./);
});

test("accept with confirm: true → the call is forwarded once, without the gateway's answer or state", async () => {
  const first = await ask();
  const before = calls();
  const res = await modernCall(
    url,
    'tools/call',
    {
      ...ECHO,
      inputResponses: { gateway_confirm: { action: 'accept', content: { confirm: true } } },
      requestState: first.requestState,
    },
    'c2',
  );
  expect(res.body.result).toMatchObject({
    resultType: 'complete',
    content: [{ type: 'text', text: 'echo: delete everything' }],
  });
  expect(calls()).toBe(before + 1);
  expect(target.stats().calls.at(-1)).toMatchObject({ tool: 'echo', requestState: undefined, inputResponseKeys: [] });
});

test.each([
  ['decline', { action: 'decline' }, 'declined'],
  ['cancel', { action: 'cancel' }, 'cancelled'],
  ['accept with confirm: false', { action: 'accept', content: { confirm: false } }, 'declined'],
])('%s → the tool is not called; an isError result says so', async (_label, answer, word) => {
  const first = await ask();
  const before = calls();
  const res = await modernCall(
    url,
    'tools/call',
    { ...ECHO, inputResponses: { gateway_confirm: answer }, requestState: first.requestState },
    'c3',
  );
  expect(res.status).toBe(200);
  expect(res.body.result.isError).toBe(true);
  expect(res.body.result.content[0].text).toBe(
    `The tool modern___echo was not called: the user ${word} the confirmation.`,
  );
  expect(calls()).toBe(before);
});

test('a retry without the answer asks again', async () => {
  const first = await ask();
  const again = await modernCall(url, 'tools/call', { ...ECHO, requestState: first.requestState }, 'c4');
  expect(again.body.result.resultType).toBe('input_required');
  expect(again.body.result.inputRequests.gateway_confirm).toBeDefined();
});

test('without the elicitation capability → -32021, HTTP 400, requiredCapabilities; the target is not called', async () => {
  const before = calls();
  const res = await modernCall(url, 'tools/call', ECHO, 'c5', {});
  expect(res.status).toBe(400);
  expect(res.body.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: { form: {} } } } });
  expect(calls()).toBe(before);
  // url-only elicitation is not enough for a form.
  const urlOnly = await modernCall(url, 'tools/call', ECHO, 'c6', { elicitation: { url: {} } });
  expect(urlOnly.status).toBe(400);
  expect(urlOnly.body.error.code).toBe(-32021);
});

test('a confirmation given for some arguments does not let other arguments through', async () => {
  const first = await ask();
  const res = await modernCall(
    url,
    'tools/call',
    {
      name: 'modern___echo',
      arguments: { text: 'something else' },
      inputResponses: { gateway_confirm: { action: 'accept', content: { confirm: true } } },
      requestState: first.requestState,
    },
    'c7',
  );
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe(-32602);
});

test('target___* patterns; unlisted tools pass straight through', async () => {
  const guarded = await ask({ name: 'guarded___echo', arguments: { text: 'x' } });
  expect(guarded.inputRequests.gateway_confirm.params.message).toContain('guarded___echo');
  const before = calls();
  const plain = await modernCall(url, 'tools/call', { name: 'modern___fail', arguments: {} }, 'c8');
  expect(plain.body.result).toMatchObject({ isError: true, content: [{ text: 'failed on purpose' }] });
  expect(calls()).toBe(before + 1);
});

test("confirmed once, then the target's own input round: the gateway does not ask again", async () => {
  const params = { name: 'modern___use_aws', arguments: { command: 'aws s3 rb s3://b' } };
  const r1 = await ask(params);
  const r2 = await modernCall(
    url,
    'tools/call',
    {
      ...params,
      inputResponses: { gateway_confirm: { action: 'accept', content: { confirm: true } } },
      requestState: r1.requestState,
    },
    'u2',
  );
  expect(Object.keys(r2.body.result.inputRequests)).toEqual(['confirm']); // the target's own key
  const r3 = await modernCall(
    url,
    'tools/call',
    {
      ...params,
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
      requestState: r2.body.result.requestState,
    },
    'u3',
  );
  expect(r3.body.result.content[0].text).toBe('executed: aws s3 rb s3://b');
});
