import type { GatewayLogger } from '../../../lambda/observability/logger';
import { HolderLease } from '../../../lambda/pending/holder-lease';
import type { PendingStore } from '../../../lambda/state/store';
import { FakeClock } from '../../support/fake-clock';
import { holderParts } from '../../support/holder-parts';
import { MemorySessionStore } from '../../support/memory-store';

/**
 * The holder's lease renewer (pending/holder-lease.ts, for both era paths), a part of its holder, on a
 * fake clock with a recording store: every renewMs it renews the ids of that moment, after its hook; one timer however
 * often it is started; a failure is logged and the next renewal comes; stopped once, it never renews again.
 */

const PARTITION = 'session-1';
const RENEW_MS = 1000;
const LEASE_MS = 3000;

function recordingStore() {
  const store = new MemorySessionStore();
  const renewals: Array<{ ids: string[]; until: number }> = [];
  const recording: Pick<PendingStore, 'renewHolder'> = {
    renewHolder: async (partition, ids, until) => {
      renewals.push({ ids: [...ids], until });
      await store.renewHolder(partition, ids, until);
    },
  };
  return { store, recording, renewals };
}

function logger() {
  const warnings: string[] = [];
  const log: GatewayLogger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (message) => void warnings.push(String(message)),
    error: () => undefined,
  };
  return { log, warnings };
}

describe("the holder's lease", () => {
  let clock: FakeClock;
  let parts: ReturnType<typeof holderParts>;
  beforeEach(() => {
    clock = new FakeClock(1_000_000);
    parts = holderParts(clock);
  });

  it('renews the records named at each renewal, every renewMs, for leaseMs from then', async () => {
    const { recording, renewals } = recordingStore();
    const ids = ['gw-1'];
    const lease = new HolderLease(recording, logger().log, PARTITION, () => ids, parts, {
      renewMs: RENEW_MS,
      leaseMs: LEASE_MS,
    });
    lease.start();
    await clock.advance(RENEW_MS - 1);
    expect(renewals).toEqual([]);
    await clock.advance(1);
    ids.push('gw-2');
    await clock.advance(RENEW_MS);
    expect(renewals).toEqual([
      { ids: ['gw-1'], until: 1_000_000 + RENEW_MS + LEASE_MS },
      { ids: ['gw-1', 'gw-2'], until: 1_000_000 + 2 * RENEW_MS + LEASE_MS },
    ]);
    lease.stop();
  });

  it('runs its hook at each renewal, and asks nothing of DynamoDB while no record needs a lease', async () => {
    const { recording, renewals } = recordingStore();
    let hooks = 0;
    const lease = new HolderLease(recording, logger().log, PARTITION, () => [], parts, {
      renewMs: RENEW_MS,
      beforeRenew: () => hooks++,
    });
    lease.start();
    await clock.advance(3 * RENEW_MS);
    expect(hooks).toBe(3);
    expect(renewals).toEqual([]);
    lease.stop();
  });

  it('keeps one timer however often it is started', async () => {
    const { recording, renewals } = recordingStore();
    const lease = new HolderLease(recording, logger().log, PARTITION, () => ['gw-1'], parts, { renewMs: RENEW_MS });
    lease.start();
    lease.start();
    await clock.advance(RENEW_MS / 2);
    lease.start();
    await clock.advance(2 * RENEW_MS);
    expect(renewals).toHaveLength(2);
    lease.stop();
  });

  it('logs a failed renewal and renews again at the next one', async () => {
    const { store, recording, renewals } = recordingStore();
    const { log, warnings } = logger();
    const lease = new HolderLease(recording, log, PARTITION, () => ['gw-1'], parts, { renewMs: RENEW_MS });
    store.down = true;
    lease.start();
    await clock.advance(RENEW_MS);
    expect(warnings).toEqual(['renewing the holder lease failed']);
    store.down = false;
    await clock.advance(RENEW_MS);
    expect(renewals).toHaveLength(2);
    expect(warnings).toHaveLength(1);
    lease.stop();
  });

  it('never renews again once stopped, even if started again', async () => {
    const { recording, renewals } = recordingStore();
    let hooks = 0;
    const lease = new HolderLease(recording, logger().log, PARTITION, () => ['gw-1'], parts, {
      renewMs: RENEW_MS,
      beforeRenew: () => hooks++,
    });
    lease.start();
    await clock.advance(RENEW_MS);
    lease.stop();
    expect(clock.scheduled).toBe(0);
    lease.start();
    await clock.advance(5 * RENEW_MS);
    expect(renewals).toHaveLength(1);
    expect(hooks).toBe(1);
    expect(clock.scheduled).toBe(0);
  });

  it('renews at once when asked (without its hook), and not once stopped', async () => {
    const { recording, renewals } = recordingStore();
    let hooks = 0;
    const lease = new HolderLease(recording, logger().log, PARTITION, () => ['gw-1'], parts, {
      renewMs: RENEW_MS,
      leaseMs: LEASE_MS,
      beforeRenew: () => hooks++,
    });
    await lease.renewNow();
    expect(renewals).toEqual([{ ids: ['gw-1'], until: 1_000_000 + LEASE_MS }]);
    expect(hooks).toBe(0);
    lease.stop();
    await lease.renewNow();
    expect(renewals).toHaveLength(1);
  });

  it('stopped before it started, never starts', async () => {
    const { recording, renewals } = recordingStore();
    const lease = new HolderLease(recording, logger().log, PARTITION, () => ['gw-1'], parts, { renewMs: RENEW_MS });
    lease.stop();
    lease.start();
    expect(clock.scheduled).toBe(0);
    await clock.advance(3 * RENEW_MS);
    expect(renewals).toEqual([]);
  });

  it('stopped while a renewal is in flight, schedules no next one', async () => {
    let finish!: () => void;
    let calls = 0;
    const slow: Pick<PendingStore, 'renewHolder'> = {
      renewHolder: () => {
        calls++;
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
    };
    const lease = new HolderLease(slow, logger().log, PARTITION, () => ['gw-1'], parts, { renewMs: RENEW_MS });
    lease.start();
    await clock.advance(RENEW_MS);
    expect(calls).toBe(1);
    // The next renewal waits for this one: a slow DynamoDB never stacks requests.
    await clock.advance(3 * RENEW_MS);
    expect(calls).toBe(1);
    lease.stop();
    finish();
    await clock.advance(0);
    expect(clock.scheduled).toBe(0);
    await clock.advance(3 * RENEW_MS);
    expect(calls).toBe(1);
  });
});
