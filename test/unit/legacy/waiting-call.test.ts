import { takeOver, WaitingCall, type WaitingCallSnapshot } from '../../../lambda/legacy/waiting-call';
import { systemClock } from '../../../lambda/scheduling/clock';
import { clockAt } from '../../support/fake-clock';
import { MemorySessionStore } from '../../support/memory-store';

/**
 * The waiting call's state machine (legacy/waiting-call.ts) against the memory store: held → released →
 * taken over, a holder that died (its lease ran out) taken over, exactly one taker in a race, and a
 * holder that lost the call never writing over it again.
 */

const session = { id: 'session-1', expiresAt: Math.floor(Date.now() / 1000) + 3600 };
const LEASE_MS = 1000;

const snapshot = (round = 1): WaitingCallSnapshot => ({
  call: {
    target: 'modern',
    method: 'tools/call',
    clientRequestId: 7,
    params: { name: 'deploy', arguments: { env: 'prod' } },
  },
  step: {
    kind: 'input',
    round,
    keys: [{ key: 'confirm', gatewayId: 'gw-1', method: 'elicitation/create', askedAt: 1 }],
  },
  relayed: [],
  records: ['gw-1'],
  leased: [],
});

function holder(store: MemorySessionStore, streamId = 'stream-aaaaaaaaaa') {
  return new WaitingCall(store, session.id, streamId, () => session.expiresAt, systemClock, LEASE_MS);
}

describe('a waiting call', () => {
  it('is nothing to take over before it waits, and held elsewhere while its holder lives', async () => {
    const store = new MemorySessionStore();
    expect(await takeOver(store, session, 'stream-aaaaaaaaaa', { clock: systemClock })).toEqual({ kind: 'none' });
    const a = holder(store);
    expect(await a.hold(snapshot(), 3)).toBe(true);
    expect((await takeOver(store, session, 'stream-aaaaaaaaaa', { clock: systemClock, leaseMs: LEASE_MS })).kind).toBe(
      'held-elsewhere',
    );
  });

  it('released, is taken over by the reconnect with where it stood and the seq to go on at', async () => {
    const store = new MemorySessionStore();
    const a = holder(store);
    await a.hold(snapshot(), 3);
    expect(await a.release(snapshot(2), 5)).toBe(true);
    expect(a.holding).toBe(false);
    const taken = await takeOver(store, session, 'stream-aaaaaaaaaa', { clock: systemClock, leaseMs: LEASE_MS });
    expect(taken).toMatchObject({ kind: 'taken', seq: 5, snapshot: snapshot(2) });
    // The new holder holds it now: a second reconnect finds it held elsewhere.
    expect((await takeOver(store, session, 'stream-aaaaaaaaaa', { clock: systemClock, leaseMs: LEASE_MS })).kind).toBe(
      'held-elsewhere',
    );
  });

  it("is taken over once its holder's lease ran out (the holder died), and the old holder can no longer write", async () => {
    const store = new MemorySessionStore();
    const a = holder(store);
    await a.hold(snapshot(), 3);
    const later = Date.now() + LEASE_MS + 1;
    const taken = await takeOver(store, session, 'stream-aaaaaaaaaa', {
      clock: clockAt(() => later),
      leaseMs: LEASE_MS,
    });
    expect(taken.kind).toBe('taken');
    // The old holder comes back (it was only slow): it lost the call, and neither renews nor releases it.
    expect(await a.renew(snapshot(), 4)).toBe(false);
    expect(await a.release(snapshot(), 4)).toBe(false);
    const record = await store.getWaitingCall(session.id, 'stream-aaaaaaaaaa');
    expect(record).toMatchObject({ state: 'held', seq: 3 });
  });

  it('two reconnects race for a released call: exactly one takes it over', async () => {
    const store = new MemorySessionStore();
    const a = holder(store);
    await a.hold(snapshot(), 3);
    await a.release(snapshot(), 3);
    const results = await Promise.all([
      takeOver(store, session, 'stream-aaaaaaaaaa', { clock: systemClock, leaseMs: LEASE_MS }),
      takeOver(store, session, 'stream-aaaaaaaaaa', { clock: systemClock, leaseMs: LEASE_MS }),
    ]);
    expect(results.map((r) => r.kind).sort()).toEqual(['held-elsewhere', 'taken']);
  });

  it('finished by its holder, leaves nothing; a holder that lost it removes nothing', async () => {
    const store = new MemorySessionStore();
    const a = holder(store);
    await a.hold(snapshot(), 3);
    await a.release(snapshot(), 3);
    const taken = await takeOver(store, session, 'stream-aaaaaaaaaa', { clock: systemClock, leaseMs: LEASE_MS });
    await a.finish(); // released: no longer its own
    expect(await store.getWaitingCall(session.id, 'stream-aaaaaaaaaa')).toBeDefined();
    if (taken.kind !== 'taken') throw new Error('not taken');
    await taken.waiting.finish();
    expect(await store.getWaitingCall(session.id, 'stream-aaaaaaaaaa')).toBeUndefined();
  });

  it('finished, is removed by one conditional delete, without reading the record first', async () => {
    const store = new MemorySessionStore();
    const a = holder(store);
    await a.hold(snapshot(), 3);
    const reads = jest.spyOn(store, 'getWaitingCall');
    const deletes = jest.spyOn(store, 'deleteWaitingCall');
    await a.finish();
    expect(reads).not.toHaveBeenCalled();
    expect(deletes).toHaveBeenCalledTimes(1);
    expect(deletes.mock.calls[0]?.[2]).toEqual(expect.any(String)); // only while its holder token is on it
  });

  it('taken over, is written once: the new holder holding the step it took over at writes nothing more', async () => {
    const store = new MemorySessionStore();
    const a = holder(store);
    await a.hold(snapshot(), 3);
    await a.release(snapshot(2), 5);
    const writes = jest.spyOn(store, 'swapWaitingCall');
    const taken = await takeOver(store, session, 'stream-aaaaaaaaaa', { clock: systemClock, leaseMs: LEASE_MS });
    if (taken.kind !== 'taken') throw new Error('not taken');
    expect(writes).toHaveBeenCalledTimes(1);
    // The relay goes on with the call and holds the step it was taken over at (the same snapshot).
    expect(await taken.waiting.hold(JSON.parse(JSON.stringify(taken.snapshot)), 5)).toBe(true);
    expect(writes).toHaveBeenCalledTimes(1);
    // A step that changed is written; so is every renewal (the lease and the seq).
    expect(await taken.waiting.hold(snapshot(3), 6)).toBe(true);
    expect(writes).toHaveBeenCalledTimes(2);
    expect(await taken.waiting.renew(snapshot(3), 6)).toBe(true);
    expect(writes).toHaveBeenCalledTimes(3);
    expect(await store.getWaitingCall(session.id, 'stream-aaaaaaaaaa')).toMatchObject({ state: 'held', seq: 6 });
  });

  it('holds the same step again after a renewal period: written (a fresh lease)', async () => {
    const store = new MemorySessionStore();
    const a = holder(store);
    const start = Date.now();
    const clock = jest.spyOn(Date, 'now');
    try {
      clock.mockReturnValue(start);
      await a.hold(snapshot(), 3);
      const writes = jest.spyOn(store, 'swapWaitingCall');
      clock.mockReturnValue(start + Math.ceil(LEASE_MS / 3) - 1);
      expect(await a.hold(snapshot(), 3)).toBe(true);
      expect(writes).not.toHaveBeenCalled(); // within a renewal period: the lease written is still fresh
      clock.mockReturnValue(start + Math.ceil(LEASE_MS / 3));
      expect(await a.hold(snapshot(), 3)).toBe(true);
      expect(writes).toHaveBeenCalledTimes(1);
      expect(await store.getWaitingCall(session.id, 'stream-aaaaaaaaaa')).toMatchObject({
        holderUntil: start + Math.ceil(LEASE_MS / 3) + LEASE_MS,
      });
    } finally {
      clock.mockRestore();
    }
  });
  it("one holder's writes go in order: a release sent while a renewal is in flight is written after it, not refused", async () => {
    const store = new MemorySessionStore();
    const a = holder(store);
    await a.hold(snapshot(), 3);
    // The store is slow to answer the renewal (a loaded table): the release is asked for meanwhile.
    const swap = store.swapWaitingCall.bind(store);
    let answerRenewal: () => void = () => undefined;
    const renewalAnswered = new Promise<void>((resolve) => {
      answerRenewal = resolve;
    });
    let writes = 0;
    store.swapWaitingCall = async (sessionId, next, version) => {
      writes++;
      if (next.state === 'held') await renewalAnswered;
      return swap(sessionId, next, version);
    };
    const renewed = a.renew(snapshot(), 4);
    const released = a.release(snapshot(2), 5);
    answerRenewal();
    expect(await renewed).toBe(true);
    expect(await released).toBe(true);
    expect(writes).toBe(2);
    expect(await store.getWaitingCall(session.id, 'stream-aaaaaaaaaa')).toMatchObject({ state: 'released', seq: 5 });
  });
});
