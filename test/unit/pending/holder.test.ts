import { createLogger, type GatewayLogger } from '../../../lambda/observability/logger';
import { Holder, type PendingWatch } from '../../../lambda/pending/holder';
import { VERDICT_RECHECK_MS } from '../../../lambda/pending/pending-verdict';
import type { PendingRecord, PendingStore } from '../../../lambda/state/store';
import { FakeClock } from '../../support/fake-clock';
import { MemorySessionStore } from '../../support/memory-store';
import { relayedRecord } from '../../support/pending-records';

/**
 * The holder of a waiting call (pending/holder.ts), the one both eras use, on a fake clock: minutes of
 * leases, looks and pending timeouts run in milliseconds, and every assertion is about what happened
 * when, never about how long the test took.
 */

const PARTITION = 'session-1';
const LEASE_MS = 30_000;
const RENEW_MS = 10_000;
const TIMEOUT_MS = 300_000;

function setUp(options: { store?: PendingStore; onRecorded?: (record: PendingRecord) => void } = {}) {
  const store = (options.store ?? new MemorySessionStore()) as MemorySessionStore;
  const clock = new FakeClock();
  const warnings: string[] = [];
  const logger = { ...createLogger('SILENT'), warn: (message: string) => warnings.push(message) } as GatewayLogger;
  const ids: string[] = [];
  const holder = new Holder({
    store,
    logger,
    partition: PARTITION,
    context: { test: true },
    leased: () => ids,
    looked: () => ids,
    onRecorded: options.onRecorded,
    clock,
    leaseMs: LEASE_MS,
    renewMs: RENEW_MS,
  });
  const ask = async (change: Partial<PendingRecord> = {}) => {
    const record = relayedRecord(change, 3600);
    await store.putPending({ id: PARTITION }, record);
    ids.push(record.gatewayId);
    holder.asked(true);
    return record.gatewayId;
  };
  return { store, clock, holder, ask, warnings };
}

/** A watch that records what the holder decided. */
function watching(change: Partial<PendingWatch> = {}) {
  const ended: Array<{ gatewayId: string; verdict: string }> = [];
  const watch: PendingWatch = {
    waiting: () => true,
    timeUp: (gatewayId, verdict) => {
      ended.push({ gatewayId, verdict: verdict.kind });
    },
    ...change,
  };
  return { watch, ended };
}

describe('the holder of a waiting call', () => {
  it("keeps its records' lease ahead of the clock while it waits, renewing every third of the lease", async () => {
    const { store, clock, holder, ask } = setUp();
    const renewals = jest.spyOn(store, 'renewHolder');
    const id = await ask();
    await clock.advance(5 * 60_000);
    expect(renewals).toHaveBeenCalledTimes((5 * 60_000) / RENEW_MS);
    const record = await store.getPending(PARTITION, id);
    expect(record?.holderUntil).toBeGreaterThan(clock.now());
    expect(record?.holderUntil).toBeLessThanOrEqual(clock.now() + LEASE_MS);
    await holder.stop();
  });

  it('ends the call once when a request is not answered by its pending timeout, and not a moment before', async () => {
    const { clock, holder, ask, store } = setUp();
    const id = await ask();
    const { watch, ended } = watching();
    holder.watchPending(`pending:${id}`, [id], TIMEOUT_MS, watch);
    await clock.advance(TIMEOUT_MS - 1);
    expect(ended).toEqual([]);
    await clock.advance(1);
    expect(ended).toEqual([{ gatewayId: id, verdict: 'expired' }]);
    // Expired by the holder: an answer arriving now can no longer be claimed.
    expect((await store.getPending(PARTITION, id))?.status).toBe('expired');
    await clock.advance(TIMEOUT_MS);
    expect(ended).toHaveLength(1);
    await holder.stop();
  });

  it('lets the call go on when the target took an answer meanwhile, and looks no more', async () => {
    const { clock, holder, ask, store } = setUp();
    const id = await ask();
    await store.settleClaim(PARTITION, id, (await store.claimPending(PARTITION, id)) ?? '');
    const { watch, ended } = watching();
    const looks = jest.spyOn(store, 'expirePending');
    holder.watchPending(`pending:${id}`, [id], TIMEOUT_MS, watch);
    await clock.advance(3 * TIMEOUT_MS);
    expect(ended).toEqual([]);
    expect(looks).toHaveBeenCalledTimes(1);
    await holder.stop();
  });

  it('reads DynamoDB failing at the time as no verdict: it looks again until it can tell, never as answered', async () => {
    const { clock, holder, ask, store, warnings } = setUp();
    const id = await ask();
    const expire = store.expirePending.bind(store);
    let failures = 2;
    jest.spyOn(store, 'expirePending').mockImplementation(async (partition, gatewayId) => {
      if (failures-- > 0) throw new Error('ProvisionedThroughputExceededException');
      return expire(partition, gatewayId);
    });
    const { watch, ended } = watching();
    holder.watchPending(`pending:${id}`, [id], TIMEOUT_MS, watch);
    await clock.advance(TIMEOUT_MS + VERDICT_RECHECK_MS);
    expect(ended).toEqual([]);
    await clock.advance(VERDICT_RECHECK_MS);
    expect(ended).toEqual([{ gatewayId: id, verdict: 'expired' }]);
    expect(warnings.filter((w) => w.startsWith('pending timeout undecided'))).toHaveLength(2);
    await holder.stop();
  });

  it('hands an answer recorded for it that no look handed over yet to its delivery, and waits for that', async () => {
    const delivered: string[] = [];
    const { clock, holder, ask, store } = setUp({ onRecorded: (record) => delivered.push(record.gatewayId) });
    const id = await ask();
    holder.acknowledger.stop(); // no look: only the timeout's verdict finds the answer
    expect(await store.recordAnswer(PARTITION, id, JSON.stringify({ result: { action: 'accept' } }))).toBe(true);
    const { watch, ended } = watching();
    holder.watchPending(`pending:${id}`, [id], TIMEOUT_MS, watch);
    await clock.advance(TIMEOUT_MS);
    expect(delivered).toEqual([id]);
    expect(ended).toEqual([]);
    await holder.stop();
  });

  it('ends the call when an answer it is delivering was not taken by the target in time', async () => {
    const { clock, holder, ask } = setUp();
    const id = await ask();
    const { watch, ended } = watching({ delivering: (gatewayId) => gatewayId === id });
    holder.watchPending(`pending:${id}`, [id], TIMEOUT_MS, watch);
    await clock.advance(TIMEOUT_MS);
    expect(ended).toEqual([{ gatewayId: id, verdict: 'delivering' }]);
    await holder.stop();
  });

  it('watches a round of requests as one (the bridge): the first that ends the call ends it, in the owner’s turn', async () => {
    const { clock, holder, ask, store } = setUp();
    const answered = await ask();
    const unanswered = await ask();
    await store.settleClaim(PARTITION, answered, (await store.claimPending(PARTITION, answered)) ?? '');
    const turns: string[] = [];
    const { watch, ended } = watching({
      inTurn: async (look) => {
        turns.push('look');
        await look();
      },
    });
    holder.watchPending('abandon-check', [answered, unanswered], TIMEOUT_MS, watch);
    await clock.advance(TIMEOUT_MS);
    expect(turns).toEqual(['look']);
    expect(ended).toEqual([{ gatewayId: unanswered, verdict: 'expired' }]);
    await holder.stop();
  });

  it('passes over a request no longer waited for (its answer was delivered)', async () => {
    const { clock, holder, ask, store } = setUp();
    const id = await ask();
    const looks = jest.spyOn(store, 'expirePending');
    const { watch, ended } = watching({ waiting: () => false });
    holder.watchPending(`pending:${id}`, [id], TIMEOUT_MS, watch);
    await clock.advance(TIMEOUT_MS);
    expect(ended).toEqual([]);
    expect(looks).not.toHaveBeenCalled();
    await holder.stop();
  });

  it('stops once: after halt() no renewal, look or pending timeout fires, and drain() waits for work under way', async () => {
    const { clock, holder, ask, store } = setUp();
    const id = await ask();
    const { watch, ended } = watching();
    holder.watchPending(`pending:${id}`, [id], TIMEOUT_MS, watch);
    let finished = false;
    holder.tasks.run('slow work', async () => {
      await new Promise((resolve) => setImmediate(resolve));
      finished = true;
    });
    const renewals = jest.spyOn(store, 'renewHolder');
    const reads = jest.spyOn(store, 'getPending');
    holder.halt();
    expect(holder.stopped).toBe(true);
    expect(clock.scheduled).toBe(0);
    await holder.drain();
    expect(finished).toBe(true);
    await clock.advance(2 * TIMEOUT_MS);
    expect(renewals).not.toHaveBeenCalled();
    expect(reads).not.toHaveBeenCalled();
    expect(ended).toEqual([]);
    // Asked again after the stop (a late task): nothing starts.
    holder.asked(true);
    expect(clock.scheduled).toBe(0);
  });
});

describe("the holder's stop leaves nothing of the call running", () => {
  /** A store whose writes of one kind stay open until the test lets them go, counting those in flight. */
  function holdingOpen(store: MemorySessionStore, method: 'renewHolder' | 'ackClaim' | 'getPending') {
    const held: Array<() => void> = [];
    let inFlight = 0;
    const original = store[method].bind(store) as (...args: unknown[]) => Promise<unknown>;
    jest.spyOn(store, method).mockImplementation((async (...args: unknown[]) => {
      inFlight++;
      try {
        await new Promise<void>((release) => held.push(release));
        return await original(...args);
      } finally {
        inFlight--;
      }
    }) as never);
    return {
      inFlight: () => inFlight,
      held,
      releaseAll: () => {
        for (const release of held.splice(0)) release();
      },
    };
  }

  it('a lease renewal the store holds open: stop() resolves only once it has settled', async () => {
    const store = new MemorySessionStore();
    const { clock, holder, ask } = setUp({ store });
    await ask();
    const renewals = holdingOpen(store, 'renewHolder');
    await clock.advance(RENEW_MS);
    expect(renewals.inFlight()).toBe(1);
    let stopped = false;
    const stopping = holder.stop().then(() => {
      stopped = true;
    });
    await clock.advance(0);
    expect(stopped).toBe(false);
    renewals.releaseAll();
    await stopping;
    expect(renewals.inFlight()).toBe(0);
  });

  it('a look at the records the store holds open: stop() resolves only once it has settled', async () => {
    const store = new MemorySessionStore();
    const { clock, holder, ask } = setUp({ store });
    await ask();
    const reads = holdingOpen(store, 'getPending');
    await clock.advance(50); // the first look comes within tens of ms of a question
    expect(reads.inFlight()).toBeGreaterThan(0);
    let stopped = false;
    const stopping = holder.stop().then(() => {
      stopped = true;
    });
    await clock.advance(0);
    expect(stopped).toBe(false);
    reads.releaseAll();
    await stopping;
    expect(reads.inFlight()).toBe(0);
  });
});
