import { checkedInputResponses, checkRoundAnswers } from '../../../lambda/modern/round-answers';
import { GatewayError, httpStatusOf } from '../../../lambda/protocol/errors';

/**
 * A retry's inputResponses (modern/round-answers.ts): a malformed map is -32602/400, and the retry of a
 * bridged round answers exactly the round's requests, each with a result of its kind — refused at once,
 * naming what is missing or unexpected, before anything is claimed or delivered.
 */

const refusal = (fn: () => unknown): GatewayError => {
  try {
    fn();
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
};

const ACCEPT = { action: 'accept', content: { ok: true } };
const SAMPLED = { role: 'assistant', model: 'm', content: { type: 'text', text: 'hi' } };
const ROUND = { id: 'mrtr-1', round: 1, requests: { 'gw-a': 'elicitation/create', 'gw-b': 'sampling/createMessage' } };

describe('the inputResponses of a retry', () => {
  it('are taken when absent or an object of result objects', () => {
    expect(checkedInputResponses(undefined)).toBeUndefined();
    expect(checkedInputResponses({ a: ACCEPT })).toEqual({ a: ACCEPT });
  });

  it('are refused with -32602 (HTTP 400) naming the field when not an object, or when an answer is not an object', () => {
    for (const value of [[ACCEPT], 'yes', null, { a: 'accept' }, { a: [ACCEPT] }]) {
      const error = refusal(() => checkedInputResponses(value));
      expect([error.kind, error.spec.code, httpStatusOf(error)]).toEqual(['MalformedParams', -32602, 400]);
      expect(error.data).toEqual({ field: 'inputResponses' });
    }
  });
});

describe('the answers to a bridged round', () => {
  it('are taken when they answer every request of the round, each with a result of its kind', () => {
    expect(() => checkRoundAnswers(ROUND, { 'gw-a': ACCEPT, 'gw-b': SAMPLED })).not.toThrow();
  });

  it('are refused when some are missing, naming them', () => {
    const error = refusal(() => checkRoundAnswers(ROUND, { 'gw-a': ACCEPT }));
    expect(error.kind).toBe('MalformedParams');
    expect(error.message).toContain('no answer to gw-b');
    expect(error.data).toEqual({ field: 'inputResponses', missing: ['gw-b'], unexpected: [] });
    expect(refusal(() => checkRoundAnswers(ROUND, undefined)).data).toMatchObject({ missing: ['gw-a', 'gw-b'] });
  });

  it('are refused when they answer requests the round did not ask', () => {
    const error = refusal(() => checkRoundAnswers(ROUND, { 'gw-a': ACCEPT, 'gw-b': SAMPLED, 'gw-z': ACCEPT }));
    expect(error.message).toContain('answers to requests this round did not ask (gw-z)');
    expect(error.data).toEqual({ field: 'inputResponses', missing: [], unexpected: ['gw-z'] });
  });

  it('are refused when an answer does not fit its request, naming the key', () => {
    const error = refusal(() => checkRoundAnswers(ROUND, { 'gw-a': { action: 'maybe' }, 'gw-b': SAMPLED }));
    expect(error.message).toContain('inputResponses["gw-a"] answers elicitation/create');
    expect(error.data).toEqual({ field: 'inputResponses', key: 'gw-a' });
    const roots = { id: 'mrtr-1', round: 2, requests: { 'gw-r': 'roots/list' } };
    expect(refusal(() => checkRoundAnswers(roots, { 'gw-r': { roots: [{ name: 'no uri' }] } })).data).toEqual({
      field: 'inputResponses',
      key: 'gw-r',
    });
  });

  it('are not checked against a state sealed without the round’s requests', () => {
    expect(() => checkRoundAnswers({ id: 'mrtr-1', round: 1 }, { anything: {} })).not.toThrow();
  });
});
