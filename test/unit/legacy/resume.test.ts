import { ANONYMOUS_IDENTITY } from '../../../lambda/auth/identity';
import { resumeProofKey } from '../../../lambda/legacy/release-policy';
import { resumeStream } from '../../../lambda/legacy/resume';
import { WaitingCall, type WaitingCallSnapshot } from '../../../lambda/legacy/waiting-call';
import { systemClock } from '../../../lambda/scheduling/clock';
import { newPendingRecord, withoutHolder } from '../../../lambda/state/records';
import type { SessionRecord, StreamEventRecord } from '../../../lambda/state/store';
import { exchange, legacyDeps, ScriptedLink, storedSession } from '../../support/legacy-deps';
import { SseText, sseMessages } from '../../support/sse-text';

/**
 * `GET /mcp` with `Last-Event-ID` (legacy/resume.ts) over the memory store: every reconnect ends
 * definitely — the events after the id and the stream's end, the request's StreamExpired error when
 * only the head is left, 400 for an id naming the end or no stream of this session — and a reconnect
 * that got what it missed proves its client resumes.
 */

const STREAM = 'streamRRRRRRRRRR';

async function setUp(config: Parameters<typeof legacyDeps>[0] = {}, session: Partial<SessionRecord> = {}) {
  const t = legacyDeps(config);
  const loaded = await storedSession(t.store, session);
  const put = (event: Partial<StreamEventRecord> & { seq: number }) =>
    t.store.putStreamEvent(loaded.session.id, {
      streamId: STREAM,
      data: `{"jsonrpc":"2.0","method":"notifications/message","params":{"n":${event.seq}}}`,
      expiresAt: loaded.session.expiresAt,
      ...event,
    });
  return { ...t, loaded, put };
}

/** A call's stream as its invocation left it: head (request 7), two events, and its end when `ended`. */
async function keptStream(put: (event: Partial<StreamEventRecord> & { seq: number }) => Promise<void>, ended: boolean) {
  await put({ seq: 0, data: '', requestId: 7, ended });
  await put({ seq: 1 });
  await put({ seq: 2 });
  if (ended) await put({ seq: 3, data: '{"jsonrpc":"2.0","id":7,"result":{"content":[]}}', end: true });
}

async function bodyOf(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>;
}

afterEach(() => jest.useRealTimers());

describe('a reconnect that names no stream it can resume', () => {
  it('an id the gateway never issued: 400, nothing read', async () => {
    const { deps, loaded, store } = await setUp();
    const reads = jest.spyOn(store, 'readStream');
    const response = await resumeStream(deps, loaded, 'not-an-event-id', exchange(), ANONYMOUS_IDENTITY);
    expect(response.status).toBe(400);
    expect(await bodyOf(response)).toMatchObject({
      error: { code: -32600, message: expect.stringContaining('names no stream') },
    });
    expect(reads).not.toHaveBeenCalled();
  });

  it("a well-formed id of which nothing is kept (another session's stream, or one long gone): 400", async () => {
    const { deps, loaded } = await setUp();
    const response = await resumeStream(deps, loaded, `${STREAM}.2`, exchange(), ANONYMOUS_IDENTITY);
    expect(response.status).toBe(400);
    expect(response.headers.get('mcp-session-id')).toBe(loaded.session.id);
  });

  it('an id naming the end itself (the client has the final message): 400', async () => {
    const { deps, loaded, put } = await setUp();
    await keptStream(put, true);
    const response = await resumeStream(deps, loaded, `${STREAM}.3`, exchange(), ANONYMOUS_IDENTITY);
    expect(response.status).toBe(400);
    expect(await bodyOf(response)).toMatchObject({ error: { message: expect.stringContaining('stream that ended') } });
  });

  it('a store that cannot be read: 503, retryable', async () => {
    const { deps, loaded, store } = await setUp();
    store.down = true;
    expect((await resumeStream(deps, loaded, `${STREAM}.1`, exchange(), ANONYMOUS_IDENTITY)).status).toBe(503);
  });
});

describe('a reconnect to a stream of which only the head is left', () => {
  it("gets the request's StreamExpired error as the stream's new end, with the next id", async () => {
    const { deps, loaded, put } = await setUp();
    await put({ seq: 0, data: '', requestId: 7, ended: true });
    const response = await resumeStream(deps, loaded, `${STREAM}.4`, exchange(), ANONYMOUS_IDENTITY);
    expect(response.status).toBe(200);
    const text = await new SseText(response).all();
    expect(text).toMatch(new RegExp(`^id: ${STREAM}\\.5\nevent: message\ndata: `));
    const [message] = sseMessages(text);
    expect(message).toMatchObject({ id: 7, error: { code: -32603, data: { type: 'StreamExpired' } } });
  });

  it('keeps that error as the end, so the next reconnect from it gets 400 instead of the error again', async () => {
    const { deps, loaded, put, store } = await setUp();
    await put({ seq: 0, data: '', requestId: 'req-1', ended: true });
    await new SseText(await resumeStream(deps, loaded, `${STREAM}.2`, exchange(), ANONYMOUS_IDENTITY)).all();
    const [, end] = await store.readStream(loaded.session.id, STREAM, 0);
    expect(end).toMatchObject({ seq: 3, end: true });
    expect((await resumeStream(deps, loaded, `${STREAM}.3`, exchange(), ANONYMOUS_IDENTITY)).status).toBe(400);
  });

  it('still ends with the error when its end cannot be kept (a later reconnect gets it again)', async () => {
    const { deps, loaded, put, store, logger } = await setUp();
    await put({ seq: 0, data: '', requestId: 7, ended: true });
    jest.spyOn(store, 'endStream').mockRejectedValue(new Error('DynamoDB is down'));
    const text = await new SseText(
      await resumeStream(deps, loaded, `${STREAM}.0`, exchange(), ANONYMOUS_IDENTITY),
    ).all();
    expect(text).toContain('StreamExpired');
    expect(logger.messages('warn')).toEqual(['keeping the end of an expired stream failed']);
  });
});

describe('a reconnect to a call still going whose last events expired', () => {
  it('is not told the result is lost, and writes no end into the live stream: it follows it until the deadline', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const { deps, loaded, put, store } = await setUp();
    await put({ seq: 0, data: '', requestId: 7 });
    await put({ seq: 1, expiresAt: Math.floor(Date.now() / 1000) - 1 });
    const ends = jest.spyOn(store, 'endStream');
    const sse = new SseText(await resumeStream(deps, loaded, `${STREAM}.1`, exchange(2000), ANONYMOUS_IDENTITY));
    await jest.advanceTimersByTimeAsync(2000);
    const text = await sse.all();
    expect(text).not.toContain('StreamExpired');
    expect(text).toBe(`id: ${STREAM}.1\ndata: \n\n`);
    expect(ends).not.toHaveBeenCalled();
  });
});

describe('a reconnect to a stream that is kept', () => {
  it('opens with the id it resumed from, replays what came after it with their ids, ends with the final message', async () => {
    const { deps, loaded, put } = await setUp();
    await keptStream(put, true);
    const response = await resumeStream(deps, loaded, `${STREAM}.1`, exchange(), ANONYMOUS_IDENTITY);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const sse = new SseText(response);
    const text = await sse.all();
    expect(text.startsWith(`id: ${STREAM}.1\ndata: \n\n`)).toBe(true);
    expect(text.match(/^id: .+$/gm)).toEqual([`id: ${STREAM}.1`, `id: ${STREAM}.2`, `id: ${STREAM}.3`]);
    expect(sse.messages().map((m) => m.id ?? (m.params as { n: number }).n)).toEqual([2, 7]);
  });

  it('proves its client resumes (proven mode): the session says so, and a proof for its principal and clientInfo', async () => {
    const { deps, loaded, put, store } = await setUp();
    await keptStream(put, true);
    await new SseText(await resumeStream(deps, loaded, `${STREAM}.1`, exchange(), ANONYMOUS_IDENTITY)).all();
    expect(loaded.session.clientResumes).toBe(true);
    expect((await store.loadSession(loaded.session.id))?.session.clientResumes).toBe(true);
    expect(await store.hasResumeProof(resumeProofKey('alice', { name: 'unit-client', version: '1.0.0' }))).toBe(true);
  });

  it('writes the proof once per session, not for a client already proven', async () => {
    const { deps, loaded, put, store } = await setUp({}, { clientResumes: true });
    await keptStream(put, true);
    const marks = jest.spyOn(store, 'markClientResumes');
    await new SseText(await resumeStream(deps, loaded, `${STREAM}.1`, exchange(), ANONYMOUS_IDENTITY)).all();
    expect(marks).not.toHaveBeenCalled();
  });

  it("writes no proof under streamRelease always (nothing decides by it), though the session's calls now count it", async () => {
    const { deps, loaded, put, store } = await setUp({ streamRelease: 'always' });
    await keptStream(put, true);
    const marks = jest.spyOn(store, 'markClientResumes');
    await new SseText(await resumeStream(deps, loaded, `${STREAM}.1`, exchange(), ANONYMOUS_IDENTITY)).all();
    expect(marks).not.toHaveBeenCalled();
    expect(loaded.session.clientResumes).toBe(true);
  });

  it('follows a stream still being written until its end, as the call writes it on any instance', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const { deps, loaded, put } = await setUp();
    await keptStream(put, false);
    const sse = new SseText(await resumeStream(deps, loaded, `${STREAM}.2`, exchange(), ANONYMOUS_IDENTITY));
    await put({ seq: 3 });
    await jest.advanceTimersByTimeAsync(100);
    await sse.until((text) => text.includes(`id: ${STREAM}.3`));
    await put({ seq: 4, data: '{"jsonrpc":"2.0","id":7,"result":{}}', end: true });
    await jest.advanceTimersByTimeAsync(1000);
    const text = await sse.all();
    expect(text.match(/^id: .+$/gm)).toEqual([`id: ${STREAM}.2`, `id: ${STREAM}.3`, `id: ${STREAM}.4`]);
  });

  it("closes without the end at the invocation's deadline, having proven nothing when nothing new came", async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const { deps, loaded, put, store } = await setUp();
    await keptStream(put, false);
    const marks = jest.spyOn(store, 'markClientResumes');
    const sse = new SseText(await resumeStream(deps, loaded, `${STREAM}.2`, exchange(2000), ANONYMOUS_IDENTITY));
    await jest.advanceTimersByTimeAsync(2000);
    const text = await sse.all();
    // Only the id it came with: it reconnects from there.
    expect(text).toBe(`id: ${STREAM}.2\ndata: \n\n`);
    expect(marks).not.toHaveBeenCalled();
  });

  it('ends when the client leaves, reading the log no more', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const { deps, loaded, put, store } = await setUp();
    await keptStream(put, false);
    const sse = new SseText(await resumeStream(deps, loaded, `${STREAM}.2`, exchange(), ANONYMOUS_IDENTITY));
    await sse.until((text) => text.length > 0);
    const reads = jest.spyOn(store, 'readStream');
    await sse.cancel();
    await jest.advanceTimersByTimeAsync(5000);
    expect(reads).not.toHaveBeenCalled();
  });
});

describe('a reconnect to a call no invocation holds', () => {
  const KEY_ASKED = 'env';

  /**
   * A call of a 2026-07-28 target released in its first input round: its stream kept (head, the
   * question at seq 1), its question's record, and the waiting call's record saying released at seq 2.
   */
  async function released(answered: boolean, options: { holderAlive?: boolean } = {}) {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const t = await setUp();
    t.fake.links.set(
      'demo',
      new ScriptedLink(
        'demo',
        async (request) => ({
          jsonrpc: '2.0',
          id: request.id ?? 0,
          result: { content: [{ type: 'text', text: 'deployed' }] },
        }),
        'modern',
      ),
    );
    const question = withoutHolder(
      newPendingRecord(Date.now(), 300, {
        kind: 'question',
        method: 'elicitation/create',
        target: 'demo',
        clientRequestId: 7,
        session: t.loaded.session,
      }),
    );
    await t.store.putPending(t.loaded.session, question);
    if (answered) {
      const answer = { jsonrpc: '2.0', id: question.gatewayId, result: { action: 'accept', content: { env: 'prod' } } };
      await t.store.answerPending(t.loaded.session.id, question.gatewayId, JSON.stringify(answer));
    }
    await t.put({ seq: 0, data: '', requestId: 7 });
    await t.put({
      seq: 1,
      data: JSON.stringify({ jsonrpc: '2.0', id: question.gatewayId, method: 'elicitation/create', params: {} }),
    });
    const snapshot: WaitingCallSnapshot = {
      call: { target: 'demo', method: 'tools/call', clientRequestId: 7, params: { name: 'deploy', arguments: {} } },
      step: {
        kind: 'input',
        round: 1,
        requestState: 'state-1',
        keys: [{ key: KEY_ASKED, gatewayId: question.gatewayId, method: 'elicitation/create', askedAt: Date.now() }],
      },
      relayed: [],
      records: [question.gatewayId],
      leased: [],
    };
    const holder = new WaitingCall(t.store, t.loaded.session.id, STREAM, () => t.loaded.session.expiresAt, systemClock);
    await holder.hold(snapshot, 2);
    if (!options.holderAlive) await holder.release(snapshot, 2);
    return { ...t, question };
  }

  it('takes the call over and goes on with it on this stream: the answers to the target, its result as the stream end', async () => {
    const h = await released(true);
    const sse = new SseText(await resumeStream(h.deps, h.loaded, `${STREAM}.1`, exchange(), ANONYMOUS_IDENTITY));
    await jest.advanceTimersByTimeAsync(1000);
    const text = await sse.all();
    expect(text.startsWith(`id: ${STREAM}.1\ndata: \n\n`)).toBe(true);
    expect(sse.messages()).toEqual([
      { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'deployed' }] } },
    ]);
    expect(text.match(/^id: .+$/gm)).toEqual([`id: ${STREAM}.1`, `id: ${STREAM}.2`]);
    // The target was called again with the answer under its key and its requestState.
    expect(h.fake.links.get('demo')!.calls.map((c) => c.request)).toEqual([
      {
        id: 'c.n.7.r1',
        method: 'tools/call',
        params: {
          name: 'deploy',
          arguments: {},
          inputResponses: { [KEY_ASKED]: { action: 'accept', content: { env: 'prod' } } },
          requestState: 'state-1',
        },
      },
    ]);
    // Nothing of the call is left but its end (and its head): no waiting call, no pending record.
    expect(await h.store.getWaitingCall(h.loaded.session.id, STREAM)).toBeUndefined();
    expect(await h.store.countPending(h.loaded.session.id, 100)).toBe(0);
    expect((await h.store.readStream(h.loaded.session.id, STREAM, 0)).map((e) => [e.seq, e.end === true])).toEqual([
      [0, false],
      [2, true],
    ]);
    // A reconnect that went on with a call proves its client resumes.
    expect(h.loaded.session.clientResumes).toBe(true);
  });

  it("released while its 2025 target's stream was read: the target read again from its last event id, in its session", async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const t = await setUp();
    const link = t.fake.links.get('demo')!;
    link.script = async (request) => ({ jsonrpc: '2.0', id: request.id ?? 0, result: { content: [] } });
    await t.put({ seq: 0, data: '', requestId: 7 });
    await t.put({ seq: 1 });
    const snapshot: WaitingCallSnapshot = {
      call: { target: 'demo', method: 'tools/call', clientRequestId: 7, params: { name: 'slow' } },
      step: {
        kind: 'target-stream',
        requestId: 'c.n.7',
        lastEventId: 'target-event-12',
        targetSessionId: 'demo-session',
      },
      relayed: [],
      records: [],
      leased: [],
    };
    const holder = new WaitingCall(t.store, t.loaded.session.id, STREAM, () => t.loaded.session.expiresAt, systemClock);
    await holder.hold(snapshot, 2);
    await holder.release(snapshot, 2);
    const sse = new SseText(await resumeStream(t.deps, t.loaded, `${STREAM}.1`, exchange(), ANONYMOUS_IDENTITY));
    await jest.advanceTimersByTimeAsync(1000);
    await sse.all();
    expect(sse.messages()).toEqual([{ jsonrpc: '2.0', id: 7, result: { content: [] } }]);
    const [call] = link.calls;
    expect(call!.request).toEqual({ id: 'c.n.7', method: 'tools/call', params: { name: 'slow' } });
    expect(call!.options.resumeFrom).toEqual({ lastEventId: 'target-event-12', targetSessionId: 'demo-session' });
  });

  it('still unanswered: held a moment on this stream, then let go again (retry) for the next reconnect', async () => {
    const h = await released(false);
    const sse = new SseText(await resumeStream(h.deps, h.loaded, `${STREAM}.1`, exchange(), ANONYMOUS_IDENTITY));
    await jest.advanceTimersByTimeAsync(1000);
    const text = await sse.all();
    expect(text).toMatch(/retry: \d+\n\n$/);
    expect(sse.messages()).toEqual([]);
    expect(await h.store.getWaitingCall(h.loaded.session.id, STREAM)).toMatchObject({ state: 'released' });
    expect(h.fake.links.get('demo')!.calls).toEqual([]);
  });

  it('held by a live instance: followed from the log, never taken over', async () => {
    const h = await released(true, { holderAlive: true });
    const sse = new SseText(await resumeStream(h.deps, h.loaded, `${STREAM}.1`, exchange(3000), ANONYMOUS_IDENTITY));
    await jest.advanceTimersByTimeAsync(3000);
    await sse.all();
    expect(h.fake.links.get('demo')!.calls).toEqual([]);
    expect(await h.store.getWaitingCall(h.loaded.session.id, STREAM)).toMatchObject({ state: 'held' });
  });
});
