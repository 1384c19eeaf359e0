import { type DeliveryDeps, deliverAnswer, holderGone } from '../../../lambda/pending/answer-delivery';
import { ClaimAcknowledger } from '../../../lambda/pending/holder-ack';
import type { JSONRPCResponse } from '../../../lambda/protocol/jsonrpc';
import { systemClock } from '../../../lambda/scheduling/clock';
import { CLAIM_LEASE_MS, newPendingRecord } from '../../../lambda/state/records';
import type { PendingRecord } from '../../../lambda/state/store';
import { MessageRejectedError, TargetSessionExpiredError } from '../../../lambda/targets/endpoint';
import { holderParts } from '../../support/holder-parts';
import { QUIET } from '../../support/in-process';
import { MemorySessionStore } from '../../support/memory-store';

/**
 * One answer delivery for both era paths (pending/answer-delivery.ts), against the memory store with a
 * fake target: claim → the holder's acknowledgement (when the record carries a lease) → deliver →
 * settle; released when the target did not take it; the call ended when the target refused it;
 * nothing sent for a record answered, expired, claimed by a live delivery or whose holder is gone.
 */

const PARTITION = 'session-1';
const quiet = QUIET;

interface Sent {
  target: string;
  session: { targetSessionId?: string; protocolVersion: string };
  message: JSONRPCResponse;
}

function fakeTargets(fail?: () => Error) {
  const sent: Sent[] = [];
  const targets: DeliveryDeps['targets'] = {
    deliver: async (target, session, message) => {
      if (fail) throw fail();
      sent.push({ target, session, message: message as JSONRPCResponse });
    },
  };
  return { sent, targets };
}

async function relayed(
  store: MemorySessionStore,
  change: (record: PendingRecord) => void = () => undefined,
): Promise<PendingRecord> {
  const record = newPendingRecord(Date.now(), 300, {
    kind: 'relayed',
    method: 'elicitation/create',
    target: 'legacy',
    targetSessionId: 'target-session-9',
    targetRequestId: 42,
    targetProtocolVersion: '2025-06-18',
    clientRequestId: 7,
  });
  // No holder lease unless a test gives it one: the acknowledgement is its own test.
  delete record.holderUntil;
  change(record);
  await store.putPending({ id: PARTITION }, record);
  return record;
}

const answer = (record: PendingRecord): JSONRPCResponse => ({
  jsonrpc: '2.0',
  id: record.gatewayId,
  result: { action: 'accept', content: { ok: true } },
});

function deliver(
  store: MemorySessionStore,
  targets: DeliveryDeps['targets'],
  record: PendingRecord,
  options: { endCall?: (token: string) => Promise<void>; ackWaitMs?: number } = {},
) {
  return deliverAnswer(
    { store, targets, logger: quiet, clock: systemClock },
    {
      partition: PARTITION,
      record,
      answer: answer(record),
      protocolVersion: '2025-11-25',
      endCall: options.endCall ?? (async () => undefined),
      ackWaitMs: options.ackWaitMs,
    },
  );
}

describe('delivering an answer to a relayed request', () => {
  it('reaches the target with its session id, its own request id and its protocol version, and settles the record', async () => {
    const store = new MemorySessionStore();
    const record = await relayed(store);
    const { sent, targets } = fakeTargets();
    expect(await deliver(store, targets, record)).toEqual({ kind: 'delivered' });
    expect(sent).toEqual([
      {
        target: 'legacy',
        session: { targetSessionId: 'target-session-9', protocolVersion: '2025-06-18' },
        message: { jsonrpc: '2.0', id: 42, result: { action: 'accept', content: { ok: true } } },
      },
    ]);
    expect((await store.getPending(PARTITION, record.gatewayId))?.status).toBe('answered');
  });

  it("uses the path's protocol version for a record that has none", async () => {
    const store = new MemorySessionStore();
    const record = await relayed(store, (r) => delete r.targetProtocolVersion);
    const { sent, targets } = fakeTargets();
    await deliver(store, targets, record);
    expect(sent[0]?.session.protocolVersion).toBe('2025-11-25');
  });

  it('sends nothing for a record answered before, expired, or claimed by a delivery still in flight', async () => {
    const store = new MemorySessionStore();
    const { sent, targets } = fakeTargets();
    const answered = await relayed(store, (r) => Object.assign(r, { status: 'answered' }));
    const expired = await relayed(store, (r) => Object.assign(r, { status: 'expired' }));
    const inFlight = await relayed(store, (r) =>
      Object.assign(r, { status: 'delivering', claim: 'other', claimedAt: Date.now() }),
    );
    expect(await deliver(store, targets, answered)).toEqual({ kind: 'answered' });
    expect(await deliver(store, targets, expired)).toEqual({ kind: 'expired' });
    expect(await deliver(store, targets, inFlight)).toEqual({ kind: 'busy' });
    expect(sent).toEqual([]);
  });

  it('is busy when another delivery wins the claim between the read and the claim', async () => {
    const store = new MemorySessionStore();
    const record = await relayed(store);
    await store.claimPending(PARTITION, record.gatewayId);
    const { sent, targets } = fakeTargets();
    expect(await deliver(store, targets, record)).toEqual({ kind: 'busy' });
    expect(sent).toEqual([]);
  });

  it('takes over a delivery claim older than its lease (that delivery died)', async () => {
    const store = new MemorySessionStore();
    const record = await relayed(store, (r) =>
      Object.assign(r, { status: 'delivering', claim: 'dead', claimedAt: Date.now() - CLAIM_LEASE_MS - 1000 }),
    );
    const { sent, targets } = fakeTargets();
    expect(await deliver(store, targets, record)).toEqual({ kind: 'delivered' });
    expect(sent).toHaveLength(1);
  });

  it('sends nothing when the holder of the call is gone (its lease ran out)', async () => {
    const store = new MemorySessionStore();
    const record = await relayed(store, (r) => Object.assign(r, { holderUntil: Date.now() - 1 }));
    expect(holderGone(record, Date.now())).toBe(true);
    const { sent, targets } = fakeTargets();
    expect(await deliver(store, targets, record)).toEqual({ kind: 'holder-gone' });
    expect(sent).toEqual([]);
    expect((await store.getPending(PARTITION, record.gatewayId))?.status).toBe('pending');
  });

  it('delivers a leased record once its live holder acknowledged the claim', async () => {
    const store = new MemorySessionStore();
    const record = await relayed(store, (r) => Object.assign(r, { holderUntil: Date.now() + 60_000 }));
    const holder = new ClaimAcknowledger(store, quiet, PARTITION, () => [record.gatewayId], holderParts(), 10);
    holder.start();
    try {
      const { sent, targets } = fakeTargets();
      expect(await deliver(store, targets, record, { ackWaitMs: 5000 })).toEqual({ kind: 'delivered' });
      expect(sent).toHaveLength(1);
    } finally {
      holder.stop();
    }
  });

  it('releases the claim and sends nothing when the holder does not acknowledge it in time', async () => {
    const store = new MemorySessionStore();
    const record = await relayed(store, (r) => Object.assign(r, { holderUntil: Date.now() + 60_000 }));
    const { sent, targets } = fakeTargets();
    expect(await deliver(store, targets, record, { ackWaitMs: 10 })).toEqual({ kind: 'holder-silent' });
    expect(sent).toEqual([]);
    // Released: the same answer sent again may be delivered.
    expect((await store.getPending(PARTITION, record.gatewayId))?.status).toBe('pending');
  });

  it('releases the claim when the target did not take the answer, so the same answer sent again is delivered', async () => {
    const store = new MemorySessionStore();
    const record = await relayed(store);
    const failing = fakeTargets(() => new Error('ECONNRESET'));
    const outcome = await deliver(store, failing.targets, record);
    expect(outcome.kind).toBe('not-delivered');
    const reread = await store.getPending(PARTITION, record.gatewayId);
    expect(reread?.status).toBe('pending');
    const working = fakeTargets();
    expect(await deliver(store, working.targets, reread as PendingRecord)).toEqual({ kind: 'delivered' });
    expect(working.sent).toHaveLength(1);
  });

  it.each([
    ['a 4xx', () => new MessageRejectedError('legacy', 404)],
    ['an expired target session', () => new TargetSessionExpiredError('legacy')],
  ])('ends the call (with the claim it holds) when the target refused the answer: %s', async (_, error) => {
    const store = new MemorySessionStore();
    const record = await relayed(store);
    const ended: string[] = [];
    const { targets } = fakeTargets(error);
    const outcome = await deliver(store, targets, record, {
      endCall: async (token) => {
        ended.push(token);
      },
    });
    expect(outcome.kind).toBe('refused');
    const reread = await store.getPending(PARTITION, record.gatewayId);
    expect(ended).toEqual([reread?.claim]);
    // Not released: resending cannot help, so it is the era's ending that decides what the record becomes.
    expect(reread?.status).toBe('delivering');
  });

  it('throws when the claim itself fails (DynamoDB), with nothing sent', async () => {
    const store = new MemorySessionStore();
    const record = await relayed(store);
    store.down = true;
    const { sent, targets } = fakeTargets();
    await expect(deliver(store, targets, record)).rejects.toThrow();
    expect(sent).toEqual([]);
  });
});
