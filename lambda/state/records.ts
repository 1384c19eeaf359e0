import { randomBytes } from 'node:crypto';
import type { RequestId } from '../protocol/types';
import type { PendingKind, PendingRecord } from './store';

/** 256 random bits, base64url: visible ASCII as the transport requires, unguessable. */
export function newSessionId(): string {
  return randomBytes(32).toString('base64url');
}

/** Ids of server-to-client requests as the client sees them: 128 random bits, never the target's own. */
export function newGatewayRequestId(): string {
  return `gw-${randomBytes(16).toString('base64url')}`;
}

/**
 * A new pending record with a fresh gateway id, expiring after `timeoutSeconds`. A held request (no
 * target request behind it) uses its gateway id as the target's id.
 */
export function newPendingRecord(
  timeoutSeconds: number,
  fields: {
    kind: PendingKind;
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
