import { describeError } from '../observability/logger';
import { GatewayError, rpcError, rpcErrorOf } from '../protocol/errors';
import type { JSONRPCMessage, RequestId } from '../protocol/types';
import type { CallEndReason } from '../state/store';

/**
 * The client's error for a call that failed: why the gateway ended it (the deadline, a pending
 * timeout, the client gone or cancelling, an answer the target refused, a shutdown), or else the
 * error itself (a failure worth looking at is logged).
 */
export function callFailure(
  id: RequestId,
  endReason: CallEndReason | undefined,
  error: unknown,
  log: { warn(message: string, extra?: object): void },
): JSONRPCMessage {
  switch (endReason) {
    case 'deadline':
      return rpcErrorOf(
        id,
        'RequestTimeout',
        'Request timed out at the gateway before the target answered; retry the call',
      );
    case 'pending-timeout':
      return rpcErrorOf(
        id,
        'RequestTimeout',
        'Timed out waiting for the client to answer a request of the target; retry the call',
      );
    case 'client-gone':
      return rpcErrorOf(id, 'ClientGone', 'Client went away');
    case 'answer-lost':
      return rpcErrorOf(
        id,
        'AnswerLost',
        'The answer to a request of the target could not be delivered (the target refused it); the call was ended — retry the call',
      );
    case 'shutdown':
      return rpcErrorOf(
        id,
        'ShuttingDown',
        'The gateway instance holding this call is shutting down; the call was cancelled at the target — retry it',
      );
    case 'client-cancelled':
      return rpcErrorOf(id, 'ClientCancelled', 'Request cancelled by the client');
    default:
      if (!(error instanceof GatewayError) || error.spec.status >= 500 || error.spec.retryable) {
        log.warn('relayed call failed', { error: describeError(error) });
      }
      return rpcError(id, error);
  }
}
