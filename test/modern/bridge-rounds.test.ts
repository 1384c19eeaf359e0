import { ACCEPT_OK as ACCEPT, answersOf, bridgedCall, retryOf } from '../support/bridged-calls';
import { eventually, type Json, post, sseEvents } from '../support/mcp-http';
import { type AskingServer, startAskingServer } from '../support/servers/v1-asking-server';
import { withGateway } from '../support/with-gateway';

/**
 * A 2026-07-28 client calling a 2025-only target that asks for input (the bridged path,
 * modern/bridge.ts): the retry's answers are checked against the round they answer before anything
 * reaches the target. Real parts: the v1 SDK server of test/support/servers/v1-asking-server.ts, dynalite
 * through the AWS SDK, the local server.
 */

jest.setTimeout(30_000);

const MAX_OUTCOME = 2 * 1024 * 1024;

const gw = withGateway(
  (targets) => ({
    logLevel: 'SILENT',
    // No round here waits for its timeout. A short one (it was 5 s) expired a round between its question
    // and its retry on a loaded machine, and a round another test left unanswered wrote its expiry in the
    // middle of a test that counts DynamoDB requests: both failed the file beside a second copy of it.
    pendingRequestTimeoutSeconds: 300,
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
    gw.dynamo.reset();
    const refused = await call(
      'p2',
      'ask_many',
      { n: 2 },
      { inputResponses: { [keys[0]!]: ACCEPT }, requestState: round.result.requestState },
    );
    // Refused before any wait for the round: the retry read nothing of it from DynamoDB. (The holder's own
    // looks at its waiting records — reads of the asked records, lease renewals — go on meanwhile.)
    const holders = (r: { operation: string; body: string }) =>
      (r.operation === 'GetItem' && !r.body.includes('.n')) ||
      (r.operation === 'UpdateItem' && r.body.includes('holderUntil'));
    expect(gw.dynamo.requests.filter((r) => !holders(r))).toEqual([]);
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
    // Told as soon as the outcome is known: a retry that waited out the round would end otherwise (not OutcomeTooLarge).
    const refused = await answerRound('t2', 'ask_then_big', args, round);
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

const PLACES_ROUND_TIMEOUT_S = 10;

describe('the bound on bridged calls holds across instances (one DynamoDB)', () => {
  const two = withGateway(
    (targets) => ({
      logLevel: 'SILENT',
      // Long enough for the first test's steps before its answer on a loaded machine (3 s was not:
      // the round was abandoned first), short enough for the second test to see a round abandoned.
      pendingRequestTimeoutSeconds: PLACES_ROUND_TIMEOUT_S,
      maxBridgedCallsPerPrincipal: 2,
      // One deployment: every instance opens the requestState the others sealed.
      requestStateKeys: { current: 'bridged-calls-across-instances-test-key' },
      targets: [{ name: 'ask', url: targets.ask.url, era: 'legacy' }],
    }),
    { targets: { ask: startAskingServer }, instances: 2 },
  );
  const on = (instance: number, id: string, extra: Json = {}) =>
    bridgedCall(two.instances[instance].url, { id, name: 'ask___ask_many', args: { n: 1 }, extra });
  /** The places of bridged calls the table counts now (the `B#` buckets of every principal). */
  const placesCounted = async () => {
    const { createDocumentClient } = await import('../../lambda/state/dynamo-client');
    const { ScanCommand } = await import('@aws-sdk/lib-dynamodb');
    const out = await createDocumentClient({ endpoint: two.dynamodbEndpoint }).send(
      new ScanCommand({
        TableName: 'mcp-gateway',
        FilterExpression: 'begins_with(sk, :b)',
        ExpressionAttributeValues: { ':b': 'B#' },
      }),
    );
    return (out.Items ?? []).reduce((sum, item) => sum + Number(item.count ?? 0), 0);
  };
  /** A bridged call on `instance` whose round 1 nobody answers: resolves when its held stream ends. */
  const abandoned = async (instance: number, id: string) => {
    const res = await post(
      two.instances[instance].url,
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'ask___ask_many' },
      {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: {
          name: 'ask___ask_many',
          arguments: { n: 1 },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
          },
        },
      },
      AbortSignal.timeout(PLACES_ROUND_TIMEOUT_S * 1000 + 20_000),
    );
    const messages: Json[] = [];
    for await (const event of sseEvents(res)) if (event.message) messages.push(event.message);
    return messages;
  };

  it("one call waiting on each instance fills the principal's places: a third is refused on either instance (429, Retry-After); a place comes back when a call ends", async () => {
    const onA = await on(0, 'x1');
    const onB = await on(1, 'x2');
    expect([onA.message.result.resultType, onB.message.result.resultType]).toEqual([
      'input_required',
      'input_required',
    ]);
    for (const instance of [0, 1]) {
      two.dynamo.reset();
      const res = await post(
        two.instances[instance].url,
        { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'ask___ask_many' },
        {
          jsonrpc: '2.0',
          id: `x3-${instance}`,
          method: 'tools/call',
          params: {
            name: 'ask___ask_many',
            arguments: { n: 1 },
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
            },
          },
        },
        AbortSignal.timeout(20_000),
      );
      expect(res.status).toBe(429);
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      // Within pendingRequestTimeoutSeconds an unanswered round gives its place back.
      expect(retryAfter).toBeLessThanOrEqual(PLACES_ROUND_TIMEOUT_S);
      const refused = (await res.json()) as Json;
      expect(refused.error).toMatchObject({ data: { type: 'TooManyBridgedCalls', limit: 2, retryable: true } });
      expect(refused.error.message).toContain('across gateway instances');
      // Nothing of a round was stored for the refused call.
      expect(two.dynamo.counts.get('PutItem') ?? 0).toBe(0);
    }
    expect(await placesCounted()).toBe(2);
    // The call held by A is answered through B: it completes and gives its place back.
    const done = await on(1, 'x4', retryOf(onA.message));
    expect(done.message.result).toMatchObject({ resultType: 'complete' });
    await eventually(async () => expect(await placesCounted()).toBe(1));
    const next = await on(1, 'x5');
    expect(next.message.result.resultType).toBe('input_required');
    // Both waiting calls finish so the next test starts with no place taken.
    await on(0, 'x6', retryOf(onB.message));
    await on(0, 'x7', retryOf(next.message));
    await eventually(async () => expect(await placesCounted()).toBe(0));
  });

  it('an abandoned round gives its place back (the holder cancels the call and ends its stream)', async () => {
    const held = Promise.all([abandoned(0, 'y1'), abandoned(1, 'y2')]);
    // While both wait for an answer, each holds a place in the table.
    await eventually(async () => expect(await placesCounted()).toBe(2));
    const both = await held;
    for (const messages of both) expect(messages[0].result.resultType).toBe('input_required');
    expect(await placesCounted()).toBe(0);
    const again = await on(0, 'y3');
    expect(again.message.result.resultType).toBe('input_required');
    await on(1, 'y4', retryOf(again.message));
  }, 60_000); // the rounds wait out their pending timeout
});
