import type { JSONRPCErrorResponse, JSONRPCResultResponse } from '@modelcontextprotocol/sdk/types.js';
import { deliverGatewayAnswer, GATEWAY_TARGET } from '../confirm/legacy-confirm';
import type { GatewayDeps } from '../core/deps';
import { accepted, errorResponse } from '../core/http';
import { RpcCode } from '../core/jsonrpc';
import { describeError } from '../core/logger';
import { recordAnsweredInput } from '../observability/metrics';
import type { LoadedSession } from '../state/store';

/**
 * The client's answer to a relayed server request: a separate POST that may reach any instance.
 * It must match a pending request of this very session, is claimed at most once (conditional
 * write), and is delivered to the target with the target's session id and its original request id.
 * The target then continues on the stream held by the instance that relayed the request.
 */
export async function deliverAnswer(
  deps: GatewayDeps,
  loaded: LoadedSession,
  answer: JSONRPCResultResponse | JSONRPCErrorResponse,
  headers: Record<string, string>,
): Promise<Response> {
  const sessionId = loaded.session.id;
  const gatewayId = typeof answer.id === 'string' ? answer.id : undefined;
  const pending = gatewayId ? loaded.pending.get(gatewayId) : undefined;
  if (!gatewayId || !pending) {
    const message =
      loaded.pending.size === 0
        ? 'No matching pending request found for this session: nothing is pending'
        : 'No matching pending request found for this session: the id must be the one the gateway sent';
    deps.logger.info('answer refused: no matching pending request', { sessionId });
    return errorResponse(400, answer.id ?? null, RpcCode.InvalidRequest, message, undefined, headers);
  }
  // --- confirmTools hook (lambda/confirm): the gateway itself asked; the waiting invocation reads the stored answer ---
  if (pending.target === GATEWAY_TARGET) return deliverGatewayAnswer(deps, loaded, answer, headers);
  // --- end confirmTools hook ---
  if (pending.status !== 'pending' || !(await deps.store.claimPending(sessionId, gatewayId))) {
    deps.logger.info('answer refused: already answered or expired', { sessionId, gatewayRequestId: gatewayId });
    return errorResponse(
      400,
      answer.id ?? null,
      RpcCode.InvalidRequest,
      'The pending request was already answered or has expired',
      undefined,
      headers,
    );
  }
  const client = deps.targets.get(pending.target);
  const toTarget = { ...answer, id: pending.targetRequestId };
  try {
    if (!client) throw new Error('target no longer configured');
    await client.send(
      { targetSessionId: pending.targetSessionId, protocolVersion: targetVersion(loaded, pending.target) },
      toTarget,
    );
  } catch (error) {
    deps.logger.warn('delivering an answer to the target failed', {
      sessionId,
      target: pending.target,
      error: describeError(error),
    });
    return errorResponse(
      502,
      answer.id ?? null,
      RpcCode.InternalError,
      `DependencyFailedException: target ${pending.target} did not take the answer; retry the call`,
      {
        type: 'DependencyFailedException',
        target: pending.target,
      },
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

function targetVersion(loaded: LoadedSession, target: string): string {
  return loaded.targets.get(target)?.protocolVersion ?? loaded.session.protocolVersion;
}
