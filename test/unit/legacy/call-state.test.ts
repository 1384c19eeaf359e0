import { openStreamLog } from '../../../lambda/legacy/stream-log';
import { systemClock } from '../../../lambda/scheduling/clock';
import { newPendingRecord, withAnswerPath } from '../../../lambda/state/records';
import { callHarness, clientSide } from '../../support/call-harness';
import { QUIET } from '../../support/in-process';
import { relayedRecord } from '../../support/pending-records';

/**
 * What the parts of one relayed call share (legacy/call-state.ts): the call's ids, its release
 * decision made once, its records (which carry the holder's lease), the order its events reach the
 * client, and the one way it is stopped early.
 */

describe("a relayed call's shared state", () => {
  it("forwards the call under the id derived from the client's, and maps progress to a token of its own", async () => {
    const { call } = await callHarness({ params: { name: 'deploy', _meta: { progressToken: 'client-token' } } });
    expect(call.targetCallId).toBe('c.n.7');
    expect(call.progress.clientToken).toBe('client-token');
    expect(call.progress.targetToken).toMatch(/^gw-progress-/);
  });

  it('has no progress token of its own when the client asked for none', async () => {
    const { call } = await callHarness();
    expect(call.progress.targetToken).toBeUndefined();
  });

  it('decides the release once, from the session: a client of streamReleaseClients is released early, primed', async () => {
    const { call, loaded } = await callHarness({ session: { clientInfo: { name: 'claude-code', version: '2.1.0' } } });
    expect(call.decision).toEqual({ prime: true, early: true, atDeadline: true });
    // Decided once: what the session says later changes nothing for this call.
    loaded.session.clientInfo = { name: 'someone-else', version: '1.0.0' };
    expect(call.decision.early).toBe(true);
  });

  it('an unknown client is held until just before the deadline, and not primed', async () => {
    const { call } = await callHarness();
    expect(call.decision).toEqual({ prime: false, early: false, atDeadline: true });
    // What it carries for a takeover: the client that reconnected resumes.
    expect(call.release.onceResumed).toEqual({ prime: true, early: true, atDeadline: true });
  });

  it('a call taken over goes on with the decision it carried, as for a client that resumed', async () => {
    const carried = {
      now: { prime: false, early: false, atDeadline: false },
      onceResumed: { prime: true, early: false, atDeadline: true },
    };
    const { call } = await callHarness({
      input: {
        resumed: {
          waiting: undefined as never,
          stream: undefined as never,
          snapshot: {
            call: { target: 'demo', method: 'tools/call', clientRequestId: 7, params: {} },
            step: { kind: 'input', round: 1, keys: [] },
            relayed: [],
            records: [],
            leased: [],
            release: carried,
          },
        },
      },
    });
    expect(call.decision).toEqual(carried.onceResumed);
  });

  it('stops once: the reason is kept, the target told through its abort signal; a second stop changes nothing', async () => {
    const { call } = await callHarness();
    call.stop('client-cancelled', 'the user pressed stop');
    call.stop('deadline');
    expect(call.endReason).toBe('client-cancelled');
    expect(call.targetAbort.signal.aborted).toBe(true);
    expect(call.targetAbort.signal.reason).toBe('the user pressed stop');
  });

  it('is not stopped by the deadline while a release is under way (the call is handed on), but is by anything else', async () => {
    const { call } = await callHarness();
    call.releasing = true;
    call.stop('deadline');
    expect(call.endReason).toBeUndefined();
    expect(call.targetAbort.signal.aborted).toBe(false);
    call.stop('shutdown');
    expect(call.endReason).toBe('shutdown');
    expect(call.targetAbort.signal.reason).toBe('gateway: shutdown');
  });

  it('does not stop a call that finished', async () => {
    const { call } = await callHarness();
    call.finished = true;
    call.stop('client-gone');
    expect(call.endReason).toBeUndefined();
  });

  it("gives a record the holder's lease unless the call can be taken over (resumable stream, early release, resumable target)", async () => {
    const held = await callHarness();
    held.call.out = clientSide().out; // not resumable
    const record = relayedRecord();
    expect(held.call.withHolder(record, true)).toBe(record);
    expect(held.call.leased.has(record.gatewayId)).toBe(true);

    const trusted = await callHarness({ session: { clientResumes: true } });
    trusted.call.out = clientSide(
      openStreamLog(
        trusted.store,
        trusted.loaded.session,
        {
          ttlSeconds: 600,
          retainSeconds: 60,
          maxBytes: 100_000,
          clock: systemClock,
        },
        QUIET,
      ),
    ).out;
    const other = relayedRecord();
    const free = trusted.call.withHolder(other, true);
    expect(free.holderUntil).toBeUndefined();
    expect(free.gatewayId).toBe(withAnswerPath(other.gatewayId, 'read'));
    expect(trusted.call.leased.size).toBe(0);
    // The same call, asking while its target's stream could not be resumed elsewhere: leased.
    const third = relayedRecord();
    expect(trusted.call.withHolder(third, false)).toBe(third);
    expect(trusted.call.leased.has(third.gatewayId)).toBe(true);
  });

  it("a question held for nobody keeps its own id as the target's id (it has no target request)", async () => {
    const { call, store, loaded } = await callHarness({ session: { clientResumes: true } });
    call.out = clientSide(
      openStreamLog(
        store,
        loaded.session,
        { ttlSeconds: 600, retainSeconds: 60, maxBytes: 1e5, clock: systemClock },
        QUIET,
      ),
    ).out;
    const question = newPendingRecord(Date.now(), 60, {
      kind: 'question',
      method: 'elicitation/create',
      target: 'demo',
      clientRequestId: 7,
    });
    const free = call.withHolder(question, true);
    expect(free.targetRequestId).toBe(free.gatewayId);
  });

  it('counts every record of the call as pending: relayed, questions and those delivered', async () => {
    const { call } = await callHarness();
    call.relayed.set('gw-a', { method: 'elicitation/create', askedAt: 1 });
    call.questions.push('gw-q');
    call.delivered.push('gw-d');
    expect(call.pendingIds()).toEqual(['gw-a', 'gw-q', 'gw-d']);
  });

  it('hands the stream log the records its end removes, read when it ends (not when it opens)', async () => {
    const { call } = await callHarness();
    const removed = call.removedWithTheEnd();
    expect(call.logRemovesPending).toBe(true);
    expect(removed()).toEqual([]);
    call.goWithTheEnd = ['gw-a', 'gw-b'];
    expect(removed()).toEqual(['gw-a', 'gw-b']);
  });

  it('relays events in order, each after the one before; a failing one is logged and the next still goes', async () => {
    const { call, logger } = await callHarness();
    const order: string[] = [];
    let open!: () => void;
    const slow = new Promise<void>((resolve) => {
      open = resolve;
    });
    call.enqueue(async () => {
      await slow;
      order.push('first');
    });
    call.enqueue(async () => {
      throw new Error('the store failed');
    });
    call.enqueue(async () => {
      order.push('third');
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    open();
    await call.queue;
    expect(order).toEqual(['first', 'third']);
    expect(logger.messages('warn')).toEqual(['relaying a target message failed']);
  });

  it("relays nothing before the session's read when the call started ahead of it", async () => {
    let settle!: () => void;
    const sessionRead = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const { call } = await callHarness({ input: { sessionRead } });
    const order: string[] = [];
    call.enqueue(async () => {
      order.push('event');
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);
    settle();
    await call.queue;
    expect(order).toEqual(['event']);
  });

  it('has no client stream once finished', async () => {
    const { call } = await callHarness();
    call.out = clientSide().out;
    expect(call.stream()).toBeDefined();
    call.finished = true;
    expect(call.stream()).toBeUndefined();
  });
});
