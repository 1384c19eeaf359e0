import type { DeliveryDeps } from '../../../lambda/pending/answer-delivery';
import { ClaimAcknowledger } from '../../../lambda/pending/holder-ack';
import { deliverRecordedUntilTaken, fitsARecord, recordAnswer } from '../../../lambda/pending/recorded-answer';
import type { JSONRPCResponse } from '../../../lambda/protocol/jsonrpc';
import { systemClock } from '../../../lambda/scheduling/clock';
import type { PendingRecord } from '../../../lambda/state/store';
import { MessageRejectedError } from '../../../lambda/targets/endpoint';
import { FakeClock } from '../../support/fake-clock';
import { holderParts } from '../../support/holder-parts';
import { QUIET } from '../../support/in-process';
import { MemorySessionStore } from '../../support/memory-store';
import { relayedRecord } from '../../support/pending-records';

/**
 * The holder delivers (pending/recorded-answer.ts): the answering instance records the answer in a
 * leased record (once), the holder's look finds it (pending/holder-ack.ts) and POSTs it to the target
 * with the target's request id, sending it again while the target does not take it, until it is
 * taken, refused, or the call stops it.
 */

const PARTITION = 'session-1';
const quiet = QUIET;

const answerTo = (record: PendingRecord): JSONRPCResponse => ({
  jsonrpc: '2.0',
  id: record.gatewayId,
  result: { action: 'accept', content: { confirm: true } },
});

/** A target that fails the first `failures` deliveries with `error()`. */
function flakyTargets(failures: number, error: () => Error) {
  const sent: JSONRPCResponse[] = [];
  let attempts = 0;
  const targets: DeliveryDeps['targets'] = {
    deliver: async (_target, _session, message) => {
      attempts++;
      if (attempts <= failures) throw error();
      sent.push(message as JSONRPCResponse);
    },
  };
  return { sent, targets, attempts: () => attempts };
}

describe('an answer recorded for the holder', () => {
  it('is recorded once, only while the holder lease runs; the holder finds it and delivers it with the target’s id', async () => {
    const store = new MemorySessionStore();
    const record = relayedRecord();
    await store.putPending({ id: PARTITION }, record);
    expect(await recordAnswer(store, PARTITION, record.gatewayId, answerTo(record))).toBe(true);
    expect(await recordAnswer(store, PARTITION, record.gatewayId, answerTo(record))).toBe(false);

    const found: PendingRecord[] = [];
    const clock = new FakeClock();
    const acknowledger = new ClaimAcknowledger(
      store,
      quiet,
      PARTITION,
      () => [record.gatewayId],
      holderParts(clock),
      5,
      (r) => found.push(r),
    );
    acknowledger.start();
    await clock.advance(40); // eight looks, 5 ms apart
    acknowledger.stop();
    expect(found).toHaveLength(1); // once, however many looks
    const { sent, targets } = flakyTargets(0, () => new Error('unused'));
    const outcome = await deliverRecordedUntilTaken(targets, found[0]!, '2025-11-25', {
      signal: new AbortController().signal,
      clock: systemClock,
    });
    expect(outcome).toEqual({ kind: 'delivered' });
    expect(sent).toEqual([{ jsonrpc: '2.0', id: 3, result: { action: 'accept', content: { confirm: true } } }]);
  });

  it('is not recorded without a holder lease (delivered directly instead)', async () => {
    const store = new MemorySessionStore();
    const { holderUntil: _none, ...unleased } = relayedRecord();
    await store.putPending({ id: PARTITION }, unleased);
    expect(await recordAnswer(store, PARTITION, unleased.gatewayId, answerTo(unleased))).toBe(false);
  });

  it('is sent again while the target does not take it, and stops at the first refusal', async () => {
    const record = { ...relayedRecord(), status: 'recorded' as const, answer: '{"result":{}}' };
    const flaky = flakyTargets(2, () => new Error('HTTP 503'));
    const failed: unknown[] = [];
    const signal = new AbortController().signal;
    const options = {
      signal,
      retryMs: 1,
      clock: systemClock,
      onFailedAttempt: (error: unknown) => failed.push(error),
    };
    expect(await deliverRecordedUntilTaken(flaky.targets, record, '2025-11-25', options)).toEqual({
      kind: 'delivered',
    });
    expect(flaky.attempts()).toBe(3);
    expect(failed).toHaveLength(2);
    const refusing = flakyTargets(5, () => new MessageRejectedError('demo', 404));
    const refused = await deliverRecordedUntilTaken(refusing.targets, record, '2025-11-25', options);
    expect(refused.kind).toBe('refused');
    expect(refusing.attempts()).toBe(1);
  });

  it('stops sending when the call stops it', async () => {
    const record = { ...relayedRecord(), status: 'recorded' as const, answer: '{"result":{}}' };
    const never = flakyTargets(Number.POSITIVE_INFINITY, () => new Error('HTTP 503'));
    const stop = new AbortController();
    const clock = new FakeClock();
    const outcome = deliverRecordedUntilTaken(never.targets, record, '2025-11-25', {
      signal: stop.signal,
      clock,
      retryMs: 1000,
    });
    await clock.advance(10); // the first attempt, and into the wait before the next
    stop.abort();
    expect((await outcome).kind).toBe('not-delivered');
    expect(never.attempts()).toBe(1);
  });

  it('fits a record unless near the item limit', () => {
    const record = relayedRecord();
    expect(fitsARecord(answerTo(record))).toBe(true);
    expect(fitsARecord({ jsonrpc: '2.0', id: 'x', result: { note: 'n'.repeat(398 * 1024) } })).toBe(false);
  });
});
