import { errorResponse, refuse } from '../http/errors';
import { accepted } from '../http/responses';
import { describeError } from '../observability/logger';
import { recordAnsweredInput } from '../observability/metrics';
import { GatewayError } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import { storeHeldAnswer } from '../relay/held';
import type { LoadedSession } from '../state/store';
import type { LegacyDeps } from './deps';

/**
 * The client's answer to a request the gateway sent it: a separate POST that may reach any
 * instance. It must match a pending request of this very session and is taken at most once
 * (conditional write). A relayed request's answer goes to the target with the target's session id
 * and its original request id; the target then continues on the stream held by the instance that
 * relayed the request. A held request's answer is stored in its record for the waiting invocation.
 */
export async function deliverAnswer(
  deps: LegacyDeps,
  loaded: LoadedSession,
  answer: JSONRPCResponse,
  headers: Record<string, string>,
): Promise<Response> {
  const sessionId = loaded.session.id;
  const gatewayId = typeof answer.id === 'string' ? answer.id : undefined;
  const pending = gatewayId ? loaded.pending.get(gatewayId) : undefined;
  const id = answer.id ?? null;
  if (!gatewayId || !pending) {
    const message =
      loaded.pending.size === 0
        ? 'No matching pending request found for this session: nothing is pending'
        : 'No matching pending request found for this session: the id must be the one the gateway sent';
    deps.logger.info('answer refused: no matching pending request', { sessionId });
    return refuse('AnswerRefused', message, { id, headers });
  }
  const alreadyAnswered = () => {
    deps.logger.info('answer refused: already answered or expired', { sessionId, gatewayRequestId: gatewayId });
    return refuse('AnswerRefused', 'The pending request was already answered or has expired', { id, headers });
  };
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
  let claimed: boolean;
  try {
    claimed = pending.status === 'pending' && (await deps.store.claimPending(sessionId, gatewayId));
  } catch (error) {
    return errorResponse(id, error, headers);
  }
  if (!claimed) return alreadyAnswered();
  const toTarget = { ...answer, id: pending.targetRequestId };
  const protocolVersion = loaded.targets.get(pending.target)?.protocolVersion ?? loaded.session.protocolVersion;
  try {
    await deps.targets.deliver(pending.target, { targetSessionId: pending.targetSessionId, protocolVersion }, toTarget);
  } catch (error) {
    deps.logger.warn('delivering an answer to the target failed', {
      sessionId,
      target: pending.target,
      error: describeError(error),
    });
    return errorResponse(
      id,
      new GatewayError(
        'AnswerNotDelivered',
        `DependencyFailedException: target ${pending.target} did not take the answer; retry the call`,
        {
          target: pending.target,
        },
      ),
      headers,
    );
  }
  deps.logger.info('answer delivered', {
    sessionId,
    target: pending.target,
    method: pending.method,
    gatewayRequestId: gatewayId,
  });
  recordAnsweredInput(pending.method);
  return accepted(headers);
}
