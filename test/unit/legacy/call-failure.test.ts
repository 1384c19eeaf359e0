import { callFailure } from '../../../lambda/legacy/call-failure';
import { DependencyFailedError, GatewayError } from '../../../lambda/protocol/errors';
import type { CallEndReason } from '../../../lambda/state/store';

/**
 * The client's error for a relayed call that failed (legacy/call-failure.ts): why the gateway ended
 * it, when it did, else the error itself; a failure worth looking at is warned once.
 */

function logged() {
  const warnings: string[] = [];
  return { warnings, log: { warn: (message: string) => warnings.push(message) } };
}

describe('the error a failed call ends with', () => {
  it.each<[CallEndReason, number, string, boolean]>([
    ['deadline', -32001, 'Request timed out at the gateway', true],
    ['pending-timeout', -32001, 'Timed out waiting for the client to answer', true],
    ['client-gone', -32001, 'Client went away', false],
    ['answer-lost', -32001, 'could not be delivered', true],
    ['shutdown', -32001, 'shutting down', true],
    ['client-cancelled', -32001, 'cancelled by the client', false],
  ])('ended for %s: code %d, says why, retryable only when a retry can help', (reason, code, words, retryable) => {
    const { warnings, log } = logged();
    const message = callFailure(7, reason, new Error('the abort the target link threw'), log);
    expect(message).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code } });
    const { error } = message as { error: { message: string; data?: { retryable?: boolean } } };
    expect(error.message).toContain(words);
    expect(error.data?.retryable === true).toBe(retryable);
    // Why the gateway ended the call is known: the error it caused is not worth a warning.
    expect(warnings).toEqual([]);
  });

  it('without an end reason is the error itself, with the request id', () => {
    const { log } = logged();
    const message = callFailure('call-1', undefined, new GatewayError('InvalidParams', 'Invalid params: no name'), log);
    expect(message).toMatchObject({ id: 'call-1', error: { code: -32602, message: 'Invalid params: no name' } });
  });

  it('warns for a failure worth looking at (a target failing, an unknown error), not for a client mistake', () => {
    const client = logged();
    callFailure(1, undefined, new GatewayError('InvalidParams', 'Invalid params'), client.log);
    expect(client.warnings).toEqual([]);
    const target = logged();
    callFailure(1, undefined, new DependencyFailedError('demo', 'HTTP 502'), target.log);
    expect(target.warnings).toEqual(['relayed call failed']);
    const unknown = logged();
    const message = callFailure(1, undefined, new TypeError('boom'), unknown.log);
    expect(unknown.warnings).toEqual(['relayed call failed']);
    // What the unknown error said stays in the log, not in the client's message.
    expect(message).toMatchObject({ error: { code: -32603, message: 'Internal error' } });
  });
});
