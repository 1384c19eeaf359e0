import type { Clock } from '../scheduling/clock';
import { CLAIM_LEASE_MS, HOLDER_ACK_POLL_MS } from '../state/records';
import type { PendingRecord, PendingStore } from '../state/store';

/**
 * A relayed request's time is up (`pendingRequestTimeoutSeconds`): the holder decides whether its
 * call ends (both era paths: legacy/call-relay.ts for a 2025 client's call, modern/bridge.ts for a
 * bridged round). It expires the record first (pending, or a delivery claim older than its lease →
 * expired; a conditional update), so no answer can be delivered afterwards. When that is refused, the
 * refusal says why (the record as it stood, state/store.ts `PendingWriteOutcome`; no second read): answered (the target took the answer and carries on), a delivery in flight (look again
 * when its claim lapses), gone or expired already (end the call: e.g. a refused delivery expired it).
 * A DynamoDB failure is no verdict: look again shortly (the call's deadline bounds it all); it is
 * never read as "answered".
 */

export type PendingVerdict =
  /** Expired now by this holder: the call ends. */
  | { kind: 'expired' }
  /** The record is gone or was expired before (a refused delivery): the call ends. */
  | { kind: 'gone' }
  /** The target took an answer: the call goes on. */
  | { kind: 'answered' }
  /**
   * A delivery holds it, an answer is recorded for the holder (`recorded`: the holder delivers it), or
   * DynamoDB failed: look again after `afterMs`.
   */
  | { kind: 'undecided'; afterMs: number; error?: unknown; recorded?: PendingRecord };

/** How soon the holder looks again when DynamoDB could not tell. */
export const VERDICT_RECHECK_MS = 2000;
/** Looking again after an answer was recorded for the holder: its look (every HOLDER_ACK_POLL_MS) has found it by then. */
const RECORDED_RECHECK_MS = 2 * HOLDER_ACK_POLL_MS;
/** Looking again this long after a delivery claim lapses (so it has lapsed when looked at). */
const AFTER_LAPSE_MS = 100;

export function endsTheCall(verdict: PendingVerdict): boolean {
  return verdict.kind === 'expired' || verdict.kind === 'gone';
}

export async function pendingTimeUp(
  store: Pick<PendingStore, 'expirePending'>,
  partition: string,
  gatewayId: string,
  /** clock: the gateway's (a claim's lapse is counted on it). */
  options: { clock: Clock; recheckMs?: number },
): Promise<PendingVerdict> {
  const now = () => options.clock.now();
  try {
    const outcome = await store.expirePending(partition, gatewayId);
    if (outcome.written) return { kind: 'expired' };
    // As found, even past its TTL: a record whose TTL passed while the call waited still tells whether
    // the target took an answer.
    const record = outcome.current;
    if (record?.status === 'answered') return { kind: 'answered' };
    // An answer recorded for the holder (pending/recorded-answer.ts) that its next look delivers.
    if (record?.status === 'recorded') return { kind: 'undecided', afterMs: RECORDED_RECHECK_MS, recorded: record };
    if (record?.status === 'delivering') {
      const lapsesAt = (record.claimedAt ?? 0) + CLAIM_LEASE_MS;
      return { kind: 'undecided', afterMs: Math.max(AFTER_LAPSE_MS, lapsesAt - now() + AFTER_LAPSE_MS) };
    }
    return { kind: 'gone' };
  } catch (error) {
    return { kind: 'undecided', afterMs: options.recheckMs ?? VERDICT_RECHECK_MS, error };
  }
}
