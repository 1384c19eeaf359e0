import { randomBytes } from 'node:crypto';
import { holderLeaseMsOf } from '../config/environment';
import type { RequestId } from '../protocol/types';
import type { PendingKind, PendingRecord, SessionRecord } from './store';

/** 256 random bits, base64url: visible ASCII as the transport requires, unguessable. */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * How the answer to a pending record is taken, told by its gateway id so the answer POST needs no read
 * to choose (the record's own conditions decide; a forged or stale mark only costs its sender a refused
 * write before the read): `record` — a relayed request a live holder holds, its answer recorded for it
 * in one write; `question` — the gateway's own question, answered in one write; `read` — anything else
 * (no holder: a call that can be taken over, the session's GET stream), read first.
 */
export type AnswerPath = 'record' | 'question' | 'read';

/** The mark: the first character after `gw-` (a base64url digit, so the id keeps its shape). */
const PATH_MARKS: Record<AnswerPath, string> = { record: 'H', question: 'Q', read: 'D' };

/**
 * Ids of server-to-client requests as the client sees them: `gw-` and 22 base64url digits (16 bytes),
 * the first of which marks the answer's path and the other 21 random (126 bits), never the target's own.
 */
export function newGatewayRequestId(path: AnswerPath = 'read'): string {
  return withAnswerPath(`gw-${randomBytes(16).toString('base64url')}`, path);
}

export function withAnswerPath(gatewayId: string, path: AnswerPath): string {
  return `gw-${PATH_MARKS[path]}${gatewayId.slice(4)}`;
}

/** The path a gateway id's mark names; `read` for any other id. */
export function answerPathOf(gatewayId: string): AnswerPath {
  if (!gatewayId.startsWith('gw-') || gatewayId.length !== 25) return 'read';
  const mark = gatewayId[3];
  return mark === PATH_MARKS.record ? 'record' : mark === PATH_MARKS.question ? 'question' : 'read';
}

/** A record no holder holds (its answer delivered by whichever instance receives it): no lease, read first. */
export function withoutHolder(record: PendingRecord): PendingRecord {
  const { holderUntil: _none, ...unleased } = record;
  const gatewayId = withAnswerPath(record.gatewayId, 'read');
  // A question's target id is its gateway id (it has no target request behind it).
  const targetRequestId = record.targetRequestId === record.gatewayId ? gatewayId : record.targetRequestId;
  return { ...unleased, gatewayId, targetRequestId };
}

/**
 * A new pending record with a fresh gateway id, expiring after `timeoutSeconds`. A held request (no
 * target request behind it) uses its gateway id as the target's id. `session`: the session whose call
 * asks, whose principal and expiry the record carries (PendingRecord.principal). `nowMs`: now on the
 * gateway's clock.
 */
export function newPendingRecord(
  nowMs: number,
  timeoutSeconds: number,
  fields: {
    kind: PendingKind;
    method: string;
    target: string;
    clientRequestId: RequestId;
    targetSessionId?: string;
    targetRequestId?: RequestId;
    targetProtocolVersion?: string;
    session?: Pick<SessionRecord, 'principal' | 'expiresAt'>;
  },
): PendingRecord {
  const now = Math.floor(nowMs / 1000);
  const gatewayId = newGatewayRequestId(fields.kind === 'question' ? 'question' : 'record');
  const { session, ...rest } = fields;
  return {
    gatewayId,
    targetRequestId: gatewayId,
    ...rest,
    ...(session ? { principal: session.principal, sessionExpiresAt: session.expiresAt } : {}),
    status: 'pending',
    createdAt: now,
    // Rounded up: a record in whole seconds must not expire before the timer its holder sets in ms
    // for the same timeout (a read in that last second would find it gone while the call still waits).
    expiresAt: Math.ceil(nowMs / 1000) + timeoutSeconds,
    holderUntil: nowMs + HOLDER_LEASE_MS,
  };
}

/** A delivery claim: who is delivering an answer right now (random, compared on settle/release). */
export function newClaimToken(): string {
  return randomBytes(12).toString('base64url');
}

/**
 * How long a delivery claim protects a record: longer than a delivery can take (its attempts are
 * bounded by DELIVERY_TIMEOUT_MS in targets/), so a live delivery is never taken over, while one whose
 * instance died mid-way is (by the client's retry, or the holder's timeout) after this long.
 */
export const CLAIM_LEASE_MS = 30_000;

/**
 * The holder's lease on its waiting records: renewed every HOLDER_RENEW_MS (a third of it) while it
 * waits; a holder that died stops its records being answered within HOLDER_LEASE_MS. 30 s, or
 * GATEWAY_HOLDER_LEASE_MS (fault tests shorten it, so a killed instance is noticed in seconds).
 */
export const HOLDER_LEASE_MS = holderLeaseMsOf(process.env);
export const HOLDER_RENEW_MS = Math.floor(HOLDER_LEASE_MS / 3);

/**
 * Liveness at the moment an answer is delivered: the holder looks at its waiting records (soon after a
 * question, then every HOLDER_ACK_POLL_MS); it delivers an answer recorded for it itself
 * (pending/recorded-answer.ts), and acknowledges each delivery claim it finds (the bridge: the instance
 * that claimed delivers only once acknowledged, and gives up, releasing the claim, after
 * HOLDER_ACK_WAIT_MS). So an answer sent after the holder died reaches no target, however fresh its
 * lease. Cost: one consistent read per waiting record per look (4 a second, 1 a second once a question
 * has waited 10 s: pending/holder-ack.ts) while a relayed request waits, one write per answer.
 */
export const HOLDER_ACK_POLL_MS = 250;
/**
 * How long a claimant waits for the holder's acknowledgement: twenty of the holder's looks. 2 s was
 * too little on a loaded machine (a look's read, the acknowledgement's write and the claimant's own
 * reads queued behind other work), and the client got a retryable 502 for an answer its live holder
 * would have taken. Waiting longer costs only when the holder is gone: its 502 comes later.
 */
export const HOLDER_ACK_WAIT_MS = 5000;
