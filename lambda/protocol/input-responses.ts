/**
 * The shape of a 2026-07-28 retry's `inputResponses`: an object whose values are the results of the
 * input requests they answer, keyed as the requests were (the spec's `InputResponses`). Checked where a
 * retry enters, so a malformed one is -32602 / 400 instead of an internal error or a target's confusion.
 */

export type InputResponses = Record<string, Record<string, unknown>>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** What is wrong with `value` as an `inputResponses` map (undefined: absent, or well formed). */
export function inputResponsesProblem(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) return `inputResponses must be an object keyed like inputRequests, not ${describe(value)}`;
  for (const [key, answer] of Object.entries(value)) {
    if (!isObject(answer)) return `inputResponses["${key}"] must be a result object, not ${describe(answer)}`;
  }
  return undefined;
}

const ELICIT_ACTIONS: unknown[] = ['accept', 'decline', 'cancel'];

/**
 * What is wrong with `answer` as the result of an input request of `method` (ElicitResult,
 * CreateMessageResult, ListRootsResult: the fields a receiver needs); undefined when it fits.
 */
export function inputResponseProblem(method: string, answer: Record<string, unknown>): string | undefined {
  switch (method) {
    case 'elicitation/create':
      if (!ELICIT_ACTIONS.includes(answer.action))
        return 'an elicitation result needs action accept, decline or cancel';
      if (answer.content !== undefined && !isObject(answer.content))
        return 'an elicitation result content must be an object';
      return undefined;
    case 'sampling/createMessage':
      if (typeof answer.role !== 'string' || typeof answer.model !== 'string')
        return 'a sampling result needs role and model';
      if (!isObject(answer.content) && !Array.isArray(answer.content)) return 'a sampling result needs content';
      return undefined;
    case 'roots/list':
      if (!Array.isArray(answer.roots) || !answer.roots.every((root) => isObject(root) && typeof root.uri === 'string'))
        return 'a roots result needs roots, each with a uri';
      return undefined;
    default:
      return undefined;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
