import { randomUUID } from 'node:crypto';
import type { JSONRPCNotification, ProgressToken } from '../protocol/types';

/**
 * Progress tokens per call: the target sees a token unique to this call, the client its own.
 * Progress of other tokens (another call's, a stale one) is dropped.
 */
export class ProgressMapper {
  readonly upstreamToken?: string;

  /** `upstreamToken`: the one a call taken over from another instance gave the target already. */
  constructor(
    readonly clientToken?: ProgressToken,
    upstreamToken?: string,
  ) {
    if (clientToken !== undefined) this.upstreamToken = upstreamToken ?? `gw-progress-${randomUUID()}`;
  }

  /** The notification as the client should see it, or undefined when it is not this call's progress. */
  map(notification: JSONRPCNotification): JSONRPCNotification | undefined {
    if (notification.method !== 'notifications/progress') return notification;
    const params = notification.params as { progressToken?: ProgressToken } | undefined;
    if (this.upstreamToken === undefined || params?.progressToken !== this.upstreamToken) return undefined;
    return { ...notification, params: { ...params, progressToken: this.clientToken } };
  }
}
