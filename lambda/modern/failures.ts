import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { GatewayError, httpStatusOf } from '../protocol/errors';

/** How a failed 2026-07-28 request is classified and logged, for the path and its routes alike. */

/** A timeout or a cancelled request is a gateway timeout (504), not an internal error. */
export function asGatewayError(error: unknown): unknown {
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) {
    return new GatewayError('UpstreamTimeout', 'Gateway timeout: the request ran out of time or was cancelled');
  }
  return error;
}

export function logFailure(logger: GatewayLogger, method: string, error: unknown): void {
  if (!(error instanceof GatewayError) || httpStatusOf(error) >= 500 || error.spec.retryable) {
    logger.warn('stateless request failed', { method, error: describeError(error) });
  }
}
