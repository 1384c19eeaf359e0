import { GatewayError } from '../protocol/errors';
import type { DeliveryOutcome } from './answer-delivery';
import { holderSilent } from './holder-ack';

/**
 * What the client is told when its answer was not delivered (answer-delivery.ts's outcomes), in one
 * table for both eras. The answer arrives two ways: a 2025 session's answer POST (`post`: the answer
 * is the whole request, so its refusals are its response) and a 2026-07-28 client's retry of an
 * input round bridged to a 2025 target (`retry`: the refusal is the retried call's error, and what the
 * client may do is send the same retry again, or the request again without `requestState`).
 */
export type AnswerSender = 'post' | 'retry';

/** An outcome's meaning for the sender: an error, or (retry only) delivered after all, or look again. */
export type Refusal = GatewayError | 'delivered' | 'wait';

type Refused = Exclude<DeliveryOutcome['kind'], 'delivered'>;

/** A 2025 answer POST for a request that no longer waits: 400, the answer is not delivered. */
export const alreadyAnswered = () =>
  new GatewayError('AnswerRefused', 'The pending request was already answered or has expired');

/** A 2025 answer POST whose call's holder died (a crash, a killed instance): its next step would reach nobody. */
export const holderGonePost = () =>
  new GatewayError(
    'AnswerRefused',
    'The call that sent this request is no longer held by any gateway instance (it stopped); the answer was not delivered — call the tool again',
  );

/** A 2026-07-28 retry of a round that was answered already or expired: start again. */
export const staleRound = () =>
  new GatewayError(
    'RequestStateRefused',
    'Invalid params: this input round was already answered or has expired; send the request again without requestState and inputResponses',
    { reason: 'expired' },
  );

const TABLE: Record<Refused, Record<AnswerSender, (target: string) => Refusal>> = {
  answered: { post: alreadyAnswered, retry: () => 'delivered' },
  expired: { post: alreadyAnswered, retry: staleRound },
  // Another delivery of the same answer is under way: a repeated POST is refused, a retry waits for it.
  busy: { post: alreadyAnswered, retry: () => 'wait' },
  'holder-gone': {
    post: holderGonePost,
    retry: () =>
      new GatewayError(
        'RequestStateRefused',
        'Invalid params: the call behind this input round is no longer held by any gateway instance; send the request again without requestState and inputResponses',
        { reason: 'expired' },
      ),
  },
  'holder-silent': { post: holderSilent, retry: holderSilent },
  refused: {
    post: (target) =>
      new GatewayError(
        'AnswerRejected',
        `DependencyFailedException: target ${target} refused the answer; the call was ended — call the tool again`,
        { target },
      ),
    retry: (target) =>
      new GatewayError('DependencyFailed', `target ${target}: refused the answer; the call was ended`, { target }),
  },
  'not-delivered': {
    post: (target) =>
      new GatewayError(
        'AnswerNotDelivered',
        `DependencyFailedException: target ${target} did not take the answer; send the same answer again`,
        { target },
      ),
    retry: (target) =>
      new GatewayError(
        'AnswerNotDelivered',
        `DependencyFailedException: target ${target} did not take the answer; send the same retry again`,
        { target },
      ),
  },
};

/** What `outcome` tells `sender` about an answer for `target`'s request; undefined: delivered. */
export function refusalOf(outcome: DeliveryOutcome, sender: AnswerSender, target: string): Refusal | undefined {
  if (outcome.kind === 'delivered') return undefined;
  return TABLE[outcome.kind][sender](target);
}
