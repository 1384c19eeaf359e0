import { CancellationWatch } from '../../../lambda/legacy/cancellation-watch';
import { callHarness } from '../../support/call-harness';

/**
 * Looking for a cancellation marker another instance wrote while the call runs long
 * (legacy/cancellation-watch.ts): the first look after 1 s (a quick call costs no read), then every
 * 2 s, 3 s, … at most 5 s; a marker stops the call for the reason it names.
 */

async function watched() {
  const h = await callHarness();
  const reads = jest.spyOn(h.store, 'isCancelled');
  const watch = new CancellationWatch(h.call);
  return { ...h, reads, watch };
}

describe('the cancellation watch of a call', () => {
  it('reads nothing in the first second, then looks at 1 s, 3 s, 6 s, 10 s, 15 s and every 5 s after', async () => {
    const { watch, reads, clock, call } = await watched();
    const start = clock.now();
    const at: number[] = [];
    reads.mockImplementation(async () => {
      at.push(clock.now() - start);
      return undefined;
    });
    watch.start();
    await clock.advance(999);
    expect(reads).not.toHaveBeenCalled();
    await clock.advance(20_001);
    expect(at).toEqual([1000, 3000, 6000, 10_000, 15_000, 20_000]);
    call.holder.halt();
  });

  it('starts once per invocation', async () => {
    const { watch, reads, clock, call } = await watched();
    watch.start();
    watch.start();
    await clock.advance(1000);
    expect(reads).toHaveBeenCalledTimes(1);
    call.holder.halt();
  });

  it("stops the call as cancelled by the client when the client's marker is found, and looks no more", async () => {
    const { watch, reads, clock, call, store, loaded } = await watched();
    watch.start();
    await clock.advance(1000);
    await store.markCancelled(loaded.session.id, call.targetCallId, loaded.session.expiresAt);
    await clock.advance(2000);
    expect(call.endReason).toBe('client-cancelled');
    expect(call.targetAbort.signal.reason).toBe('gateway: the client cancelled the call');
    await clock.advance(30_000);
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('stops the call as an answer lost when the marker says the target refused an answer', async () => {
    const { watch, clock, call, store, loaded } = await watched();
    await store.markCancelled(loaded.session.id, call.targetCallId, loaded.session.expiresAt, 'answer-lost');
    watch.start();
    await clock.advance(1000);
    expect(call.endReason).toBe('answer-lost');
  });

  it('schedules no look after the call finished (the one already due is its last)', async () => {
    const { watch, reads, clock, call } = await watched();
    watch.start();
    await clock.advance(1000);
    call.finished = true;
    await clock.advance(30_000);
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('reads a store that fails as no marker (the call goes on, and the watch keeps looking)', async () => {
    const { watch, reads, clock, call, store } = await watched();
    store.down = true;
    expect(await watch.cancelledElsewhere()).toBeUndefined();
    watch.start();
    await clock.advance(3000);
    expect(call.endReason).toBeUndefined();
    expect(reads).toHaveBeenCalledTimes(3);
    call.holder.halt();
  });
});
