import { GatewayError } from '../protocol/errors';
import type { ModernServerCapabilities } from '../protocol/types';

/**
 * The filter of `subscriptions/listen` (2026-07-28, SEP-2575: `params.notifications`), and what a
 * server's capabilities let it honour of one. The same shapes serve the acknowledgement
 * (`notifications/subscriptions/acknowledged`), and a 2025 target's InitializeResult declares the
 * capabilities they are read from alike.
 */

export interface ListenFilter {
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  resourceSubscriptions?: string[];
  taskIds?: string[];
}

/** Each list flag and the list whose changes it asks for. */
export const LIST_FLAGS = {
  toolsListChanged: 'tools',
  promptsListChanged: 'prompts',
  resourcesListChanged: 'resources',
} as const;

export type ListFlag = keyof typeof LIST_FLAGS;

export const LIST_FLAG_NAMES = Object.keys(LIST_FLAGS) as ListFlag[];

export function parseListenFilter(params: Record<string, unknown>): ListenFilter {
  const raw = params.notifications;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new GatewayError('InvalidParams', "Invalid params: 'notifications' is required (a subscription filter)");
  }
  const filter: ListenFilter = {};
  const source = raw as Record<string, unknown>;
  for (const flag of LIST_FLAG_NAMES) {
    if (source[flag] === true) filter[flag] = true;
  }
  for (const list of ['resourceSubscriptions', 'taskIds'] as const) {
    const value = source[list];
    if (value === undefined) continue;
    if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
      throw new GatewayError('InvalidParams', `Invalid params: notifications.${list} must be an array of strings`);
    }
    if (value.length > 0) filter[list] = [...new Set(value as string[])];
  }
  return filter;
}

/** What `capabilities` let a server honour of `wanted` (the SDK servers narrow their acks the same way). */
export function honourable(wanted: ListenFilter, caps: ModernServerCapabilities | undefined): ListenFilter {
  const out: ListenFilter = {};
  const listChanged = (kind: 'tools' | 'prompts' | 'resources') =>
    (caps?.[kind] as { listChanged?: boolean } | undefined)?.listChanged === true;
  for (const flag of LIST_FLAG_NAMES) {
    if (wanted[flag] && listChanged(LIST_FLAGS[flag])) out[flag] = true;
  }
  if (wanted.resourceSubscriptions?.length && (caps?.resources as { subscribe?: boolean } | undefined)?.subscribe)
    out.resourceSubscriptions = wanted.resourceSubscriptions;
  if (wanted.taskIds?.length) out.taskIds = wanted.taskIds;
  return out;
}

export const isEmptyFilter = (filter: ListenFilter) => Object.keys(filter).length === 0;
