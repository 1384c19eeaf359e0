import { randomBytes } from 'node:crypto';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { PendingRecord } from '../state/store';

/** 256 random bits, base64url: visible ASCII as the transport requires, unguessable. */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}

/** Ids of server-to-client requests as the client sees them: 128 random bits, never the target's own. */
export function newGatewayRequestId(): string {
  return `gw-${randomBytes(16).toString('base64url')}`;
}

/**
 * The id under which a client's request is forwarded to a target. Derived, not random, so that a
 * client's notifications/cancelled arriving on any instance maps to the target's id without state.
 * Client ids are unique among its in-flight requests, and each gateway session has its own target sessions.
 */
export function upstreamRequestId(clientId: RequestId): string {
  return typeof clientId === 'number' ? `c.n.${clientId}` : `c.s.${clientId}`;
}

/**
 * A new pending record with a fresh gateway id, expiring after `timeoutSeconds`. A request the
 * gateway holds itself (no target request behind it) uses its gateway id as the target's id.
 */
export function newPendingRecord(
  timeoutSeconds: number,
  fields: {
    method: string;
    target: string;
    clientRequestId: RequestId;
    targetSessionId?: string;
    targetRequestId?: RequestId;
  },
): PendingRecord {
  const now = Math.floor(Date.now() / 1000);
  const gatewayId = newGatewayRequestId();
  return {
    gatewayId,
    targetRequestId: gatewayId,
    ...fields,
    status: 'pending',
    createdAt: now,
    expiresAt: now + timeoutSeconds,
  };
}
