import type { RequestId } from '../protocol/types';

/**
 * The id under which a client's request is forwarded to a target. Derived, not random, so that a
 * client's notifications/cancelled arriving on any instance maps to the target's id without state.
 * Client ids are unique among its in-flight requests, and each gateway session has its own target sessions.
 */
export function upstreamRequestId(clientId: RequestId): string {
  return typeof clientId === 'number' ? `c.n.${clientId}` : `c.s.${clientId}`;
}
