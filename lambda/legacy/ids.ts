import { numberTextOf } from '../protocol/request-id';
import type { RequestId } from '../protocol/types';

/**
 * The id under which a client's request is forwarded to a target. Derived, not random, so that a
 * client's notifications/cancelled arriving on any instance maps to the target's id without state.
 * Client ids are unique among its in-flight requests, and each gateway session has its own target sessions.
 */
export function targetCallIdOf(clientId: RequestId): string {
  // A number id kept as its JSON text derives from its exact digits (protocol/request-id.ts); ids are
  // at most MAX_REQUEST_ID_LENGTH long, so this one is too (plus 4), and fits a DynamoDB sort key.
  const numberText = numberTextOf(clientId);
  if (numberText !== undefined) return `c.n.${numberText}`;
  return typeof clientId === 'number' ? `c.n.${clientId}` : `c.s.${clientId}`;
}
