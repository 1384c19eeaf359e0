import { errorResponse, refuse } from '../http/errors';
import { accepted } from '../http/responses';
import { describeError } from '../observability/logger';
import { GatewayError, ItemTooLargeError } from '../protocol/errors';
import { MCP_HEADERS } from '../protocol/headers';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { JSONRPCErrorResponse, JSONRPCResultResponse } from '../protocol/types';
import { answerPathOf } from '../state/records';
import type { LoadedAnswer, PendingRecord, PendingStore } from '../state/store';
import {
  type DeliveryOutcome,
  deliverAnswer as deliverRelayedAnswer,
  holderGone,
  settleClaim,
} from '../waiting/answer-delivery';
import { alreadyAnswered as alreadyAnsweredError, holderGonePost, refusalOf } from '../waiting/delivery-refusals';
import { storeQuestionAnswer } from '../waiting/questions';
import { fitsARecord, recordAnswer, recordedBy } from '../waiting/recorded-answer';
import { NO_CLIENT_REQUEST } from './client-stream';
import type { LegacyDeps } from './deps';
import { targetCallIdOf } from './ids';

/**
 * The client's answer to a request the gateway sent it: a separate POST that may reach any
 * instance. It must match a pending request of this very session, still waited for by a live holder.
 * A question's answer is stored in its record for the waiting invocation (once).
 *
 * A relayed request whose call a live instance holds (its record carries the holder's lease): the
 * answer is kept in the record for the holder, which delivers it itself (waiting/recorded-answer.ts),
 * and 202 says it was accepted; what the target does with it reaches the client on the call's stream
 * (refused by the target: the call ends with -32001; not taken: the holder sends it again until the
 * pending timeout). A repeated answer gets 400, as for an answered request.
 *
 * Any other relayed request's answer (no holder: a call that can be taken over, or a request on the
 * session's GET stream) goes to the target from here with the target's session id and its original
 * request id: claim, deliver, settle — or release (waiting/answer-delivery.ts, shared with the bridge;
 * this maps its outcome to the answer POST's response):
 * - delivered: settled (→ answered), 202; the target continues on the holder's stream;
 * - still failing (unreachable, reset, 502/503/504, no answer in time): released (→ pending), 502
 *   retryable, so the client's retry of the answer is accepted; if it never retries, the holder's
 *   pending timeout ends the call (-32001);
 * - refused by the target (a 4xx: it no longer knows the session or the request): resending cannot
 *   help, so the record is settled and the call is ended now — a marker the holder finds within
 *   seconds (call-relay.ts), and -32001 on the client's call stream; 502 to this POST.
 */
/**
 * The answer's first try, before anything is read (the POST's MCP-Protocol-Version already checked,
 * its Mcp-Session-Id present and well-formed): an answer to a relayed request whose call a live
 * holder holds is recorded for the holder, and an answer to the gateway's own question is stored, each
 * with one conditional write on its pending record, 202 — the request's only DynamoDB request. The
 * gateway id says which (state/records.ts, AnswerPath); an id marked to be read first is not tried.
 * Undefined when that write is refused or cannot apply (another record kind or state, an answer too
 * large for a record, a record written before records carried their session's principal): the caller
 * then reads the session and the record and goes on as ever (`deliverAnswer`), so every other
 * response is what that path answers.
 *
 * What the session read guaranteed, and how the write keeps it without the read:
 * - the session is the caller's: the record carries its session's principal, and the write's
 *   condition is that it is the caller's (another principal's session: refused, then 404 by the read);
 * - the session was not deleted: deleting a session removes its pending records by a write before the
 *   one that removes the session item (state/dynamo/sessions.ts), so no record outlives it: refused, 404;
 * - the session has not expired: the record carries its session's expiry, and the write's condition
 *   is that it has not passed (a call may outlive its session; its answer then gets 404 as before);
 * - the request is well-formed for the session: an unsupported MCP-Protocol-Version is refused before
 *   any message but initialize (legacy-path.ts, handleLegacyPost), as the read's check would.
 * The write fails (DynamoDB unreachable): answered as the read's failure is (503, try again).
 */
export async function recordBeforeReading(
  deps: LegacyDeps,
  sessionId: string,
  principal: string,
  answer: JSONRPCResponse,
  writeId: string,
): Promise<Response | undefined> {
  const gatewayId = typeof answer.id === 'string' ? answer.id : undefined;
  // The id says how its answer is taken (state/records.ts, AnswerPath): one that is read first
  // would only pay a refused write before the read.
  const path = gatewayId ? answerPathOf(gatewayId) : 'read';
  if (!gatewayId || path === 'read' || !fitsARecord(answer)) return undefined;
  try {
    if (path === 'question') {
      if (!isResultOrError(answer) || !(await storeQuestionAnswer(deps.store, sessionId, answer, { principal }))) {
        return undefined;
      }
      deps.logger.info('gateway question answered', { sessionId, gatewayRequestId: gatewayId });
    } else {
      const asCaller: Pick<PendingStore, 'recordAnswer'> = {
        recordAnswer: (partition, id, kept, now) => deps.store.recordAnswer(partition, id, kept, now, { principal }),
      };
      const recorded = await recordAnswer(asCaller, sessionId, gatewayId, answer, writeId);
      if (recorded === 'retried') {
        if (!recordedBy(await deps.store.getPending(sessionId, gatewayId), writeId, true)) return undefined;
      } else if (!recorded) return undefined;
      deps.logger.info('answer recorded for the holder', { sessionId, gatewayRequestId: gatewayId });
    }
  } catch (error) {
    if (error instanceof ItemTooLargeError) return undefined; // delivered from here by the path below
    deps.logger.error('recording the answer failed', { sessionId, error: describeError(error) });
    return errorResponse(answer.id ?? null, error);
  }
  return accepted({ [MCP_HEADERS.sessionId]: sessionId });
}

/** A response the client may send: a result or an error (anything else is left to the read path's refusal). */
function isResultOrError(answer: JSONRPCResponse): answer is JSONRPCResultResponse | JSONRPCErrorResponse {
  return 'result' in answer || 'error' in answer;
}

export async function deliverAnswer(
  deps: LegacyDeps,
  loaded: LoadedAnswer,
  answer: JSONRPCResponse,
  headers: Record<string, string>,
  writeId: string,
): Promise<Response> {
  const sessionId = loaded.session.id;
  const gatewayId = typeof answer.id === 'string' ? answer.id : undefined;
  const pending = gatewayId ? loaded.pending : undefined;
  const id = answer.id ?? null;
  if (!gatewayId || !pending) {
    deps.logger.info('answer refused: no matching pending request', { sessionId });
    return refuse(
      'AnswerRefused',
      'No matching pending request found for this session: the id must be the one the gateway sent, and the request must still be waiting',
      { id, headers },
    );
  }
  const refused = (reason: string, error: GatewayError) => {
    deps.logger.info(`answer refused: ${reason}`, { sessionId, gatewayRequestId: gatewayId });
    return errorResponse(id, error, headers);
  };
  const alreadyAnswered = () => refused('already answered or expired', alreadyAnsweredError());
  // Its holder died (a crash, a killed instance): the target's next step would reach nobody.
  const holderGoneRefusal = () => refused('holder gone', holderGonePost());
  // This POST's own write took, though its response was lost (recordBeforeReading, retried by the SDK).
  if (recordedBy(pending, writeId)) return accepted(headers);
  if (holderGone(pending)) return holderGoneRefusal();
  if (pending.kind === 'question') {
    let stored: boolean;
    try {
      stored = await storeQuestionAnswer(deps.store, sessionId, answer);
    } catch (error) {
      return errorResponse(id, error, headers);
    }
    if (!stored) return alreadyAnswered();
    deps.logger.info('gateway question answered', { sessionId, gatewayRequestId: gatewayId });
    return accepted(headers);
  }
  let record = pending;
  // An answer too large to keep in an item is delivered from here (below), as before.
  if (pending.holderUntil !== undefined && pending.status === 'pending' && fitsARecord(answer)) {
    try {
      const recorded = await recordAnswer(deps.store, sessionId, gatewayId, answer, writeId);
      if (recorded === true) {
        deps.logger.info('answer recorded for the holder', { sessionId, gatewayRequestId: gatewayId });
        return accepted(headers);
      }
      // Refused: answered or expired meanwhile, the lease ran out — or the call was released (the
      // lease removed), and then the answer is delivered from here. Or this write took already.
      const current = await deps.store.getPending(sessionId, gatewayId);
      if (recordedBy(current, writeId, recorded === 'retried')) return accepted(headers);
      if (!current) return alreadyAnswered();
      if (holderGone(current)) return holderGoneRefusal();
      if (current.holderUntil !== undefined) return alreadyAnswered();
      record = current;
    } catch (error) {
      // Nothing was recorded (or it was, and a repeat gets 400): the client may send the answer again.
      if (!(error instanceof ItemTooLargeError)) return errorResponse(id, error, headers);
    }
  }
  let outcome: DeliveryOutcome;
  try {
    outcome = await deliverRelayedAnswer(deps, {
      partition: sessionId,
      record,
      answer,
      protocolVersion: loaded.session.protocolVersion,
      endCall: (token) => endCall(deps, loaded, pending, token),
      context: { sessionId },
    });
  } catch (error) {
    // The claim failed: nothing was claimed (or the claim will lapse), so the client may simply send the answer again.
    return errorResponse(id, error, headers);
  }
  const refusal = refusalOf(outcome, 'post', pending.target);
  if (refusal instanceof GatewayError) {
    if (refusal.kind !== 'AnswerRefused') return errorResponse(id, refusal, headers);
    return refused(outcome.kind === 'holder-gone' ? 'holder gone' : 'already answered or expired', refusal);
  }
  if (pending.clientRequestId === NO_CLIENT_REQUEST) {
    // Tied to no call (the session's GET stream): no call's end removes it, so it goes now and stops
    // counting against maxPendingRequestsPerSession (a repeated answer then finds nothing: 400 as well).
    await deps.store
      .deletePending(sessionId, [gatewayId])
      .catch((error) =>
        deps.logger.warn('removing an answered record failed', { sessionId, error: describeError(error) }),
      );
  }
  deps.logger.info('answer delivered', {
    sessionId,
    target: pending.target,
    method: pending.method,
    gatewayRequestId: gatewayId,
  });
  return accepted(headers);
}

/** The target refused the answer: settle the record (no more answers) and tell the holder to end the call. */
async function endCall(deps: LegacyDeps, loaded: LoadedAnswer, pending: PendingRecord, token: string): Promise<void> {
  const sessionId = loaded.session.id;
  await settleClaim(deps, sessionId, pending.gatewayId, token, { sessionId });
  await deps.store
    .markCancelled(sessionId, targetCallIdOf(pending.clientRequestId), loaded.session.expiresAt, 'answer-lost')
    .catch((error) =>
      deps.logger.warn('marker for the holder not written', { sessionId, error: describeError(error) }),
    );
}
