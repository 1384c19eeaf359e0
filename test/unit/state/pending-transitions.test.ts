import {
  conditionOf,
  dynamoUpdateOf,
  PENDING_TRANSITIONS,
  type TransitionInputs,
  transitionHolds,
} from '../../../lambda/state/pending-transitions';
import { CLAIM_LEASE_MS } from '../../../lambda/state/records';

/**
 * The pending-record transitions as data: what DynamoDB is sent for them, and that time comes only
 * from the inputs (test/state/pending-transitions.test.ts compares DynamoDB and memory on a grid).
 */

const NOW = 1_900_000_000;
const inputs: TransitionInputs = { now: NOW, nowMs: NOW * 1000, token: 't', answer: '{}', until: 1, principal: 'p' };

describe('a transition as one conditional UpdateItem', () => {
  it('claim: pending or a lapsed delivery, not expired, the holder live or absent; sets the claim', () => {
    expect(dynamoUpdateOf(PENDING_TRANSITIONS.claim, inputs)).toEqual({
      UpdateExpression: 'SET #status = :delivering, #claim = :token, #claimedAt = :nowMs',
      ConditionExpression:
        '(#status = :pending OR (#status = :delivering AND #claimedAt < :staleBefore)) AND #expiresAt > :now AND ' +
        '(attribute_not_exists(#holderUntil) OR #holderUntil > :nowMs)',
      ExpressionAttributeNames: {
        '#status': 'status',
        '#claim': 'claim',
        '#claimedAt': 'claimedAt',
        '#expiresAt': 'expiresAt',
        '#holderUntil': 'holderUntil',
      },
      ExpressionAttributeValues: {
        ':delivering': 'delivering',
        ':token': 't',
        ':nowMs': NOW * 1000,
        ':pending': 'pending',
        ':staleBefore': NOW * 1000 - CLAIM_LEASE_MS,
        ':now': NOW,
      },
    });
  });

  it('asks for the record with the refusal only where the caller learns why from it (expire, answer, either way)', () => {
    const asking = Object.entries(PENDING_TRANSITIONS)
      .filter(([, t]) => dynamoUpdateOf(t, inputs).ReturnValuesOnConditionCheckFailure === 'ALL_OLD')
      .map(([name]) => name);
    expect(asking.sort()).toEqual(['answer', 'answerForPrincipal', 'expire']);
  });

  it('sends no values when the transition compares and writes none (detachHolder)', () => {
    expect(dynamoUpdateOf(PENDING_TRANSITIONS.detachHolder, inputs)).toEqual({
      UpdateExpression: 'REMOVE #holderUntil',
      ConditionExpression: 'attribute_exists(#pk)',
      ExpressionAttributeNames: { '#holderUntil': 'holderUntil', '#pk': 'pk' },
    });
  });

  it('refuses to build a transition without an input it needs', () => {
    expect(() => dynamoUpdateOf(PENDING_TRANSITIONS.settle, { now: NOW, nowMs: NOW * 1000 })).toThrow(/token/);
  });
});

describe('time is an input', () => {
  const record = { status: 'pending', expiresAt: NOW + 1, holderUntil: NOW * 1000 + 1 };

  it('decides expiry and the lease by the given now, whatever the clock says', () => {
    expect(transitionHolds(PENDING_TRANSITIONS.record, record, { ...inputs, answer: 'a' })).toBe(true);
    expect(transitionHolds(PENDING_TRANSITIONS.record, record, { ...inputs, now: NOW + 1 })).toBe(false);
    expect(transitionHolds(PENDING_TRANSITIONS.record, record, { ...inputs, nowMs: NOW * 1000 + 1 })).toBe(false);
  });

  it('lets a claim be taken over exactly when it is older than the lease', () => {
    const claimed = { status: 'delivering', expiresAt: NOW + 1, claim: 'x', claimedAt: NOW * 1000 - CLAIM_LEASE_MS };
    expect(transitionHolds(PENDING_TRANSITIONS.claim, claimed, inputs)).toBe(false);
    expect(transitionHolds(PENDING_TRANSITIONS.claim, claimed, { ...inputs, nowMs: NOW * 1000 + 1 })).toBe(true);
    expect(conditionOf(PENDING_TRANSITIONS.expire)).toMatchObject({ op: 'or' });
  });
});
