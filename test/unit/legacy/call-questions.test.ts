import { CallQuestions } from '../../../lambda/legacy/call-questions';
import { CallRelease } from '../../../lambda/legacy/call-release';
import { RELEASED } from '../../../lambda/legacy/call-state';
import { ServerRequests } from '../../../lambda/legacy/server-requests';
import type { SessionRecord } from '../../../lambda/state/store';
import type { InputRequestEntry } from '../../../lambda/targets/input-rounds';
import { type CallHarness, callHarness, clientSide } from '../../support/call-harness';
import { SseText } from '../../support/sse-text';

/**
 * The questions the gateway asks the client itself (legacy/call-questions.ts): a confirmTools
 * confirmation before the target is called, and a 2026-07-28 target's input rounds — each recorded,
 * sent on the call's stream, its answer polled for; what the client answers decides, and what it
 * cannot take is refused before anything is sent.
 */

beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] }));
afterEach(() => jest.useRealTimers());

const CONFIRM = { exposedName: 'demo___deploy', tool: 'deploy' };

async function setUp(
  options: {
    session?: Partial<SessionRecord>;
    accept?: { json: boolean; sse: boolean };
    config?: NonNullable<Parameters<typeof callHarness>[0]>['config'];
    /** A call of a confirmTools tool. */
    confirm?: boolean;
  } = {},
) {
  const h = await callHarness({
    config: { pendingRequestTimeoutSeconds: 60, ...options.config },
    session: { clientCapabilities: { elicitation: { form: {} } }, ...options.session },
    accept: options.accept,
    params: { name: 'deploy', arguments: { env: 'prod' } },
    deadlineMs: 600_000, // the pending timeout comes first
    nodeClock: true, // a question's answer is polled for on Node's clock (jest's fake timers here)
    input: options.confirm ? { confirm: CONFIRM } : {},
  });
  const side = clientSide();
  if (options.accept?.sse !== false) h.call.out = side.out;
  const release = new CallRelease(h.call);
  const questions = new CallQuestions(h.call, release, new ServerRequests(h.call, release));
  return { ...h, side, text: new SseText(side.sse.response()), release, questions };
}

type Set = Awaited<ReturnType<typeof setUp>>;

/** The gateway ids of the questions sent so far, once `n` were. */
async function asked(h: Set, n: number): Promise<string[]> {
  await h.text.until(() => h.call.questions.length >= n && h.text.messages().length >= n);
  return h.text.messages().map((m) => m.id as string);
}

/** The client answers a question (any instance stores it); the call's next poll finds it. */
async function answer(h: Set, gatewayId: string, body: { result?: unknown; error?: unknown }): Promise<void> {
  await h.store.answerPending(
    h.loaded.session.id,
    gatewayId,
    JSON.stringify({ jsonrpc: '2.0', id: gatewayId, ...body }),
  );
  await jest.advanceTimersByTimeAsync(1000);
}

async function over(h: CallHarness): Promise<void> {
  h.call.finished = true;
  await h.call.holder.stop();
}

describe('a confirmTools confirmation', () => {
  it('is asked as a form naming the tool, recorded as a question of this call before it is sent', async () => {
    const h = await setUp({ confirm: true });
    const confirming = h.questions.confirm(CONFIRM);
    const [gatewayId] = await asked(h, 1);
    const [sent] = h.text.messages();
    expect(sent).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'form', message: expect.stringContaining('deploy') },
    });
    expect(await h.store.getPending(h.loaded.session.id, gatewayId!)).toMatchObject({
      kind: 'question',
      clientRequestId: 7,
      status: 'pending',
    });
    await answer(h, gatewayId!, { result: { action: 'accept', content: { confirm: true } } });
    expect(await confirming).toBeUndefined(); // confirmed: the target is called
    await over(h);
  });

  it.each([
    ['declined', { action: 'decline' }],
    ['declined', { action: 'accept', content: { confirm: false } }],
    ['cancelled', { action: 'cancel' }],
  ])('not confirmed (%s): the final message says so, the tool not called', async (outcome, result) => {
    const h = await setUp({ confirm: true });
    const confirming = h.questions.confirm(CONFIRM);
    const [gatewayId] = await asked(h, 1);
    await answer(h, gatewayId!, { result });
    expect(await confirming).toMatchObject({
      id: 7,
      result: { isError: true, content: [{ text: expect.stringContaining(`the user ${outcome}`) }] },
    });
    await over(h);
  });

  it('cannot be asked of a session without form elicitation, nor on a request that takes no stream: nothing stored', async () => {
    const noForm = await setUp({ confirm: true, session: { clientCapabilities: {} } });
    expect(await noForm.questions.confirm(CONFIRM)).toMatchObject({
      result: { content: [{ text: expect.stringContaining('did not declare form elicitation') }] },
    });
    const jsonOnly = await setUp({ confirm: true, accept: { json: true, sse: false } });
    expect(await jsonOnly.questions.confirm(CONFIRM)).toMatchObject({
      result: { content: [{ text: expect.stringContaining('does not accept text/event-stream') }] },
    });
    expect(await noForm.store.countPending(noForm.loaded.session.id, 100)).toBe(0);
    await over(noForm);
    await over(jsonOnly);
  });

  it('unanswered by pendingRequestTimeoutSeconds: timed out, the tool not called — not a moment before', async () => {
    const h = await setUp({ confirm: true });
    let done = false;
    const confirming = h.questions.confirm(CONFIRM).finally(() => {
      done = true;
    });
    await asked(h, 1);
    await jest.advanceTimersByTimeAsync(59_000);
    expect(done).toBe(false);
    await jest.advanceTimersByTimeAsync(1000);
    expect(await confirming).toMatchObject({
      id: 7,
      error: { code: -32001, message: expect.stringContaining('not called') },
    });
    await over(h);
  });
});

describe("a 2026-07-28 target's input round", () => {
  const form = (message: string): InputRequestEntry => ({
    method: 'elicitation/create',
    params: { mode: 'form', message, requestedSchema: { type: 'object', properties: {} } },
  });

  it("asks every input request; the answers come back under the target's keys", async () => {
    const h = await setUp();
    const collecting = h.questions.collectInput(
      [
        ['first', form('one?')],
        ['second', form('two?')],
      ],
      1,
      'state-1',
    );
    const [a, b] = await asked(h, 2);
    await answer(h, b!, { result: { action: 'accept', content: { n: 2 } } });
    await answer(h, a!, { result: { action: 'accept', content: { n: 1 } } });
    expect(await collecting).toEqual({
      responses: { first: { action: 'accept', content: { n: 1 } }, second: { action: 'accept', content: { n: 2 } } },
    });
    await over(h);
  });

  it('with nothing to ask (requestState only): retried at once, nothing stored', async () => {
    const h = await setUp();
    expect(await h.questions.collectInput([], 2, 'state')).toEqual({ responses: {} });
    expect(h.call.questions).toEqual([]);
    await over(h);
  });

  it('asking what the session did not declare: CrossEraInputUnsupported, nothing sent', async () => {
    const h = await setUp();
    const result = await h.questions.collectInput(
      [['s', { method: 'sampling/createMessage', params: { messages: [], maxTokens: 5 } }]],
      1,
      undefined,
    );
    expect(result).toMatchObject({ id: 7, error: { data: { inputRequests: ['sampling/createMessage'] } } });
    expect(h.call.questions).toEqual([]);
    await over(h);
  });

  it('answered with an error by the client: the call ends with InputRequestFailed naming what failed', async () => {
    const h = await setUp();
    const collecting = h.questions.collectInput([['k', form('ok?')]], 1, undefined);
    const [gatewayId] = await asked(h, 1);
    await answer(h, gatewayId!, { error: { code: -1, message: 'user closed the dialog' } });
    expect(await collecting).toMatchObject({
      id: 7,
      error: {
        data: { inputMethod: 'elicitation/create', clientError: { code: -1, message: 'user closed the dialog' } },
      },
    });
    await over(h);
  });

  it('unanswered by the pending timeout: the call ends as a pending timeout', async () => {
    const h = await setUp();
    const collecting = h.questions.collectInput([['k', form('ok?')]], 1, undefined);
    collecting.catch(() => undefined);
    await asked(h, 1);
    await jest.advanceTimersByTimeAsync(60_000);
    await expect(collecting).rejects.toThrow('input round ended: pending-timeout');
    expect(h.call.endReason).toBe('pending-timeout');
    await over(h);
  });

  it('released while it waits: RELEASED, the record of where it stands kept for the reconnect', async () => {
    const h = await setUp({ session: { clientResumes: true } });
    h.call.releasing = true;
    const collecting = h.questions.collectInput([['k', form('ok?')]], 1, undefined);
    await asked(h, 1);
    h.release.releaseWaits.abort();
    expect(await collecting).toBe(RELEASED);
    expect(h.release.step).toMatchObject({
      kind: 'input',
      round: 1,
      keys: [{ key: 'k', method: 'elicitation/create' }],
    });
    await over(h);
  });

  it("past the session's cap: refused before anything is asked", async () => {
    const h = await setUp({ config: { maxPendingRequestsPerSession: 1 } });
    await expect(
      h.questions.collectInput(
        [
          ['a', form('a')],
          ['b', form('b')],
        ],
        1,
        undefined,
      ),
    ).rejects.toThrow('Too many pending requests');
    expect(h.call.questions).toEqual([]);
    await over(h);
  });
});

describe('a per-user target the principal has not connected (targets[].userOAuth)', () => {
  /** Per-user connections as the question sees them: whether the principal is connected, and a consent link. */
  function connections(state: { connected: boolean; connectsAfterMs?: number; foundWhileReleased?: () => void }) {
    const waits: Array<{ principal: string; target: string }> = [];
    const fake = {
      has: (target: string) => target === 'demo',
      isConnected: async () => state.connected,
      consent: () => ({
        elicitationId: 'el-1',
        url: 'https://gateway.invalid/connect?link=sealed',
        message: 'Connect your account',
      }),
      linkTtlMs: 600_000,
      waitForConnection: async (principal: string, target: string, until: number, signal: AbortSignal) => {
        waits.push({ principal, target });
        // The look under way finds the connection stored just as the call is let go of.
        if (state.foundWhileReleased) {
          state.foundWhileReleased();
          return true;
        }
        if (state.connectsAfterMs === undefined) return false;
        await new Promise<void>((resolve) => setTimeout(resolve, state.connectsAfterMs));
        return !signal.aborted && Date.now() <= until;
      },
    };
    return { fake, waits };
  }

  async function withConnections(
    state: { connected: boolean; connectsAfterMs?: number; foundWhileReleased?: () => void },
    session: Partial<SessionRecord> = {},
  ) {
    const h = await setUp({ session: { clientCapabilities: { elicitation: { form: {}, url: {} } }, ...session } });
    const c = connections(state);
    // The instance's Targets hold the per-user connections (connections/user-connections.ts).
    Object.assign(h.deps.targets, { connections: c.fake });
    return { ...h, waits: c.waits };
  }

  it('already connected: nothing asked, the call goes on to the target', async () => {
    const h = await withConnections({ connected: true });
    expect(await h.questions.connect()).toBeUndefined();
    expect(h.call.questions).toEqual([]);
    await over(h);
  });

  it('a client without URL elicitation is not asked here (the target link answers it with -32042)', async () => {
    const h = await withConnections({ connected: false }, { clientCapabilities: { elicitation: { form: {} } } });
    expect(await h.questions.connect()).toBeUndefined();
    expect(h.call.questions).toEqual([]);
    await over(h);
  });

  it('asks with URL elicitation; accepted, waits for the connection, tells the client it is complete, and goes on', async () => {
    const h = await withConnections({ connected: false, connectsAfterMs: 5000 });
    const connecting = h.questions.connect();
    const [gatewayId] = await asked(h, 1);
    expect(h.text.messages()[0]).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'url', elicitationId: 'el-1', url: 'https://gateway.invalid/connect?link=sealed' },
    });
    await answer(h, gatewayId!, { result: { action: 'accept' } });
    await jest.advanceTimersByTimeAsync(5000);
    expect(await connecting).toBeUndefined();
    expect(h.waits).toEqual([{ principal: 'alice', target: 'demo' }]);
    await h.text.until(() => h.text.messages().length >= 3);
    expect(h.text.messages().slice(1)).toEqual([
      { jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId: 'el-1' } },
      // Its own tools replace the connect tool in the list.
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
    ]);
    await over(h);
  });

  it('released as the connection is found: RELEASED, and the completion is left to the reconnect (told once)', async () => {
    const state: { connected: boolean; foundWhileReleased?: () => void } = { connected: false };
    const h = await withConnections(state, { clientResumes: true });
    state.foundWhileReleased = () => {
      h.call.releasing = true;
      h.release.releaseWaits.abort();
    };
    const connecting = h.questions.connect();
    const [gatewayId] = await asked(h, 1);
    await answer(h, gatewayId!, { result: { action: 'accept' } });
    expect(await connecting).toBe(RELEASED);
    // The holder that takes the call over finds the connection and tells the client; this one does not.
    expect(h.text.messages().filter((m) => m.method === 'notifications/elicitation/complete')).toEqual([]);
    expect(h.release.step).toMatchObject({ kind: 'connect', elicitationId: 'el-1' });
    await over(h);
  });

  it('declined: ConnectionNotMade, nothing sent to the target and no wait', async () => {
    const h = await withConnections({ connected: false });
    const connecting = h.questions.connect();
    const [gatewayId] = await asked(h, 1);
    await answer(h, gatewayId!, { result: { action: 'decline' } });
    expect(await connecting).toMatchObject({
      id: 7,
      error: { message: expect.stringContaining('did not connect your account there (decline)') },
    });
    expect(h.waits).toEqual([]);
    await over(h);
  });

  it('accepted, but the connection never stored: timed out, with a new link to ask for', async () => {
    const h = await withConnections({ connected: false });
    const connecting = h.questions.connect();
    const [gatewayId] = await asked(h, 1);
    await answer(h, gatewayId!, { result: { action: 'accept' } });
    expect(await connecting).toMatchObject({
      id: 7,
      error: { code: -32001, message: expect.stringContaining('call again for a new link') },
    });
    await over(h);
  });
});

describe('a per-user target', () => {
  it('is not asked for when the target is not one (no connections configured): the call goes on', async () => {
    const h = await setUp();
    expect(await h.questions.connect()).toBeUndefined();
    expect(h.call.questions).toEqual([]);
    await over(h);
  });
});
