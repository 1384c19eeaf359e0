import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { recordAnsweredInput } from '../observability/metrics';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { Clock } from '../scheduling/clock';
import { CLAIM_LEASE_MS } from '../state/records';
import type { PendingRecord, PendingStore } from '../state/store';
import { MessageRejectedError, TargetSessionExpiredError } from '../targets/endpoint';
import type { Targets } from '../targets/targets';
import { holderAcknowledged } from './holder-ack';

/**
 * The answer to a target's relayed request, delivered by whichever instance receives it (both era
 * paths: legacy/answer.ts for a 2025 client's answer POST, modern/bridge.ts for a 2026-07-28
 * client's retry). One state machine on the pending record:
 * claim (pending → delivering, with a token: the delivery is exclusive) → the holder's acknowledgement
 * when the record carries a holder lease (pending/holder-ack.ts: it is alive to receive what follows) →
 * POST to the target (the targets layer resends what provably did not arrive) → then
 * - taken: settled (delivering → answered);
 * - not taken (unreachable, reset, 5xx, no answer in time): the claim is released (→ pending), so the
 *   same answer may be sent again; if it never is, the holder's pending timeout ends the call;
 * - refused (a 4xx: the target no longer knows the session or the request): resending cannot help, so
 *   the call is ended by the era's own means (`endCall`: what its holder watches for).
 * The caller maps the outcome to its own response; nothing here knows about HTTP.
 */

export type DeliveryOutcome =
  /** The target took the answer; the record is settled. */
  | { kind: 'delivered' }
  /** Answered before (by another delivery): nothing was sent. */
  | { kind: 'answered' }
  /** Expired (the holder gave up, or a refused delivery ended the call): nothing was sent. */
  | { kind: 'expired' }
  /** Another delivery holds a live claim on it (or won the claim just now): nothing was sent. */
  | { kind: 'busy' }
  /** Its holder's lease ran out (the instance holding the call stopped): nothing was sent. */
  | { kind: 'holder-gone' }
  /** The holder did not acknowledge the claim in time; the claim was released, nothing was sent. */
  | { kind: 'holder-silent' }
  /** The target did not take it; the claim was released for the same answer sent again. */
  | { kind: 'not-delivered'; error: unknown }
  /** The target refused it (4xx); the call was ended (`endCall`). */
  | { kind: 'refused'; error: unknown };

export interface DeliveryDeps {
  store: PendingStore;
  targets: Pick<Targets, 'deliver'>;
  logger: GatewayLogger;
  /** The gateway's clock: leases and claims are compared with it. */
  clock: Clock;
}

export interface Delivery {
  /** The record's partition: the session, or the bridged call. */
  partition: string;
  /** The record as just read (a `relayed` one). */
  record: PendingRecord;
  /** The client's answer; its id is replaced by the target's own request id. */
  answer: JSONRPCResponse;
  /** The target's protocol version when the record has none. */
  protocolVersion: string;
  /** The target refused the answer: end the call the way its holder notices, given the claim's token. */
  endCall(token: string): Promise<void>;
  /** Added to every log line (which call). */
  context?: Record<string, unknown>;
  /** How long the holder has to acknowledge the claim (tests shorten it). */
  ackWaitMs?: number;
}

/** A record whose holder's lease ran out while it still waits: its call is no longer held anywhere. */
export function holderGone(record: PendingRecord, now: number): boolean {
  return record.holderUntil !== undefined && record.holderUntil <= now && record.status === 'pending';
}

/** Claim → acknowledgement → deliver → settle, release, or end the call. Throws only when the claim itself failed (DynamoDB): nothing is claimed then. */
export async function deliverAnswer(deps: DeliveryDeps, delivery: Delivery): Promise<DeliveryOutcome> {
  const { store, targets, logger } = deps;
  const { partition, record, context = {} } = delivery;
  const now = () => deps.clock.now();
  const { gatewayId, target } = record;
  const keys = { ...context, target, gatewayRequestId: gatewayId };
  if (record.status === 'answered') return { kind: 'answered' };
  if (record.status === 'expired') return { kind: 'expired' };
  if (holderGone(record, now())) return { kind: 'holder-gone' };
  const claimable =
    record.status === 'pending' || (record.status === 'delivering' && (record.claimedAt ?? 0) < now() - CLAIM_LEASE_MS);
  if (!claimable) return { kind: 'busy' };
  const token = await store.claimPending(partition, gatewayId);
  if (!token) return { kind: 'busy' };
  const release = () =>
    store.releaseClaim(partition, gatewayId, token).catch((error) =>
      // The claim lapses after CLAIM_LEASE_MS anyway: then the answer sent again (or the holder's timeout) takes it over.
      logger.warn('releasing a delivery claim failed', { ...keys, error: describeError(error) }),
    );
  // A record without a holder lease is tied to no call (a request on the session's GET stream), or its
  // call was released (legacy/waiting-call.ts): the target answers on a stream any instance reads.
  if (
    record.holderUntil !== undefined &&
    !(await holderAcknowledged(store, partition, gatewayId, token, deps.clock, delivery.ackWaitMs))
  ) {
    // The holder did not answer for itself: it may be gone, and the target's next step would reach nobody.
    await release();
    logger.warn('answer not delivered: the holder of the call did not acknowledge it', keys);
    return { kind: 'holder-silent' };
  }
  try {
    await targets.deliver(
      target,
      {
        targetSessionId: record.targetSessionId,
        protocolVersion: record.targetProtocolVersion ?? delivery.protocolVersion,
      },
      { ...delivery.answer, id: record.targetRequestId },
    );
  } catch (error) {
    const refused = error instanceof MessageRejectedError || error instanceof TargetSessionExpiredError;
    logger.warn('delivering an answer to the target failed', {
      ...keys,
      outcome: refused ? 'refused: the call is ended' : 'not delivered: released for a retry',
      error: describeError(error),
    });
    if (!refused) {
      await release();
      return { kind: 'not-delivered', error };
    }
    await delivery
      .endCall(token)
      .catch((endError) =>
        logger.warn('ending the call after a refused answer failed', { ...keys, error: describeError(endError) }),
      );
    return { kind: 'refused', error };
  }
  await settleClaim(deps, partition, gatewayId, token, keys);
  recordAnsweredInput(record.method);
  return { kind: 'delivered' };
}

/** delivering → answered, tried twice: a claim left `delivering` would look like a dead delivery after the lease. */
export async function settleClaim(
  deps: Pick<DeliveryDeps, 'store' | 'logger'>,
  partition: string,
  gatewayId: string,
  token: string,
  context: Record<string, unknown> = {},
): Promise<void> {
  for (let attempt = 1; attempt <= 2; attempt++) {
    try {
      await deps.store.settleClaim(partition, gatewayId, token);
      return;
    } catch (error) {
      if (attempt === 2)
        deps.logger.warn('settling a delivered answer failed', { ...context, error: describeError(error) });
    }
  }
}
