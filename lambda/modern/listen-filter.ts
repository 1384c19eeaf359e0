import { GatewayError } from '../protocol/errors';
import type { JSONRPCNotification, ModernServerCapabilities } from '../protocol/types';

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

/**
 * The longest resource URI a listen may name: what RFC 9110 §4.1 recommends every sender and recipient
 * support (8000 octets). Each URI is sent to its target and matched against the targets' templates.
 */
export const MAX_LISTEN_URI_LENGTH = 8000;

/** How much one listen may ask for (`maxResourceSubscriptionsPerListen`, `maxTaskIdsPerListen`). */
export interface ListenLimits {
  resourceSubscriptions: number;
  taskIds: number;
}

/** What each list of a listen names, and the setting that bounds it, for the refusal's message. */
const LISTS = {
  resourceSubscriptions: { items: 'resource URIs', setting: 'maxResourceSubscriptionsPerListen' },
  taskIds: { items: 'task ids', setting: 'maxTaskIdsPerListen' },
} as const;

/**
 * The filter of a listen, refused with -32602 (InvalidParams) before anything else is done when it is
 * malformed or asks for more than `limits` allow: every URI costs a lookup, a place in the request to
 * its target and in the acknowledgement; every task id an unsealing.
 */
export function parseListenFilter(params: Record<string, unknown>, limits: ListenLimits): ListenFilter {
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
    const field = `notifications.${list}`;
    if (!Array.isArray(value)) {
      throw new GatewayError('InvalidParams', `Invalid params: ${field} must be an array of strings`);
    }
    // Counted before anything is looked at, duplicates included: the request's size is what is bounded.
    if (value.length > limits[list]) {
      const { items, setting } = LISTS[list];
      throw new GatewayError(
        'InvalidParams',
        `Invalid params: ${field}: at most ${limits[list]} ${items} per listen (${setting}); ${value.length} given`,
        { field, limit: limits[list] },
      );
    }
    if (!value.every((item) => typeof item === 'string')) {
      throw new GatewayError('InvalidParams', `Invalid params: ${field} must be an array of strings`);
    }
    if (list === 'resourceSubscriptions') {
      const long = value.findIndex((uri: string) => uri.length > MAX_LISTEN_URI_LENGTH);
      if (long >= 0) {
        throw new GatewayError(
          'InvalidParams',
          `Invalid params: ${field}[${long}]: a resource URI is at most ${MAX_LISTEN_URI_LENGTH} characters`,
          { field, limit: MAX_LISTEN_URI_LENGTH },
        );
      }
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

/**
 * What a server acknowledged of `asked`, never more: a target acknowledging what it was not asked for
 * must not widen what the client is told (the spec: a server MUST NOT send notification types the
 * client did not subscribe to).
 */
export function within(acknowledged: ListenFilter, asked: ListenFilter): ListenFilter {
  const out: ListenFilter = {};
  for (const flag of LIST_FLAG_NAMES) if (acknowledged[flag] === true && asked[flag]) out[flag] = true;
  for (const list of ['resourceSubscriptions', 'taskIds'] as const) {
    const both = (Array.isArray(acknowledged[list]) ? acknowledged[list] : []).filter((item) =>
      asked[list]?.includes(item),
    );
    if (both.length) out[list] = both;
  }
  return out;
}

/** The notification each list flag stands for. */
const LIST_CHANGED: Record<string, ListFlag> = {
  'notifications/tools/list_changed': 'toolsListChanged',
  'notifications/prompts/list_changed': 'promptsListChanged',
  'notifications/resources/list_changed': 'resourcesListChanged',
};

/** Whether `notification` is of a type `filter` subscribes to (an updated resource by its URI, a task by its id). */
export function admits(filter: ListenFilter, notification: JSONRPCNotification): boolean {
  const params = (notification.params ?? {}) as Record<string, unknown>;
  const flag = LIST_CHANGED[notification.method];
  if (flag) return filter[flag] === true;
  if (notification.method === 'notifications/resources/updated')
    return typeof params.uri === 'string' && (filter.resourceSubscriptions?.includes(params.uri) ?? false);
  if (notification.method === 'notifications/tasks')
    return typeof params.taskId === 'string' && (filter.taskIds?.includes(params.taskId) ?? false);
  return false;
}
