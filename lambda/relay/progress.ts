import { randomUUID } from 'node:crypto';
import type { JSONRPCNotification, ProgressToken } from '../protocol/types';

/**
 * Progress tokens per call: the target sees a token unique to this call, the client its own.
 * Progress of other tokens (another call's, a stale one) is dropped.
 */
export class ProgressMapper {
  readonly upstreamToken?: string;

  constructor(readonly clientToken?: ProgressToken) {
    if (clientToken !== undefined) this.upstreamToken = `gw-progress-${randomUUID()}`;
  }

  /** The notification as the client should see it, or undefined when it is not this call's progress. */
  map(notification: JSONRPCNotification): JSONRPCNotification | undefined {
    if (notification.method !== 'notifications/progress') return notification;
    const params = notification.params as { progressToken?: ProgressToken } | undefined;
    if (this.upstreamToken === undefined || params?.progressToken !== this.upstreamToken) return undefined;
    return { ...notification, params: { ...params, progressToken: this.clientToken } };
  }
}
