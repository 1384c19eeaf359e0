import { Backoff, poll } from '../../../lambda/scheduling/backoff';
import { FakeClock } from '../../support/fake-clock';

/**
 * ARCHITECTURE.md, "The holder": every poll and retry of the gateway waits the same way
 * (scheduling/backoff.ts) — a first delay, a factor, a cap, a deadline, an abort signal, the clock.
 * On the fake clock: the delays asked of it, and how many attempts were made.
 */

/** An attempt that never has a value, counting itself. */
function nothingYet() {
  let attempts = 0;
  return {
    attempt: async () => {
      attempts++;
      return undefined;
    },
    attempts: () => attempts,
  };
}

describe('every wait of the gateway (one backoff)', () => {
  it('waits the first delay, grows it by the factor up to the cap, and starts again from the first after a reset', () => {
    const backoff = new Backoff({ firstMs: 20, factor: 2, maxMs: 250 });
    expect([1, 2, 3, 4, 5, 6].map(() => backoff.next())).toEqual([20, 40, 80, 160, 250, 250]);
    backoff.reset();
    expect(backoff.next()).toBe(20);
    const fixed = new Backoff({ firstMs: 100 });
    expect([1, 2, 3].map(() => fixed.next())).toEqual([100, 100, 100]);
  });

  it('polls on the clock it is given until an attempt has a value', async () => {
    const clock = new FakeClock();
    let attempts = 0;
    const polling = poll(async () => (++attempts === 4 ? 'found' : undefined), { firstMs: 20, factor: 2 }, { clock });
    await clock.advance(20 + 40 + 80);
    await expect(polling).resolves.toEqual({ value: 'found' });
    expect(attempts).toBe(4);
    expect(clock.delays).toEqual([20, 40, 80]);
  });

  it('never waits past its deadline: the last wait is cut to it, one last attempt is made there, then it ends', async () => {
    const clock = new FakeClock();
    const { attempt, attempts } = nothingYet();
    const polling = poll(attempt, { firstMs: 100, factor: 2 }, { clock, until: clock.now() + 250 });
    await clock.advance(250);
    await expect(polling).resolves.toEqual({ ended: 'timeout' });
    expect(clock.delays).toEqual([100, 150]);
    expect(attempts()).toBe(3);
  });

  it('ends when its signal aborts, cutting the wait short, with no attempt after', async () => {
    const clock = new FakeClock();
    const { attempt, attempts } = nothingYet();
    const abort = new AbortController();
    const polling = poll(attempt, { firstMs: 60_000 }, { clock, signal: abort.signal });
    await clock.advance(0);
    expect(attempts()).toBe(1);
    abort.abort();
    await expect(polling).resolves.toEqual({ ended: 'aborted' });
    expect(attempts()).toBe(1);
    expect(clock.scheduled).toBe(0); // the cut-short wait's timer is cleared
  });
});
