import { GatewayError } from '../protocol/errors';
import { type InputResponses, inputResponseProblem, inputResponsesProblem } from '../protocol/input-responses';
import type { BridgeRound } from './request-state';

/**
 * A retry's `inputResponses`, checked before anything is claimed, delivered or forwarded: a malformed
 * map is -32602 / 400 (never an internal error), and the retry of a bridged round must answer exactly
 * that round's requests, each with a result of its kind. A retry that leaves some out is refused at once,
 * naming them: the target waits for every answer of a round, so a partial one could only time out.
 */
export function checkedInputResponses(value: unknown): InputResponses | undefined {
  const problem = inputResponsesProblem(value);
  if (problem) throw malformed(`Invalid params: ${problem}`, { field: 'inputResponses' });
  return value as InputResponses | undefined;
}

/** The answers of a bridged round against the round's requests (a state sealed without them is not checked). */
export function checkRoundAnswers(round: BridgeRound, responses: InputResponses | undefined): void {
  const requests = round.requests;
  if (!requests) return;
  const given = responses ?? {};
  const missing = Object.keys(requests).filter((id) => !Object.hasOwn(given, id));
  const unexpected = Object.keys(given).filter((id) => !Object.hasOwn(requests, id));
  if (missing.length || unexpected.length) {
    const parts = [
      missing.length ? `no answer to ${missing.join(', ')}` : '',
      unexpected.length ? `answers to requests this round did not ask (${unexpected.join(', ')})` : '',
    ].filter(Boolean);
    throw malformed(
      `Invalid params: inputResponses must answer every request of this input round and nothing else: ${parts.join('; ')}`,
      { field: 'inputResponses', missing, unexpected },
    );
  }
  for (const [id, method] of Object.entries(requests)) {
    const problem = inputResponseProblem(method, given[id] as Record<string, unknown>);
    if (problem)
      throw malformed(`Invalid params: inputResponses["${id}"] answers ${method}: ${problem}`, {
        field: 'inputResponses',
        key: id,
      });
  }
}

const malformed = (message: string, data: Record<string, unknown>) =>
  new GatewayError('MalformedParams', message, data);
