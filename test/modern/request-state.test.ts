import { type ModernDemoTarget, startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { SealedBox } from '../../lambda/crypto/sealed-box';
import { argumentsDigest, RequestStateSealer, type StateBinding } from '../../lambda/modern/request-state';
import { systemClock } from '../../lambda/scheduling/clock';
import { type Json, KEY_A, KEY_B, modernCall, withModernGateway } from './helpers';

/**
 * The gateway's sealed requestState: each way a retry's state can be wrong is refused with -32602
 * (HTTP 400) before the target is called; rotation accepts the previous key.
 */

jest.setTimeout(30_000);

const gw = withModernGateway(
  (targets) => ({
    targets: [
      { name: 'modern', url: targets.modern.url },
      { name: 'other', url: targets.modern.url },
    ],
  }),
  { targets: { modern: () => startModernDemoTarget() } },
);
let target: ModernDemoTarget;
let url: string;

beforeAll(() => {
  target = gw.targets.modern;
  url = gw.url;
});

const USE_AWS = { name: 'modern___use_aws', arguments: { command: 'aws s3 ls' } };
const ACCEPT = { confirm: { action: 'accept', content: { confirm: true } } };

async function firstRound(gatewayUrl = url, params: Json = USE_AWS): Promise<Json> {
  const res = await modernCall(gatewayUrl, 'tools/call', params, 'r1');
  expect(res.status).toBe(200);
  expect(res.body.result.resultType).toBe('input_required');
  return res.body.result;
}

async function expectRefusedRetry(params: Json, gatewayUrl = url): Promise<Json> {
  const before = target.stats().calls.length;
  const res = await modernCall(gatewayUrl, 'tools/call', params, 'r2');
  expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: -32602 });
  expect(target.stats().calls.length).toBe(before);
  return res.body;
}

test('the state is sealed: the target state inside is not readable, and the retry gets it back byte for byte', async () => {
  const result = await firstRound();
  const targetState = target.stats().minted.at(-1)!;
  expect(result.requestState).toMatch(/^gw1\./);
  expect(result.requestState).not.toContain(targetState);
  expect(Buffer.from(result.requestState.split('.')[3], 'base64url').toString('latin1')).not.toContain('use_aws');
  const res = await modernCall(
    url,
    'tools/call',
    { ...USE_AWS, inputResponses: ACCEPT, requestState: result.requestState },
    'r2',
  );
  expect(res.body.result.content[0].text).toBe('executed: aws s3 ls');
  expect(target.stats().calls.at(-1)!.requestState).toBe(targetState);
});

test('tampered → -32602, HTTP 400, target not called', async () => {
  const { requestState } = await firstRound();
  const parts = requestState.split('.');
  const body = Buffer.from(parts[3], 'base64url');
  body[5] ^= 0x01;
  parts[3] = body.toString('base64url');
  await expectRefusedRetry({ ...USE_AWS, inputResponses: ACCEPT, requestState: parts.join('.') });
  await expectRefusedRetry({ ...USE_AWS, inputResponses: ACCEPT, requestState: 'not-a-state' });
  await expectRefusedRetry({ ...USE_AWS, inputResponses: ACCEPT, requestState: 42 });
});

const binding = (over: Partial<StateBinding> = {}): StateBinding => ({
  principal: 'anonymous',
  target: 'modern',
  method: 'tools/call',
  name: 'use_aws',
  argsDigest: argumentsDigest({ command: 'aws s3 ls' }),
  ...over,
});

test('expired → -32602, HTTP 400, target not called', async () => {
  const sealer = new RequestStateSealer(SealedBox.fromSecrets({ current: KEY_A }), 600, systemClock);
  const longAgo = Date.now() - 3_600_000;
  const stale = sealer.seal(binding(), { kind: 'relay', targetState: 'x', confirmed: false }, longAgo);
  const body = await expectRefusedRetry({ ...USE_AWS, inputResponses: ACCEPT, requestState: stale });
  expect(body.error.data.reason).toBe('expired');
  // The same state, fresh, is accepted (the binding above is right): only the expiry refused it.
  const fresh = sealer.seal(binding(), { kind: 'relay', targetState: undefined, confirmed: false });
  const ok = await modernCall(url, 'tools/call', { ...USE_AWS, requestState: fresh }, 'r3');
  expect(ok.status).toBe(200);
});

test('issued to another principal → -32602, HTTP 400, target not called', async () => {
  const sealer = new RequestStateSealer(SealedBox.fromSecrets({ current: KEY_A }), 600, systemClock);
  const foreign = sealer.seal(binding({ principal: 'arn:aws:iam::123456789012:user/mallory' }), {
    kind: 'relay',
    targetState: 'x',
    confirmed: false,
  });
  await expectRefusedRetry({ ...USE_AWS, inputResponses: ACCEPT, requestState: foreign });
});

test('issued for another target → -32602, HTTP 400, target not called', async () => {
  const { requestState } = await firstRound();
  await expectRefusedRetry({ ...USE_AWS, name: 'other___use_aws', inputResponses: ACCEPT, requestState });
});

test('issued for another tool → -32602, HTTP 400, target not called', async () => {
  const { requestState } = await firstRound();
  await expectRefusedRetry({
    name: 'modern___access_github_repo',
    arguments: { command: 'aws s3 ls' },
    inputResponses: ACCEPT,
    requestState,
  });
});

test('issued for other arguments → -32602, HTTP 400, target not called', async () => {
  const { requestState } = await firstRound();
  await expectRefusedRetry({
    ...USE_AWS,
    arguments: { command: 'aws s3 rm s3://bucket --recursive' },
    inputResponses: ACCEPT,
    requestState,
  });
});

test('issued for another method → -32602, HTTP 400', async () => {
  const sealer = new RequestStateSealer(SealedBox.fromSecrets({ current: KEY_A }), 600, systemClock);
  const state = sealer.seal(binding({ method: 'prompts/get' }), { kind: 'relay', confirmed: false });
  await expectRefusedRetry({ ...USE_AWS, inputResponses: ACCEPT, requestState: state });
});

test('key rotation: a gateway whose previous key issued the state accepts it; one without that key refuses it', async () => {
  const issued = await firstRound();
  const rotated = await gw.start({ requestStateKeys: { current: KEY_B, previous: KEY_A } });
  const newKeyOnly = await gw.start({ requestStateKeys: { current: KEY_B } });
  try {
    const res = await modernCall(
      rotated.url,
      'tools/call',
      { ...USE_AWS, inputResponses: ACCEPT, requestState: issued.requestState },
      'r2',
    );
    expect(res.status).toBe(200);
    expect(res.body.result.content[0].text).toBe('executed: aws s3 ls');
    // New states are sealed with the new key.
    const next = await firstRound(rotated.url);
    expect(next.requestState.split('.')[1]).not.toBe(issued.requestState.split('.')[1]);
    await expectRefusedRetry({ ...USE_AWS, inputResponses: ACCEPT, requestState: issued.requestState }, newKeyOnly.url);
  } finally {
    await rotated.close();
    await newKeyOnly.close();
  }
});

test('a target that sent no requestState gets none on the retry (the gateway still binds the round)', async () => {
  const params = { name: 'modern___confirm_stateless', arguments: { action: 'deploy' } };
  const first = await modernCall(url, 'tools/call', params, 's1');
  expect(first.body.result.resultType).toBe('input_required');
  expect(typeof first.body.result.requestState).toBe('string');
  const retry = await modernCall(
    url,
    'tools/call',
    {
      ...params,
      inputResponses: { ok: { action: 'accept', content: { ok: true } } },
      requestState: first.body.result.requestState,
    },
    's2',
  );
  expect(retry.body.result.content[0].text).toBe('done: deploy');
  const calls = target.stats().calls.filter((c) => c.tool === 'confirm_stateless');
  expect(calls.at(-1)).toMatchObject({ requestState: undefined, inputResponseKeys: ['ok'] });
});

test('several rounds: each round carries the target state of the previous one', async () => {
  const params = { name: 'modern___multi_elicit', arguments: {} };
  const r1 = await modernCall(url, 'tools/call', params, 'm1');
  expect(r1.body.result.inputRequests.name).toBeDefined();
  const r2 = await modernCall(
    url,
    'tools/call',
    {
      ...params,
      inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } },
      requestState: r1.body.result.requestState,
    },
    'm2',
  );
  expect(r2.body.result.inputRequests.age.params.message).toBe('How old are you, Ada?');
  const r3 = await modernCall(
    url,
    'tools/call',
    {
      ...params,
      inputResponses: { age: { action: 'accept', content: { age: 36 } } },
      requestState: r2.body.result.requestState,
    },
    'm3',
  );
  expect(r3.body.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'hello Ada, 36' }] });
  const minted = target.stats().minted;
  expect(
    target
      .stats()
      .calls.filter((c) => c.tool === 'multi_elicit')
      .map((c) => c.requestState),
  ).toEqual([undefined, minted.at(-2), minted.at(-1)]);
});

test('sampling and roots input requests pass through untouched and are forwarded with the capabilities the client declared', async () => {
  const caps = { sampling: {}, roots: {} };
  const s1 = await modernCall(url, 'tools/call', { name: 'modern___sample', arguments: { prompt: 'hi' } }, 'x1', caps);
  expect(s1.body.result.inputRequests.llm).toEqual({
    method: 'sampling/createMessage',
    params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 100 },
  });
  const answer = { llm: { role: 'assistant', content: { type: 'text', text: 'hello' }, model: 'test-model' } };
  const s2 = await modernCall(
    url,
    'tools/call',
    {
      name: 'modern___sample',
      arguments: { prompt: 'hi' },
      inputResponses: answer,
      requestState: s1.body.result.requestState,
    },
    'x2',
    caps,
  );
  expect(s2.body.result.content[0].text).toBe('sampled: test-model: hello');
  expect(target.stats().calls.at(-1)!.clientCapabilities).toEqual({ sampling: {}, roots: {} });

  const r1 = await modernCall(url, 'tools/call', { name: 'modern___list_roots', arguments: {} }, 'y1', caps);
  const r2 = await modernCall(
    url,
    'tools/call',
    {
      name: 'modern___list_roots',
      arguments: {},
      inputResponses: { roots: { roots: [{ uri: 'file:///w' }] } },
      requestState: r1.body.result.requestState,
    },
    'y2',
    caps,
  );
  expect(r2.body.result.content[0].text).toBe('roots: file:///w');
});

test('the gateway declares no more than the client did (extensions and experimental stay behind)', async () => {
  await modernCall(url, 'tools/call', { name: 'modern___echo', arguments: { text: 'x' } }, 'c1', {
    elicitation: {},
    experimental: { secret: {} },
    extensions: { 'io.example/ext': {} },
  });
  expect(target.stats().calls.at(-1)).toMatchObject({
    clientCapabilities: { elicitation: { form: {} } },
    clientInfo: { name: 'mcp-gateway' },
    mcpName: 'echo',
  });
});

test('a target asking for a capability the client lacks: the target answers -32021 and it reaches the client as HTTP 400', async () => {
  const res = await modernCall(url, 'tools/call', { name: 'modern___use_aws', arguments: { command: 'x' } }, 'n1', {});
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe(-32021);
  expect(res.body.error.data.requiredCapabilities).toBeDefined();
});
