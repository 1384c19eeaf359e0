import { asGatewayError, logFailure } from '../../../lambda/modern/failures';
import type { GatewayLogger } from '../../../lambda/observability/logger';
import { DependencyFailedError, GatewayError, httpStatusOf } from '../../../lambda/protocol/errors';

/** How a failed 2026-07-28 request is classified and logged (modern/failures.ts). */

function recordingLogger(): { logger: GatewayLogger; warned: unknown[] } {
  const warned: unknown[] = [];
  const none = () => undefined;
  return { logger: { debug: none, info: none, error: none, warn: (...args) => warned.push(args) }, warned };
}

describe('a failure of a 2026-07-28 request', () => {
  it('is a gateway timeout (504) when the request ran out of time or was cancelled', () => {
    for (const name of ['AbortError', 'TimeoutError']) {
      const error = Object.assign(new Error('stopped'), { name });
      const failure = asGatewayError(error);
      expect(failure).toBeInstanceOf(GatewayError);
      expect((failure as GatewayError).kind).toBe('UpstreamTimeout');
      expect(httpStatusOf(failure)).toBe(504);
    }
  });

  it('is left as it is otherwise', () => {
    const plain = new Error('boom');
    const known = new GatewayError('InvalidParams', 'Invalid params');
    expect(asGatewayError(plain)).toBe(plain);
    expect(asGatewayError(known)).toBe(known);
    expect(asGatewayError('text')).toBe('text');
  });

  it('is logged as a warning when unexpected, a server-side status, or retryable', () => {
    const { logger, warned } = recordingLogger();
    logFailure(logger, 'tools/call', new Error('boom'));
    logFailure(logger, 'tools/call', new GatewayError('UpstreamTimeout', 'late'));
    logFailure(logger, 'tools/call', new DependencyFailedError('t', 'down'));
    expect(warned).toHaveLength(3);
    expect(warned[0]).toEqual(['stateless request failed', expect.objectContaining({ method: 'tools/call' })]);
  });

  it("is not logged when it is the client's own mistake (a 4xx the gateway answered deliberately)", () => {
    const { logger, warned } = recordingLogger();
    logFailure(logger, 'tools/call', new GatewayError('InvalidParams', 'Invalid params'));
    logFailure(logger, 'tools/call', new GatewayError('MissingCapability', 'declare it'));
    expect(warned).toEqual([]);
  });
});
