import { CallRelease, RELEASE_BEFORE_DEADLINE_MS } from '../../../lambda/legacy/call-release';
import { openStreamLog } from '../../../lambda/legacy/stream-log';
import type { WaitingStep } from '../../../lambda/legacy/waiting-call';
import { systemClock } from '../../../lambda/scheduling/clock';
import { type CallHarness, callHarness, clientSide } from '../../support/call-harness';
import { QUIET } from '../../support/in-process';
import { ScriptedLink } from '../../support/legacy-deps';
import { relayedRecord } from '../../support/pending-records';

/**
 * Release while waiting (legacy/call-release.ts): a call that waits is written down with where it
 * stands; a client trusted to resume is let go of after the grace period (or when it left), any client
 * just before the deadline; what the release writes, and what stops it.
 */

const question: WaitingStep = {
  kind: 'input',
  round: 1,
  keys: [{ key: 'k', gatewayId: 'gw-Qaaaaaaaaaaaaaaaaaaaaa', method: 'elicitation/create', askedAt: 1 }],
};

async function setUp(
  options: Parameters<typeof callHarness>[0] & { resumable?: boolean; trusted?: boolean } = {},
): Promise<CallHarness & { release: CallRelease; streamId?: string }> {
  const h = await callHarness({
    ...options,
    session: { clientResumes: options.trusted ?? true, ...options.session },
  });
  const log =
    options.resumable === false
      ? undefined
      : openStreamLog(
          h.store,
          h.loaded.session,
          { ttlSeconds: 600, retainSeconds: 60, maxBytes: 100_000, clock: systemClock },
          QUIET,
        );
  h.call.out = clientSide(log).out;
  return { ...h, release: new CallRelease(h.call), streamId: log?.streamId };
}

async function over(h: CallHarness): Promise<void> {
  h.call.finished = true;
  await h.call.holder.stop();
}

describe('a call that waits', () => {
  it('is written down, held by this invocation, with where it stands and the seq its stream is at', async () => {
    const h = await setUp();
    h.call.relayed.set('gw-relayed', { method: 'elicitation/create', askedAt: 5 });
    h.call.questions.push('gw-question');
    await h.release.holdWaiting(question);
    const record = await h.store.getWaitingCall(h.loaded.session.id, h.streamId!);
    expect(record).toMatchObject({ state: 'held', seq: 1 });
    expect(JSON.parse(record!.snapshot)).toMatchObject({
      call: { target: 'demo', method: 'tools/call', clientRequestId: 7, params: { name: 'deploy' } },
      step: question,
      relayed: [{ gatewayId: 'gw-relayed', method: 'elicitation/create', askedAt: 5 }],
      records: ['gw-relayed', 'gw-question'],
      release: { now: { early: true } },
    });
    await over(h);
  });

  it('is not written down when its stream cannot be resumed (nothing could take it over)', async () => {
    const h = await setUp({ resumable: false });
    const writes = jest.spyOn(h.store, 'swapWaitingCall');
    await h.release.holdWaiting(question);
    expect(writes).not.toHaveBeenCalled();
    expect(h.release.step).toEqual(question);
    await over(h);
  });

  it('is not written down under streamRelease never (it is never released)', async () => {
    const h = await setUp({ config: { streamRelease: 'never' } });
    const writes = jest.spyOn(h.store, 'swapWaitingCall');
    await h.release.holdWaiting(question);
    expect(writes).not.toHaveBeenCalled();
    await over(h);
  });

  it("waiting for a target's stream, is written only once the stream gave an event id to read it again from", async () => {
    const h = await setUp();
    const writes = jest.spyOn(h.store, 'swapWaitingCall');
    await h.release.holdWaiting({ kind: 'target-stream', requestId: 'c.n.7', lastEventId: '' });
    expect(writes).not.toHaveBeenCalled();
    h.call.cursor.lastEventId = 'e-4';
    expect(h.release.currentStep()).toEqual({ kind: 'target-stream', requestId: 'c.n.7', lastEventId: 'e-4' });
    await over(h);
  });

  it('whose record cannot be written stays held here (warned), and is never released', async () => {
    const h = await setUp();
    h.store.down = true;
    await h.release.holdWaiting(question);
    expect(h.logger.messages('warn')).toEqual(['the waiting call was not recorded; it is held']);
    h.store.down = false;
    h.call.phase = 'question-wait';
    await h.clock.advance(10_000);
    expect(h.call.releasing).toBe(false);
    await over(h);
  });
});

describe('the release of a waiting call', () => {
  it('of a client trusted to resume: after streamReleaseAfterSeconds, not a moment before — the waits end', async () => {
    const h = await setUp({ config: { streamReleaseAfterSeconds: 2 } });
    h.call.phase = 'question-wait';
    await h.release.holdWaiting(question);
    await h.clock.advance(1999);
    expect(h.call.releasing).toBe(false);
    await h.clock.advance(1);
    expect(h.call.releasing).toBe(true);
    expect(h.release.releaseWaits.signal.aborted).toBe(true);
    expect(h.release.detach.signal.aborted).toBe(true);
    await over(h);
  });

  it('of a client not trusted to resume: not early, only just before the deadline', async () => {
    const h = await setUp({ trusted: false, deadlineMs: 10_000 });
    h.call.phase = 'question-wait';
    await h.release.holdWaiting(question);
    h.release.scheduleBeforeDeadline(10_000 - RELEASE_BEFORE_DEADLINE_MS);
    await h.clock.advance(10_000 - RELEASE_BEFORE_DEADLINE_MS - 1);
    expect(h.call.releasing).toBe(false);
    h.release.tryRelease('the client left its stream'); // not trusted: leaving does not release it either
    expect(h.call.releasing).toBe(false);
    await h.clock.advance(1);
    expect(h.call.releasing).toBe(true);
    await over(h);
  });

  it('taken over by a reconnect and still waiting: let go again soon (200 ms), not after another grace period', async () => {
    const trusted = { prime: true, early: true, atDeadline: true };
    const h = await setUp({
      trusted: false,
      config: { streamReleaseAfterSeconds: 5 },
      input: {
        // Taken over: the call goes on with the decision it carried (for a client that resumed).
        resumed: {
          waiting: undefined as never, // this test's release writes a record of its own
          stream: undefined as never,
          snapshot: {
            call: { target: 'demo', method: 'tools/call', clientRequestId: 7, params: {} },
            step: question,
            relayed: [],
            records: [],
            leased: [],
            release: { now: trusted, onceResumed: trusted },
          },
        },
      },
    });
    h.call.phase = 'question-wait';
    await h.release.holdWaiting(question);
    await h.clock.advance(199);
    expect(h.call.releasing).toBe(false);
    await h.clock.advance(1);
    expect(h.call.releasing).toBe(true);
    await over(h);
  });

  it('not while an answer is on its way to the target (this invocation reads what the target does next)', async () => {
    const h = await setUp();
    h.call.phase = 'question-wait';
    await h.release.holdWaiting(question);
    h.call.delivering.add('gw-x');
    h.release.tryRelease('test');
    expect(h.call.releasing).toBe(false);
    h.call.delivering.clear();
    h.release.tryRelease('test');
    expect(h.call.releasing).toBe(true);
    await over(h);
  });

  it("reading a target's stream: only a 2025 target's, from an event id, and early only if the target allows it", async () => {
    const h = await setUp({
      config: { targets: [{ name: 'demo', url: 'https://demo.invalid/mcp', releaseCalls: false }] },
    });
    h.call.phase = 'target';
    h.call.targetLink = new ScriptedLink('demo', async () => ({ jsonrpc: '2.0', id: 0, result: {} }));
    h.call.cursor.lastEventId = 'e-1';
    await h.release.holdWaiting({ kind: 'target-stream', requestId: 'c.n.7', lastEventId: 'e-1' });
    h.release.tryRelease('the client left its stream');
    expect(h.call.releasing).toBe(false); // releaseCalls: false
    h.release.tryRelease('the invocation is about to time out', true);
    expect(h.call.releasing).toBe(true);
    await over(h);
  });

  it("a 2026-07-28 target's call is not released while it runs (nothing to read it again from)", async () => {
    const h = await setUp();
    h.call.phase = 'target';
    h.call.targetLink = new ScriptedLink('demo', async () => ({ jsonrpc: '2.0', id: 0, result: {} }), 'modern');
    await h.release.holdWaiting(question);
    h.release.tryRelease('test', true);
    expect(h.call.releasing).toBe(false);
    await over(h);
  });

  it("writes the record released and takes the holder lease off the call's records: answers then wait for the reconnect", async () => {
    const h = await setUp();
    const record = relayedRecord({ principal: 'alice', sessionExpiresAt: h.loaded.session.expiresAt });
    await h.store.putPending(h.loaded.session, record);
    h.call.leased.add(record.gatewayId);
    await h.release.holdWaiting(question);
    expect(await h.release.writeRelease(question)).toBe(true);
    expect(await h.store.getWaitingCall(h.loaded.session.id, h.streamId!)).toMatchObject({ state: 'released' });
    expect((await h.store.getPending(h.loaded.session.id, record.gatewayId))?.holderUntil).toBeUndefined();
    await over(h);
  });

  it('cannot be written without a record, nor when the store fails: false, the call goes on here', async () => {
    const h = await setUp();
    expect(await h.release.writeRelease(question)).toBe(false); // never held
    await h.release.holdWaiting(question);
    h.store.down = true;
    expect(await h.release.writeRelease(question)).toBe(false);
    expect(h.logger.messages('warn')).toEqual(['releasing the call failed']);
    await over(h);
  });

  it('held on after a release that failed: fresh waits, and the release tried again after the grace period', async () => {
    const h = await setUp({ config: { streamReleaseAfterSeconds: 1 } });
    h.call.phase = 'question-wait';
    await h.release.holdWaiting(question);
    await h.clock.advance(1000);
    expect(h.call.releasing).toBe(true);
    const aborted = h.release.releaseWaits;
    h.release.holdOn();
    expect(h.call.releasing).toBe(false);
    expect(h.release.releaseWaits).not.toBe(aborted);
    expect(h.release.releaseWaits.signal.aborted).toBe(false);
    await h.clock.advance(1000);
    expect(h.call.releasing).toBe(true);
    await over(h);
  });

  it("ends with the operator's retry; reading a target that asked for a longer one, with the target's", async () => {
    const h = await setUp({ config: { streamReleaseRetryMs: 2000 } });
    expect(h.release.retryMs()).toBe(2000);
    h.call.cursor.retryMs = 5000;
    expect(h.release.retryMs()).toBe(2000); // not waiting for the target
    h.release.step = { kind: 'target-stream', requestId: 'c.n.7', lastEventId: 'e' };
    expect(h.release.retryMs()).toBe(5000);
    h.call.cursor.retryMs = 500;
    expect(h.release.retryMs()).toBe(2000);
    await over(h);
  });
});

describe('the record of a waiting call while it is held', () => {
  it('is renewed with the holder lease, and not while the call is being let go of', async () => {
    const h = await setUp();
    await h.release.holdWaiting(question);
    const renewals = jest.spyOn(h.store, 'swapWaitingCall');
    h.release.renewWaitingCall();
    await h.call.holder.drain();
    expect(renewals).toHaveBeenCalledTimes(1);
    h.call.releasing = true;
    h.release.renewWaitingCall();
    await h.call.holder.drain();
    expect(renewals).toHaveBeenCalledTimes(1);
    await over(h);
  });

  it('goes when the call is over', async () => {
    const h = await setUp();
    await h.release.holdWaiting(question);
    await h.release.finish();
    expect(await h.store.getWaitingCall(h.loaded.session.id, h.streamId!)).toBeUndefined();
    await over(h);
  });

  it('at a shutdown, a waiting call is released whatever the client is trusted to do; none under never', async () => {
    const h = await setUp({ trusted: false });
    h.call.phase = 'question-wait';
    await h.release.holdWaiting(question);
    expect(await h.release.releaseForShutdown()).toBe(true);
    await over(h);
    const never = await setUp({ config: { streamRelease: 'never' } });
    never.call.phase = 'question-wait';
    expect(await never.release.releaseForShutdown()).toBe(false);
    await over(never);
  });
});
