import { createLogger } from '../../../lambda/observability/logger';
import { ClaimAcknowledger, LONG_WAIT_MS } from '../../../lambda/pending/holder-ack';
import { holderParts } from '../../support/holder-parts';
import { MemorySessionStore } from '../../support/memory-store';
import { relayedRecord } from '../../support/pending-records';

/**
 * The holder's looks at its waiting records (pending/holder-ack.ts), on an injected clock and scheduler:
 * quick right after a question (an answer given at once is found within tens of ms), every 250 ms while
 * a person may still answer soon, every second once the question has waited LONG_WAIT_MS (a quarter of
 * the reads and CPU of a long think), and quick again after the next question.
 */

const PARTITION = 'session-1';
const quiet = createLogger('SILENT');

/** A scheduler the test drives: each timer waits until the test fires it, the clock moves by its delay. */
function manualTime() {
  let now = 1_000_000;
  let handles = 0;
  const pending: Array<{ fn: () => void; ms: number; handle: number }> = [];
  return {
    delays: [] as number[],
    now: () => now,
    scheduler: {
      setTimeout(fn: () => void, ms: number) {
        pending.push({ fn, ms, handle: ++handles });
        return handles;
      },
      clearTimeout(handle: unknown) {
        const at = pending.findIndex((timer) => timer.handle === handle);
        if (at >= 0) pending.splice(at, 1);
      },
    },
    /** Fires the next look (the clock moves by its delay) and lets the look's read finish. */
    async next(this: { delays: number[] }) {
      for (let i = 0; i < 20 && pending.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
      const timer = pending.shift();
      if (!timer) throw new Error('no look scheduled');
      this.delays.push(timer.ms);
      now += timer.ms;
      timer.fn();
    },
    advance: (ms: number) => {
      now += ms;
    },
    /** Until the look under way has scheduled the next one. */
    async scheduled() {
      for (let i = 0; i < 20 && pending.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
      return pending.map((timer) => timer.ms);
    },
  };
}

it('looks at 20, 40, 80, 160 ms, then every 250 ms, every second past a long wait, and quick again after the next question', async () => {
  const store = new MemorySessionStore();
  const record = relayedRecord();
  await store.putPending({ id: PARTITION }, record);
  const time = manualTime();
  let reads = 0;
  const counting = {
    getPending: (partition: string, id: string) => {
      reads++;
      return store.getPending(partition, id);
    },
    ackClaim: store.ackClaim.bind(store),
  };
  const looks = new ClaimAcknowledger(
    counting,
    quiet,
    PARTITION,
    () => [record.gatewayId],
    holderParts({ ...time.scheduler, now: time.now }),
    250,
  );
  looks.start();
  for (let i = 0; i < 8; i++) await time.next();
  expect(time.delays).toEqual([20, 40, 80, 160, 250, 250, 250, 250]);
  // The person thinks: past LONG_WAIT_MS since the question the looks slow down to one a second.
  time.advance(LONG_WAIT_MS);
  time.delays.length = 0;
  for (let i = 0; i < 4; i++) await time.next();
  expect(time.delays).toEqual([250, 500, 1000, 1000]);
  // Another question (the same call asks again) while the next look waits its second: that look is
  // brought forward, and the ones after it are quick again.
  expect(await time.scheduled()).toEqual([1000]);
  looks.start();
  expect(await time.scheduled()).toEqual([20]);
  time.delays.length = 0;
  for (let i = 0; i < 3; i++) await time.next();
  expect(time.delays).toEqual([20, 40, 80]);
  looks.stop();
  expect(reads).toBeGreaterThan(0); // every look read the waiting record
});
