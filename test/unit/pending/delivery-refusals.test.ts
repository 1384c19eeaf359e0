import type { DeliveryOutcome } from '../../../lambda/pending/answer-delivery';
import { refusalOf, staleRound } from '../../../lambda/pending/delivery-refusals';
import { GatewayError, httpStatusOf } from '../../../lambda/protocol/errors';

/**
 * What the client is told when its answer was not delivered (pending/delivery-refusals.ts), for a 2025
 * answer POST and for a 2026-07-28 retry of a bridged round: one table, two senders.
 */

const outcome = (kind: DeliveryOutcome['kind']): DeliveryOutcome =>
  kind === 'not-delivered' || kind === 'refused' ? { kind, error: new Error('x') } : ({ kind } as DeliveryOutcome);

const asError = (refusal: unknown): GatewayError => {
  if (!(refusal instanceof GatewayError)) throw new Error(`expected an error, got ${String(refusal)}`);
  return refusal;
};

describe('an answer that was delivered', () => {
  it('is no refusal for either sender', () => {
    expect(refusalOf({ kind: 'delivered' }, 'post', 't')).toBeUndefined();
    expect(refusalOf({ kind: 'delivered' }, 'retry', 't')).toBeUndefined();
  });
});

describe("a 2025 answer POST's refusals", () => {
  it('an answered, expired or busy request: AnswerRefused (400), not delivered', () => {
    for (const kind of ['answered', 'expired', 'busy'] as const) {
      const error = asError(refusalOf(outcome(kind), 'post', 't'));
      expect([error.kind, httpStatusOf(error)]).toEqual(['AnswerRefused', 400]);
    }
  });

  it('a holder that died: AnswerRefused, telling the client to call the tool again', () => {
    expect(asError(refusalOf(outcome('holder-gone'), 'post', 't')).message).toContain('call the tool again');
  });

  it('a target that refused the answer: AnswerRejected (502, not retryable) naming the target', () => {
    const error = asError(refusalOf(outcome('refused'), 'post', 'legacy'));
    expect([error.kind, httpStatusOf(error), error.spec.retryable, error.data]).toEqual([
      'AnswerRejected',
      502,
      undefined,
      { target: 'legacy' },
    ]);
  });

  it('a target that did not take it, or a silent holder: AnswerNotDelivered (502, retryable), send it again', () => {
    for (const kind of ['not-delivered', 'holder-silent'] as const) {
      const error = asError(refusalOf(outcome(kind), 'post', 'legacy'));
      expect([error.kind, httpStatusOf(error), error.spec.retryable, error.retryAfterSeconds]).toEqual([
        'AnswerNotDelivered',
        502,
        true,
        1,
      ]);
    }
    expect(asError(refusalOf(outcome('not-delivered'), 'post', 'legacy')).message).toContain(
      'send the same answer again',
    );
  });
});

describe("a 2026-07-28 retry's refusals", () => {
  it('an answer already delivered (by an earlier or concurrent retry) counts as delivered; a delivery in flight is waited for', () => {
    expect(refusalOf(outcome('answered'), 'retry', 't')).toBe('delivered');
    expect(refusalOf(outcome('busy'), 'retry', 't')).toBe('wait');
  });

  it('an expired round or a holder that died: -32602 (400) with reason expired, start again without requestState', () => {
    for (const kind of ['expired', 'holder-gone'] as const) {
      const error = asError(refusalOf(outcome(kind), 'retry', 't'));
      expect([error.kind, error.spec.code, httpStatusOf(error), error.data]).toEqual([
        'RequestStateRefused',
        -32602,
        400,
        { reason: 'expired' },
      ]);
      expect(error.message).toContain('without requestState and inputResponses');
    }
    expect(staleRound().message).toBe(asError(refusalOf(outcome('expired'), 'retry', 't')).message);
  });

  it('a target that refused the answer ends the call: DependencyFailed naming the target', () => {
    const error = asError(refusalOf(outcome('refused'), 'retry', 'legacy'));
    expect([error.kind, error.data]).toEqual(['DependencyFailed', { target: 'legacy' }]);
  });

  it('a target that did not take it: AnswerNotDelivered, send the same retry again', () => {
    const error = asError(refusalOf(outcome('not-delivered'), 'retry', 'legacy'));
    expect(error.kind).toBe('AnswerNotDelivered');
    expect(error.message).toContain('send the same retry again');
  });
});
