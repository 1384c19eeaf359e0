import type { GatewayLogger } from '../../../lambda/observability/logger';
import type { PendingStore } from '../../../lambda/state/store';
import { HolderLease } from '../../../lambda/waiting/holder-lease';
import { MemorySessionStore } from '../../support/memory-store';

/**
 * The holder's lease renewer (waiting/holder-lease.ts, for both era paths), on jest's fake timers with a
 * recording store: every renewMs it renews the ids of that moment, after its hook; one timer however
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
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  it('renews the records named at each renewal, every renewMs, for leaseMs from then', async () => {
    const { recording, renewals } = recordingStore();
    const ids = ['gw-1'];
    const lease = new HolderLease(recording, logger().log, PARTITION, () => ids, {
      renewMs: RENEW_MS,
      leaseMs: LEASE_MS,
    });
    lease.start();
    await jest.advanceTimersByTimeAsync(RENEW_MS - 1);
    expect(renewals).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    ids.push('gw-2');
    await jest.advanceTimersByTimeAsync(RENEW_MS);
    expect(renewals).toEqual([
      { ids: ['gw-1'], until: 1_000_000 + RENEW_MS + LEASE_MS },
      { ids: ['gw-1', 'gw-2'], until: 1_000_000 + 2 * RENEW_MS + LEASE_MS },
    ]);
    lease.stop();
  });

  it('runs its hook at each renewal, and asks nothing of DynamoDB while no record needs a lease', async () => {
    const { recording, renewals } = recordingStore();
    let hooks = 0;
    const lease = new HolderLease(recording, logger().log, PARTITION, () => [], {
      renewMs: RENEW_MS,
      beforeRenew: () => hooks++,
    });
    lease.start();
    await jest.advanceTimersByTimeAsync(3 * RENEW_MS);
    expect(hooks).toBe(3);
    expect(renewals).toEqual([]);
    lease.stop();
  });

  it('keeps one timer however often it is started', async () => {
    const { recording, renewals } = recordingStore();
    const lease = new HolderLease(recording, logger().log, PARTITION, () => ['gw-1'], { renewMs: RENEW_MS });
    lease.start();
    lease.start();
    await jest.advanceTimersByTimeAsync(RENEW_MS / 2);
    lease.start();
    await jest.advanceTimersByTimeAsync(2 * RENEW_MS);
    expect(renewals).toHaveLength(2);
    lease.stop();
  });

  it('logs a failed renewal and renews again at the next one', async () => {
    const { store, recording, renewals } = recordingStore();
    const { log, warnings } = logger();
    const lease = new HolderLease(recording, log, PARTITION, () => ['gw-1'], { renewMs: RENEW_MS });
    store.down = true;
    lease.start();
    await jest.advanceTimersByTimeAsync(RENEW_MS);
    expect(warnings).toEqual(['renewing the holder lease failed']);
    store.down = false;
    await jest.advanceTimersByTimeAsync(RENEW_MS);
    expect(renewals).toHaveLength(2);
    expect(warnings).toHaveLength(1);
    lease.stop();
  });

  it('never renews again once stopped, even if started again', async () => {
    const { recording, renewals } = recordingStore();
    let hooks = 0;
    const lease = new HolderLease(recording, logger().log, PARTITION, () => ['gw-1'], {
      renewMs: RENEW_MS,
      beforeRenew: () => hooks++,
    });
    lease.start();
    await jest.advanceTimersByTimeAsync(RENEW_MS);
    lease.stop();
    expect(jest.getTimerCount()).toBe(0);
    lease.start();
    await jest.advanceTimersByTimeAsync(5 * RENEW_MS);
    expect(renewals).toHaveLength(1);
    expect(hooks).toBe(1);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('renews at once when asked (without its hook), and not once stopped', async () => {
    const { recording, renewals } = recordingStore();
    let hooks = 0;
    const lease = new HolderLease(recording, logger().log, PARTITION, () => ['gw-1'], {
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
    const lease = new HolderLease(recording, logger().log, PARTITION, () => ['gw-1'], { renewMs: RENEW_MS });
    lease.stop();
    lease.start();
    expect(jest.getTimerCount()).toBe(0);
    await jest.advanceTimersByTimeAsync(3 * RENEW_MS);
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
    const lease = new HolderLease(slow, logger().log, PARTITION, () => ['gw-1'], { renewMs: RENEW_MS });
    lease.start();
    await jest.advanceTimersByTimeAsync(RENEW_MS);
    expect(calls).toBe(1);
    // The next renewal waits for this one: a slow DynamoDB never stacks requests.
    await jest.advanceTimersByTimeAsync(3 * RENEW_MS);
    expect(calls).toBe(1);
    lease.stop();
    finish();
    await jest.advanceTimersByTimeAsync(0);
    expect(jest.getTimerCount()).toBe(0);
    await jest.advanceTimersByTimeAsync(3 * RENEW_MS);
    expect(calls).toBe(1);
  });
});
