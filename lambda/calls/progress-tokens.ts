import { randomUUID } from 'node:crypto';
import type { JSONRPCNotification, ProgressToken } from '../protocol/types';

/**
 * Progress tokens per call: the target sees a token unique to this call, the client its own.
 * Progress of other tokens (another call's, a stale one) is dropped.
 */
export class ProgressMapper {
  readonly targetToken?: string;

  /** `targetToken`: the one a call taken over from another instance gave the target already. */
  constructor(
    readonly clientToken?: ProgressToken,
    targetToken?: string,
  ) {
    if (clientToken !== undefined) this.targetToken = targetToken ?? `gw-progress-${randomUUID()}`;
  }

  /** The notification as the client should see it, or undefined when it is not this call's progress. */
  map(notification: JSONRPCNotification): JSONRPCNotification | undefined {
    if (notification.method !== 'notifications/progress') return notification;
    const params = notification.params as { progressToken?: ProgressToken } | undefined;
    if (this.targetToken === undefined || params?.progressToken !== this.targetToken) return undefined;
    return { ...notification, params: { ...params, progressToken: this.clientToken } };
  }
}
