import type { PendingRecord, PendingStatus } from '../../../lambda/state/store';
import { MemorySessionStore } from '../../support/memory-store';
import { relayedRecord } from '../../support/pending-records';

/**
 * ARCHITECTURE.md, "Pending requests": renewHolder and detachHolder change only the lease, in any
 * state. The memory store runs the transitions DynamoDB is sent (test/state/pending-transitions.test.ts
 * compares the two), so a renewal or a release never undoes a claim, an answer or an expiry.
 */

const PARTITION = 'session-1';
const STATUSES: PendingStatus[] = ['pending', 'delivering', 'recorded', 'answered', 'expired'];

/** A record of each status, with everything a status may carry besides its lease. */
const inEachState = (): PendingRecord[] =>
  STATUSES.map((status) =>
    relayedRecord({
      gatewayId: `gw-${status}`,
      status,
      holderUntil: Date.now() + 60_000,
      claim: 'claim-token',
      claimedAt: Date.now() - 1000,
      ack: 'claim-token',
      answer: JSON.stringify({ result: { action: 'accept' } }),
      principal: 'alice',
      sessionExpiresAt: Math.floor(Date.now() / 1000) + 3600,
    }),
  );

async function stored(records: PendingRecord[]): Promise<MemorySessionStore> {
  const store = new MemorySessionStore();
  for (const record of records) await store.putPending({ id: PARTITION }, record);
  return store;
}

describe("the holder's lease on its records", () => {
  it('renewHolder changes only the lease, in any state', async () => {
    const records = inEachState();
    const store = await stored(records);
    const until = Date.now() + 120_000;
    await store.renewHolder(
      PARTITION,
      records.map((r) => r.gatewayId),
      until,
    );
    for (const record of records)
      expect(await store.getPending(PARTITION, record.gatewayId)).toEqual({ ...record, holderUntil: until });
  });

  it('detachHolder changes only the lease, in any state', async () => {
    const records = inEachState();
    const store = await stored(records);
    await store.detachHolder(
      PARTITION,
      records.map((r) => r.gatewayId),
    );
    for (const record of records) {
      const { holderUntil: _lease, ...rest } = record;
      expect(await store.getPending(PARTITION, record.gatewayId)).toEqual(rest);
    }
  });
});
