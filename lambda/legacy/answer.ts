import { errorResponse, refuse } from '../http/errors';
import { accepted } from '../http/responses';
import { describeError } from '../observability/logger';
import { recordAnsweredInput } from '../observability/metrics';
import { GatewayError } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import { storeHeldAnswer } from '../relay/held';
import { holderAcknowledged, holderSilent } from '../relay/holder-ack';
import { upstreamRequestId } from '../relay/ids';
import { CLAIM_LEASE_MS } from '../state/records';
import type { LoadedAnswer, PendingRecord } from '../state/store';
import { MessageRejectedError, TargetSessionExpiredError } from '../targets/endpoint';
import { NO_CLIENT_REQUEST } from './client-stream';
import type { LegacyDeps } from './deps';

/**
 * The client's answer to a request the gateway sent it: a separate POST that may reach any
 * instance. It must match a pending request of this very session, still waited for by a live holder.
 * A held request's answer is stored in its record for the waiting invocation (once).
 *
 * A relayed request's answer goes to the target with the target's session id and its original
 * request id: claim, deliver, settle — or release. The claim (pending → delivering,
 * with a token) makes the delivery exclusive; the targets layer retries what provably did not
 * arrive (targets/endpoint.ts); then:
 * - delivered: settled (→ answered), 202; the target continues on the holder's stream;
 * - still failing (unreachable, reset, 502/503/504, no answer in time): released (→ pending), 502
 *   retryable, so the client's retry of the answer is accepted; if it never retries, the holder's
 *   pending timeout ends the call (-32001);
 * - refused by the target (a 4xx: it no longer knows the session or the request): resending cannot
 *   help, so the record is settled and the call is ended now — a marker the holder finds within
 *   seconds (call-relay.ts), and -32001 on the client's call stream; 502 to this POST.
 */
export async function deliverAnswer(
  deps: LegacyDeps,
  loaded: LoadedAnswer,
  answer: JSONRPCResponse,
  headers: Record<string, string>,
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
  const refused = (reason: string, message: string) => {
    deps.logger.info(`answer refused: ${reason}`, { sessionId, gatewayRequestId: gatewayId });
    return refuse('AnswerRefused', message, { id, headers });
  };
  const alreadyAnswered = () =>
    refused('already answered or expired', 'The pending request was already answered or has expired');
  if (pending.holderUntil !== undefined && pending.holderUntil <= Date.now() && pending.status === 'pending') {
    // Its holder died (a crash, a killed instance): the target's next step would reach nobody.
    return refused(
      'holder gone',
      'The call that sent this request is no longer held by any gateway instance (it stopped); the answer was not delivered — call the tool again',
    );
  }
  if (pending.kind === 'held') {
    let stored: boolean;
    try {
      stored = await storeHeldAnswer(deps.store, sessionId, answer);
    } catch (error) {
      return errorResponse(id, error, headers);
    }
    if (!stored) return alreadyAnswered();
    deps.logger.info('gateway-held request answered', { sessionId, gatewayRequestId: gatewayId });
    return accepted(headers);
  }
  const claimable =
    pending.status === 'pending' ||
    (pending.status === 'delivering' && (pending.claimedAt ?? 0) < Date.now() - CLAIM_LEASE_MS);
  if (!claimable) return alreadyAnswered();
  let token: string | undefined;
  try {
    token = await deps.store.claimPending(sessionId, gatewayId);
  } catch (error) {
    // Nothing was claimed (or the claim will lapse): the client may simply send the answer again.
    return errorResponse(id, error, headers);
  }
  if (!token) return alreadyAnswered();
  return deliverClaimed(deps, loaded, pending, token, answer, headers);
}

async function deliverClaimed(
  deps: LegacyDeps,
  loaded: LoadedAnswer,
  pending: PendingRecord,
  token: string,
  answer: JSONRPCResponse,
  headers: Record<string, string>,
): Promise<Response> {
  const sessionId = loaded.session.id;
  const { gatewayId, target } = pending;
  const id = answer.id ?? null;
  const toTarget = { ...answer, id: pending.targetRequestId };
  const protocolVersion = pending.targetProtocolVersion ?? loaded.session.protocolVersion;
  // A record without a holder lease is tied to no call (a request sent on the session's GET stream), or
  // its call was released (relay/waiting-call.ts): the target answers on a stream any instance reads
  // (its GET stream, or the released call's resumable stream), so no holder has to be there.
  const holderNeeded = pending.holderUntil !== undefined;
  if (holderNeeded && !(await holderAcknowledged(deps.store, sessionId, gatewayId, token))) {
    // The holder did not answer for itself: it may be gone, and the target's next step would reach nobody.
    await deps.store.releaseClaim(sessionId, gatewayId, token).catch(() => undefined);
    deps.logger.warn('answer not delivered: the holder of the call did not acknowledge it', {
      sessionId,
      target,
      gatewayRequestId: gatewayId,
    });
    return errorResponse(id, holderSilent(target), headers);
  }
  try {
    await deps.targets.deliver(target, { targetSessionId: pending.targetSessionId, protocolVersion }, toTarget);
  } catch (error) {
    const rejected = error instanceof MessageRejectedError || error instanceof TargetSessionExpiredError;
    deps.logger.warn('delivering an answer to the target failed', {
      sessionId,
      target,
      gatewayRequestId: gatewayId,
      outcome: rejected ? 'refused: the call is ended' : 'not delivered: released for a retry',
      error: describeError(error),
    });
    if (rejected) {
      await endCall(deps, loaded, pending, token);
      return errorResponse(
        id,
        new GatewayError(
          'AnswerRejected',
          `DependencyFailedException: target ${target} refused the answer; the call was ended — call the tool again`,
          { target },
        ),
        headers,
      );
    }
    await deps.store.releaseClaim(sessionId, gatewayId, token).catch((releaseError) =>
      // The claim lapses after CLAIM_LEASE_MS anyway: then the retry (or the holder's timeout) takes it over.
      deps.logger.warn('releasing a delivery claim failed', { sessionId, error: describeError(releaseError) }),
    );
    return errorResponse(
      id,
      new GatewayError(
        'AnswerNotDelivered',
        `DependencyFailedException: target ${target} did not take the answer; send the same answer again`,
        { target },
      ),
      headers,
    );
  }
  await settle(deps, sessionId, gatewayId, token);
  if (pending.clientRequestId === NO_CLIENT_REQUEST) {
    // Tied to no call (the session's GET stream): no call's end removes it, so it goes now and stops
    // counting against maxPendingRequestsPerSession (a repeated answer then finds nothing: 400 as well).
    await deps.store
      .deletePending(sessionId, [gatewayId])
      .catch((error) =>
        deps.logger.warn('removing an answered record failed', { sessionId, error: describeError(error) }),
      );
  }
  deps.logger.info('answer delivered', { sessionId, target, method: pending.method, gatewayRequestId: gatewayId });
  recordAnsweredInput(pending.method);
  return accepted(headers);
}

/** delivering → answered, tried twice: a claim left `delivering` would look like a dead delivery after the lease. */
async function settle(deps: LegacyDeps, sessionId: string, gatewayId: string, token: string): Promise<void> {
  for (let attempt = 1; attempt <= 2; attempt++) {
    try {
      await deps.store.settleClaim(sessionId, gatewayId, token);
      return;
    } catch (error) {
      if (attempt === 2)
        deps.logger.warn('settling a delivered answer failed', { sessionId, error: describeError(error) });
    }
  }
}

/** The target refused the answer: settle the record (no more answers) and tell the holder to end the call. */
async function endCall(deps: LegacyDeps, loaded: LoadedAnswer, pending: PendingRecord, token: string): Promise<void> {
  const sessionId = loaded.session.id;
  await settle(deps, sessionId, pending.gatewayId, token);
  await deps.store
    .markCancelled(
      sessionId,
      upstreamRequestId(pending.clientRequestId),
      loaded.session.expiresAt,
      'answer-undeliverable',
    )
    .catch((error) =>
      deps.logger.warn('marker for the holder not written', { sessionId, error: describeError(error) }),
    );
}
