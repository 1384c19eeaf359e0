import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { GatewayError, ItemTooLargeError } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { JSONRPCErrorResponse, JSONRPCResultResponse } from '../protocol/types';
import type { Clock } from '../scheduling/clock';
import { answerPathOf } from '../state/records';
import type { PendingRecord, PendingStore } from '../state/store';
import type { Targets } from '../targets/targets';
import { deliverAnswer, holderGone } from './answer-delivery';
import { alreadyAnswered, holderGonePost, refusalOf } from './delivery-refusals';
import { storeQuestionAnswer } from './questions';
import { fitsARecord, recordAnswer, recordedBy } from './recorded-answer';

/**
 * The one intake of a client's answer to a request the gateway sent it, a separate POST that may
 * reach any instance (a 2025 session's answer: legacy/answer.ts renders what this decides). The
 * gateway id says how its answer is taken (state/records.ts, AnswerPath), and the pending record's
 * state says the rest:
 *
 * - a question of the gateway's own: stored in its record for the waiting invocation, once;
 * - a relayed request whose call a live instance holds (the record carries the holder's lease):
 *   recorded in the record, once, and the holder delivers it (./recorded-answer.ts);
 * - any other relayed request (no holder: a call that can be taken over, or a request on the
 *   session's GET stream), or an answer too large for a record: delivered from here — claim,
 *   the holder's acknowledgement where it has one, deliver, settle or release (./answer-delivery.ts).
 *
 * Before anything is read (`takeBeforeReading`), the first two are one conditional write each, whose
 * conditions keep what the session read would have guaranteed (the record carries its session's
 * principal and expiry); everything else, or a write refused, goes through the read (`takeAnswer`).
 * The outcome is for the caller to render; nothing here knows HTTP.
 */

export type IntakeOutcome =
  /** Taken: stored for the gateway's own question, recorded for the holder, or delivered to the target. */
  | { kind: 'accepted'; how: 'stored' | 'recorded' | 'delivered'; record?: PendingRecord }
  /** Not taken, and why, for the client (its documented code). */
  | { kind: 'refused'; error: GatewayError }
  /** DynamoDB failed before anything was taken: the client may send the answer again. */
  | { kind: 'failed'; error: unknown }
  /** Only before reading: this answer is taken after the session and its record are read. */
  | { kind: 'read-first' };

export interface IntakeDeps {
  store: PendingStore;
  targets: Pick<Targets, 'deliver'>;
  logger: GatewayLogger;
  /** The gateway's clock: a holder's lease is compared with it. */
  clock: Clock;
}

export interface Answer {
  /** The records' partition (the session). */
  partition: string;
  answer: JSONRPCResponse;
  /** Unique to the answer POST: a write of its own whose response was lost is recognised as its own. */
  writeId: string;
}

/**
 * The answer's first try, before anything is read: one conditional write on its record, for the
 * caller's principal only, or `read-first` (the id marks it to be read first, the answer does not fit
 * a record, or the write was refused).
 */
export async function takeBeforeReading(
  deps: IntakeDeps,
  taken: Answer & { principal: string },
): Promise<IntakeOutcome> {
  const { answer, partition, writeId, principal } = taken;
  const gatewayId = typeof answer.id === 'string' ? answer.id : undefined;
  // The id says how its answer is taken: one that is read first would only pay a refused write before the read.
  const path = gatewayId ? answerPathOf(gatewayId) : 'read';
  if (!gatewayId || path === 'read' || !fitsARecord(answer)) return { kind: 'read-first' };
  const keys = { sessionId: partition, gatewayRequestId: gatewayId };
  try {
    if (path === 'question') {
      if (!isResultOrError(answer) || !(await storeQuestionAnswer(deps.store, partition, answer, { principal })))
        return { kind: 'read-first' };
      deps.logger.info('gateway question answered', keys);
      return { kind: 'accepted', how: 'stored' };
    }
    const asCaller: Pick<PendingStore, 'recordAnswer'> = {
      recordAnswer: (p, id, kept, now) => deps.store.recordAnswer(p, id, kept, now, { principal }),
    };
    const recorded = await recordAnswer(asCaller, partition, gatewayId, answer, writeId);
    if (recorded === 'retried') {
      if (!recordedBy(await deps.store.getPending(partition, gatewayId), writeId, true)) return { kind: 'read-first' };
    } else if (!recorded) return { kind: 'read-first' };
    deps.logger.info('answer recorded for the holder', keys);
    return { kind: 'accepted', how: 'recorded' };
  } catch (error) {
    if (error instanceof ItemTooLargeError) return { kind: 'read-first' }; // delivered after the read
    deps.logger.error('recording the answer failed', { sessionId: partition, error: describeError(error) });
    return { kind: 'failed', error };
  }
}

/**
 * The answer after the session and its record (`pending`, as read) were read: stored, recorded or
 * delivered, or refused. `endCall` ends the call the way its holder notices when the target refuses
 * the answer (the era's own means).
 */
export async function takeAnswer(
  deps: IntakeDeps,
  taken: Answer & {
    pending: PendingRecord | undefined;
    /** The target's protocol version when the record has none (the session's). */
    protocolVersion: string;
    endCall(record: PendingRecord, token: string): Promise<void>;
  },
): Promise<IntakeOutcome> {
  const { answer, partition, writeId, pending } = taken;
  const gatewayId = typeof answer.id === 'string' ? answer.id : undefined;
  const keys = { sessionId: partition, gatewayRequestId: gatewayId };
  const refused = (reason: string, error: GatewayError): IntakeOutcome => {
    deps.logger.info(`answer refused: ${reason}`, keys);
    return { kind: 'refused', error };
  };
  if (!gatewayId || !pending) {
    deps.logger.info('answer refused: no matching pending request', { sessionId: partition });
    return { kind: 'refused', error: noMatchingRequest() };
  }
  const answeredBefore = () => refused('already answered or expired', alreadyAnswered());
  // Its holder died (a crash, a killed instance): the target's next step would reach nobody.
  const holderDied = () => refused('holder gone', holderGonePost());
  // This POST's own write took, though its response was lost (takeBeforeReading, retried by the SDK).
  if (recordedBy(pending, writeId)) return { kind: 'accepted', how: 'recorded', record: pending };
  if (holderGone(pending, deps.clock.now())) return holderDied();
  if (pending.kind === 'question') {
    try {
      if (!isResultOrError(answer) || !(await storeQuestionAnswer(deps.store, partition, answer)))
        return answeredBefore();
    } catch (error) {
      return { kind: 'failed', error };
    }
    deps.logger.info('gateway question answered', keys);
    return { kind: 'accepted', how: 'stored', record: pending };
  }
  let record = pending;
  // An answer too large to keep in an item is delivered from here (below).
  if (pending.holderUntil !== undefined && pending.status === 'pending' && fitsARecord(answer)) {
    try {
      const recorded = await recordAnswer(deps.store, partition, gatewayId, answer, writeId);
      if (recorded === true) {
        deps.logger.info('answer recorded for the holder', keys);
        return { kind: 'accepted', how: 'recorded', record: pending };
      }
      // Refused: answered or expired meanwhile, the lease ran out — or the call was released (the lease
      // removed), and then the answer is delivered from here. Or this write took already.
      const current = await deps.store.getPending(partition, gatewayId);
      if (recordedBy(current, writeId, recorded === 'retried'))
        return { kind: 'accepted', how: 'recorded', record: pending };
      if (!current) return answeredBefore();
      if (holderGone(current, deps.clock.now())) return holderDied();
      if (current.holderUntil !== undefined) return answeredBefore();
      record = current;
    } catch (error) {
      // Nothing was recorded (or it was, and a repeat gets refused): the client may send the answer again.
      if (!(error instanceof ItemTooLargeError)) return { kind: 'failed', error };
    }
  }
  let outcome: Awaited<ReturnType<typeof deliverAnswer>>;
  try {
    outcome = await deliverAnswer(deps, {
      partition,
      record,
      answer,
      protocolVersion: taken.protocolVersion,
      endCall: (token) => taken.endCall(pending, token),
      context: { sessionId: partition },
    });
  } catch (error) {
    // The claim failed: nothing was claimed (or the claim will lapse), so the client may simply send it again.
    return { kind: 'failed', error };
  }
  const refusal = refusalOf(outcome, 'post', pending.target);
  if (refusal && typeof refusal !== 'string') {
    if (refusal.kind !== 'AnswerRefused') return { kind: 'refused', error: refusal };
    return refused(outcome.kind === 'holder-gone' ? 'holder gone' : 'already answered or expired', refusal);
  }
  deps.logger.info('answer delivered', { ...keys, target: pending.target, method: pending.method });
  return { kind: 'accepted', how: 'delivered', record: pending };
}

/** A response the client may send: a result or an error (anything else goes to the read path's refusal). */
function isResultOrError(answer: JSONRPCResponse): answer is JSONRPCResultResponse | JSONRPCErrorResponse {
  return 'result' in answer || 'error' in answer;
}

/** No pending request of this session has the answer's id (or it is not one the gateway sent). */
export function noMatchingRequest(): GatewayError {
  return new GatewayError(
    'AnswerRefused',
    'No matching pending request found for this session: the id must be the one the gateway sent, and the request must still be waiting',
  );
}
