import { errorResponse } from '../http/errors';
import { accepted } from '../http/responses';
import { describeError } from '../observability/logger';
import { settleClaim } from '../pending/answer-delivery';
import { type IntakeOutcome, takeAnswer, takeBeforeReading } from '../pending/answer-intake';
import { MCP_HEADERS } from '../protocol/headers';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { LoadedAnswer, PendingRecord } from '../state/store';
import { NO_CLIENT_REQUEST } from './client-stream';
import type { LegacyDeps } from './deps';
import { targetCallIdOf } from './ids';

/**
 * The client's answer to a request the gateway sent it: a separate POST that may reach any instance.
 * What is done with it is decided in one place, the waiting layer's intake (pending/answer-intake.ts:
 * stored for the gateway's own question, recorded for the live holder, or delivered from here);
 * this module renders its outcome as the answer POST's response, and gives it the two things only the
 * 2025 path knows: how a call is ended when its target refuses the answer (a marker its holder finds),
 * and that a request tied to no call (the session's GET stream) has its record removed once answered.
 */

/**
 * The answer's first try, before anything is read (the POST's MCP-Protocol-Version already checked,
 * its Mcp-Session-Id present and well-formed): one conditional write on its pending record, 202 — the
 * request's only DynamoDB request. Undefined when the answer is taken after the read (`deliverAnswer`).
 * What the session read guaranteed, the write's conditions keep (pending/answer-intake.ts): the session
 * is the caller's, was not deleted, has not expired; an unsupported MCP-Protocol-Version is refused
 * before any message but initialize (legacy-path.ts). A failed write is answered as the read's failure is.
 */
export async function recordBeforeReading(
  deps: LegacyDeps,
  sessionId: string,
  principal: string,
  answer: JSONRPCResponse,
  writeId: string,
): Promise<Response | undefined> {
  const outcome = await takeBeforeReading(deps, { partition: sessionId, answer, writeId, principal });
  if (outcome.kind === 'read-first') return undefined;
  return rendered(outcome, answer, { [MCP_HEADERS.sessionId]: sessionId });
}

/** The answer after the session and its record were read. */
export async function deliverAnswer(
  deps: LegacyDeps,
  loaded: LoadedAnswer,
  answer: JSONRPCResponse,
  headers: Record<string, string>,
  writeId: string,
): Promise<Response> {
  const sessionId = loaded.session.id;
  const outcome = await takeAnswer(deps, {
    partition: sessionId,
    answer,
    writeId,
    pending: typeof answer.id === 'string' ? loaded.pending : undefined,
    protocolVersion: loaded.session.protocolVersion,
    endCall: (record, token) => endCall(deps, loaded, record, token),
  });
  if (
    outcome.kind === 'accepted' &&
    outcome.how === 'delivered' &&
    outcome.record?.clientRequestId === NO_CLIENT_REQUEST
  ) {
    // Tied to no call (the session's GET stream): no call's end removes it, so it goes now and stops
    // counting against maxPendingRequestsPerSession (a repeated answer then finds nothing: refused as well).
    await deps.store
      .deletePending(sessionId, [outcome.record.gatewayId])
      .catch((error) =>
        deps.logger.warn('removing an answered record failed', { sessionId, error: describeError(error) }),
      );
  }
  return rendered(outcome, answer, headers);
}

/** The intake's outcome as the answer POST's response: 202, or the error with its documented code. */
function rendered(outcome: IntakeOutcome, answer: JSONRPCResponse, headers: Record<string, string>): Response {
  if (outcome.kind === 'accepted') return accepted(headers);
  if (outcome.kind === 'read-first') throw new Error('an answer read first has no response of its own');
  return errorResponse(answer.id ?? null, outcome.error, headers);
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
