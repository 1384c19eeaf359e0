import { endsTheCall, pendingTimeUp } from '../../../lambda/pending/pending-verdict';
import { systemClock } from '../../../lambda/scheduling/clock';
import { CLAIM_LEASE_MS, newPendingRecord } from '../../../lambda/state/records';
import type { PendingRecord } from '../../../lambda/state/store';
import { clockAt } from '../../support/fake-clock';
import { MemorySessionStore } from '../../support/memory-store';

/**
 * A pending request's time is up (pending/pending-verdict.ts, for both era paths), against the memory
 * store: the holder expires it, or reads why not — answered (carry on), a delivery in flight (look
 * again when its claim lapses), gone (end), DynamoDB failing (look again shortly, never "answered").
 */

const PARTITION = 'session-1';

async function record(store: MemorySessionStore, change: (r: PendingRecord) => void = () => undefined) {
  const r = newPendingRecord(Date.now(), 300, {
    kind: 'relayed',
    method: 'elicitation/create',
    target: 'legacy',
    targetRequestId: 1,
    clientRequestId: 7,
  });
  change(r);
  await store.putPending({ id: PARTITION }, r);
  return r.gatewayId;
}

describe("a pending request's time is up", () => {
  it('expires a request still waiting, so no answer can be claimed afterwards: the call ends', async () => {
    const store = new MemorySessionStore();
    const id = await record(store);
    const verdict = await pendingTimeUp(store, PARTITION, id, { clock: systemClock });
    expect(verdict).toEqual({ kind: 'expired' });
    expect(endsTheCall(verdict)).toBe(true);
    expect(await store.claimPending(PARTITION, id)).toBeUndefined();
  });

  it('lets the call go on when the target took an answer', async () => {
    const store = new MemorySessionStore();
    const id = await record(store, (r) => Object.assign(r, { status: 'answered' }));
    const verdict = await pendingTimeUp(store, PARTITION, id, { clock: systemClock });
    expect(verdict).toEqual({ kind: 'answered' });
    expect(endsTheCall(verdict)).toBe(false);
  });

  it('looks again just after a delivery in flight lets its claim lapse', async () => {
    const store = new MemorySessionStore();
    const claimedAt = Date.now() - 10_000;
    const id = await record(store, (r) => Object.assign(r, { status: 'delivering', claim: 't', claimedAt }));
    const now = claimedAt + 12_000;
    const verdict = await pendingTimeUp(store, PARTITION, id, { clock: clockAt(() => now) });
    expect(verdict).toEqual({ kind: 'undecided', afterMs: CLAIM_LEASE_MS - 12_000 + 100 });
    expect(endsTheCall(verdict)).toBe(false);
  });

  it('expires a delivery claim older than its lease (that delivery died)', async () => {
    const store = new MemorySessionStore();
    const id = await record(store, (r) =>
      Object.assign(r, { status: 'delivering', claim: 't', claimedAt: Date.now() - CLAIM_LEASE_MS - 1000 }),
    );
    expect(await pendingTimeUp(store, PARTITION, id, { clock: systemClock })).toEqual({ kind: 'expired' });
  });

  it('ends the call when the record is gone, or was expired before (a refused delivery)', async () => {
    const store = new MemorySessionStore();
    const expired = await record(store, (r) => Object.assign(r, { status: 'expired' }));
    const never = await pendingTimeUp(store, PARTITION, 'gw-never-was', { clock: systemClock });
    expect(never).toEqual({ kind: 'gone' });
    expect(endsTheCall(never)).toBe(true);
    expect(await pendingTimeUp(store, PARTITION, expired, { clock: systemClock })).toEqual({ kind: 'gone' });
  });

  it('still reads an answered record whose TTL passed while the call waited', async () => {
    const store = new MemorySessionStore();
    const id = await record(store, (r) =>
      Object.assign(r, { status: 'answered', expiresAt: Math.floor(Date.now() / 1000) - 5 }),
    );
    expect(await pendingTimeUp(store, PARTITION, id, { clock: systemClock })).toEqual({ kind: 'answered' });
  });

  it('is undecided when DynamoDB fails (looks again shortly), never "answered"', async () => {
    const store = new MemorySessionStore();
    const id = await record(store);
    store.down = true;
    const verdict = await pendingTimeUp(store, PARTITION, id, { clock: systemClock, recheckMs: 50 });
    expect(verdict).toMatchObject({ kind: 'undecided', afterMs: 50 });
    expect(verdict.kind === 'undecided' && verdict.error).toBeInstanceOf(Error);
    store.down = false;
    expect(await pendingTimeUp(store, PARTITION, id, { clock: systemClock })).toEqual({ kind: 'expired' });
  });
});
