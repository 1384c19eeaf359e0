import { newPendingRecord } from '../../lambda/state/records';
import type { PendingRecord } from '../../lambda/state/store';

/**
 * A relayed request's pending record as the tests of waiting calls use it: the demo target's
 * elicitation, asked for the client's request 7, with `change` applied.
 */
export function relayedRecord(change: Partial<PendingRecord> = {}, timeoutSeconds = 300): PendingRecord {
  return {
    ...newPendingRecord(Date.now(), timeoutSeconds, {
      kind: 'relayed',
      method: 'elicitation/create',
      target: 'demo',
      clientRequestId: 7,
      targetSessionId: 'target-session',
      targetRequestId: 3,
    }),
    ...change,
  };
}
