import { ACCEPT_OK as ACCEPT, answersOf, bridgedCall, retryOf } from '../support/bridged-calls';
import type { Json } from '../support/mcp-http';
import { type AskingServer, startAskingServer } from '../support/servers/v1-asking-server';
import { withGateway } from '../support/with-gateway';

/**
 * A 2026-07-28 client calling a 2025-only target that asks for input (the bridged path,
 * stateless/bridge.ts): the retry's answers are checked against the round they answer before anything
 * reaches the target. Real parts: the v1 SDK server of test/support/servers/v1-asking-server.ts, dynalite
 * through the AWS SDK, the local server.
 */

jest.setTimeout(30_000);

const MAX_OUTCOME = 2 * 1024 * 1024;

const gw = withGateway(
  (targets) => ({
    logLevel: 'SILENT',
    pendingRequestTimeoutSeconds: 5,
    maxBridgedOutcomeBytes: MAX_OUTCOME,
    maxBridgedCallsPerPrincipal: 100,
    targets: [{ name: 'ask', url: targets.ask.url, era: 'legacy' }],
  }),
  { targets: { ask: startAskingServer } },
);
const target = () => gw.targets.ask as unknown as AskingServer;

const call = (id: string, tool: string, args: Json, extra: Json = {}) =>
  bridgedCall(gw.url, { id, name: `ask___${tool}`, args, extra });

describe('the answers of a bridged round are checked against the round', () => {
  it('inputResponses: null with a valid requestState is -32602 / 400, and the round can still be answered', async () => {
    const { message: round } = await call('n1', 'ask_many', { n: 1 });
    expect(round.result.resultType).toBe('input_required');
    const refused = await call(
      'n2',
      'ask_many',
      { n: 1 },
      { inputResponses: null, requestState: round.result.requestState },
    );
    expect(refused.status).toBe(400);
    expect(refused.message.error).toMatchObject({ code: -32602 });
    expect(refused.message.error.message).toContain('inputResponses');
    const done = await call(
      'n3',
      'ask_many',
      { n: 1 },
      { inputResponses: answersOf(round), requestState: round.result.requestState },
    );
    expect(done.message.result).toMatchObject({ resultType: 'complete', content: [{ text: 'answered 1: accept' }] });
  });

  it.each([
    ['an array', []],
    ['a string', 'yes'],
    ['a number', 7],
  ])('inputResponses as %s is -32602 / 400', async (_what, inputResponses) => {
    const { message: round } = await call('s1', 'ask_many', { n: 1 });
    const refused = await call('s2', 'ask_many', { n: 1 }, { inputResponses, requestState: round.result.requestState });
    expect(refused.status).toBe(400);
    expect(refused.message.error).toMatchObject({ code: -32602, data: { field: 'inputResponses' } });
  });

  it.each([
    ['null', null],
    ['a string', 'accept'],
    ['an elicitation result without a valid action', { action: 'maybe' }],
    ['an elicitation result whose content is not an object', { action: 'accept', content: 'ok' }],
  ])('an answer that is %s is -32602 / 400, and nothing reaches the target', async (_what, answer) => {
    const { message: round } = await call('v1', 'ask_many', { n: 1 });
    const answersBefore = target().stats().answers.length;
    const refused = await call(
      'v2',
      'ask_many',
      { n: 1 },
      { inputResponses: answersOf(round, answer as Json), requestState: round.result.requestState },
    );
    expect(refused.status).toBe(400);
    expect(refused.message.error).toMatchObject({ code: -32602, data: { field: 'inputResponses' } });
    expect(target().stats().answers.length).toBe(answersBefore);
  });

  it('an answer to a request the round did not ask is -32602 / 400 naming it', async () => {
    const { message: round } = await call('u1', 'ask_many', { n: 1 });
    const refused = await call(
      'u2',
      'ask_many',
      { n: 1 },
      { inputResponses: { ...answersOf(round), 'gw-not-asked': ACCEPT }, requestState: round.result.requestState },
    );
    expect(refused.status).toBe(400);
    expect(refused.message.error.data).toMatchObject({ unexpected: ['gw-not-asked'], missing: [] });
  });

  it('a retry answering only some of the round is refused at once, naming what is missing; the full retry completes', async () => {
    const { message: round } = await call('p1', 'ask_many', { n: 2 });
    const keys = Object.keys(round.result.inputRequests);
    expect(keys).toHaveLength(2);
    const answersBefore = target().stats().answers.length;
    const started = Date.now();
    const refused = await call(
      'p2',
      'ask_many',
      { n: 2 },
      { inputResponses: { [keys[0]!]: ACCEPT }, requestState: round.result.requestState },
    );
    // Refused before any wait for the round (the pending timeout is 5 s here).
    expect(Date.now() - started).toBeLessThan(4000);
    expect(refused.status).toBe(400);
    expect(refused.message.error).toMatchObject({ code: -32602, data: { missing: [keys[1]] } });
    expect(refused.message.error.message).toContain(keys[1]);
    expect(target().stats().answers.length).toBe(answersBefore);
    const done = await call(
      'p3',
      'ask_many',
      { n: 2 },
      { inputResponses: answersOf(round), requestState: round.result.requestState },
    );
    expect(done.message.result).toMatchObject({
      resultType: 'complete',
      content: [{ text: 'answered 2: accept,accept' }],
    });
  });
});

/** The client's retry of `round` answering every request (accept), as a fresh request `id`. */
const answerRound = (id: string, tool: string, args: Json, round: Json) =>
  call(id, tool, args, { inputResponses: answersOf(round), requestState: round.result.requestState });

describe('outcomes larger than a DynamoDB item', () => {
  it('a final result over 400 KB (1 MB) reaches the retry, and the tool ran once', async () => {
    const before = target().stats().completed.ask_then_big ?? 0;
    const args = { bytes: 1_000_000 };
    const { message: round } = await call('l1', 'ask_then_big', args);
    expect(round.result.resultType).toBe('input_required');
    const done = await answerRound('l2', 'ask_then_big', args, round);
    expect(done.message.result.resultType).toBe('complete');
    expect(done.message.result.content[0].text).toHaveLength(1_000_000);
    expect((target().stats().completed.ask_then_big ?? 0) - before).toBe(1);
  });

  it('a round-2 request over 400 KB (600 KB) reaches the retry of round 1, and its answer completes the call', async () => {
    const args = { bytes: 600_000 };
    const { message: first } = await call('q1', 'ask_big_second', args);
    const second = await answerRound('q2', 'ask_big_second', args, first);
    expect(second.message.result.resultType).toBe('input_required');
    const [request] = Object.values(second.message.result.inputRequests) as Json[];
    expect(request.params.message).toHaveLength('second '.length + 600_000);
    const done = await answerRound('q3', 'ask_big_second', args, second.message);
    expect(done.message.result).toMatchObject({ resultType: 'complete', content: [{ text: 'both answered' }] });
  });

  it('a result of 150 KB of quotes (300 KB as JSON, twice that as the store measures an answer) reaches the retry', async () => {
    const args = { bytes: 150_000, char: '"' };
    const { message: round } = await call('e1', 'ask_then_big', args);
    const done = await answerRound('e2', 'ask_then_big', args, round);
    expect(done.message.result.resultType).toBe('complete');
    expect(done.message.result.content[0].text).toBe('"'.repeat(150_000));
  });

  it('a result over maxBridgedOutcomeBytes: a prompt, non-retryable 413 OutcomeTooLarge that does not ask for a re-run', async () => {
    const args = { bytes: MAX_OUTCOME + 100_000 };
    const { message: round } = await call('t1', 'ask_then_big', args);
    const started = Date.now();
    const refused = await answerRound('t2', 'ask_then_big', args, round);
    expect(Date.now() - started).toBeLessThan(4000);
    expect(refused.status).toBe(413);
    expect(refused.message.error).toMatchObject({ code: -32603, data: { type: 'OutcomeTooLarge' } });
    expect(refused.message.error.data.retryable).toBeUndefined();
    expect(refused.message.error.message).toContain('maxBridgedOutcomeBytes');
    expect(refused.message.error.message).not.toMatch(/send the request again|retry the call/i);
  });
});

describe('the same retry repeated (idempotent by round)', () => {
  it('sent again after it completed: the stored outcome, the tool not run again', async () => {
    const before = target().stats().started.ask_then_big ?? 0;
    const args = { bytes: 20 };
    const { message: round } = await call('i1', 'ask_then_big', args);
    const answersBefore = target().stats().answers.length;
    const first = await answerRound('i2', 'ask_then_big', args, round);
    const again = await answerRound('i3', 'ask_then_big', args, round);
    expect(first.message.result).toMatchObject({ resultType: 'complete', content: [{ text: 'x'.repeat(20) }] });
    expect(again.message.result).toEqual(first.message.result);
    expect((target().stats().started.ask_then_big ?? 0) - before).toBe(1);
    expect(target().stats().answers.length - answersBefore).toBe(1);
  });

  it('8 identical retries at once all get the result; the target gets the answer once', async () => {
    const args = { bytes: 30 };
    const { message: round } = await call('c1', 'ask_then_big', args);
    const answersBefore = target().stats().answers.length;
    const retries = await Promise.all(
      Array.from({ length: 8 }, (_, i) => answerRound(`c-retry-${i}`, 'ask_then_big', args, round)),
    );
    for (const retry of retries) {
      expect(retry.message.result).toMatchObject({ resultType: 'complete', content: [{ text: 'x'.repeat(30) }] });
    }
    expect(target().stats().answers.length - answersBefore).toBe(1);
  });

  it('a repeated retry of round 1 of a two-round call gives round 2 again (the same requests)', async () => {
    const args = { bytes: 10 };
    const { message: first } = await call('r1', 'ask_big_second', args);
    const second = await answerRound('r2', 'ask_big_second', args, first);
    const repeated = await answerRound('r3', 'ask_big_second', args, first);
    expect(Object.keys(repeated.message.result.inputRequests)).toEqual(
      Object.keys(second.message.result.inputRequests),
    );
    const done = await answerRound('r4', 'ask_big_second', args, repeated.message);
    expect(done.message.result).toMatchObject({ resultType: 'complete', content: [{ text: 'both answered' }] });
  });
});

describe('bounds of the bridged path', () => {
  const bounded = withGateway(
    (targets) => ({
      logLevel: 'SILENT',
      pendingRequestTimeoutSeconds: 5,
      maxPendingRequestsPerSession: 5,
      maxBridgedCallsPerPrincipal: 2,
      targets: [{ name: 'ask', url: targets.ask.url, era: 'legacy' }],
    }),
    { targets: { ask: startAskingServer } },
  );
  const boundedTarget = () => bounded.targets.ask as unknown as AskingServer;
  const callBounded = (id: string, tool: string, args: Json, extra: Json = {}) =>
    bridgedCall(bounded.url, { id, name: `ask___${tool}`, args, extra });

  it('a round of more requests than maxPendingRequestsPerSession is refused at the target; nothing is stored', async () => {
    bounded.dynamo.reset();
    const { message } = await callBounded('m1', 'ask_many', { n: 6 });
    // The target's tool got the refusal (its result reports it); the client was asked nothing.
    expect(message.result?.resultType).not.toBe('input_required');
    expect(JSON.stringify(message)).toContain('maxPendingRequestsPerSession');
    expect(bounded.dynamo.counts.get('PutItem') ?? 0).toBe(0);
    expect(boundedTarget().stats().completed.ask_many ?? 0).toBe(0);
  });

  it('more bridged calls of one principal than maxBridgedCallsPerPrincipal: 429 TooManyBridgedCalls before anything is stored; a slot frees when a call ends', async () => {
    const first = await callBounded('o1', 'ask_many', { n: 1 });
    const second = await callBounded('o2', 'ask_many', { n: 1 });
    expect([first.message.result.resultType, second.message.result.resultType]).toEqual([
      'input_required',
      'input_required',
    ]);
    bounded.dynamo.reset();
    const refused = await callBounded('o3', 'ask_many', { n: 1 });
    expect(refused.status).toBe(429);
    expect(refused.message.error).toMatchObject({
      code: -32603,
      data: { type: 'TooManyBridgedCalls', limit: 2, retryable: true },
    });
    expect(refused.message.error.message).toContain('maxBridgedCallsPerPrincipal');
    expect(bounded.dynamo.counts.get('PutItem') ?? 0).toBe(0);
    const done = await callBounded('o4', 'ask_many', { n: 1 }, retryOf(first.message));
    expect(done.message.result).toMatchObject({ resultType: 'complete' });
    const third = await callBounded('o5', 'ask_many', { n: 1 });
    expect(third.message.result.resultType).toBe('input_required');
  });
});
