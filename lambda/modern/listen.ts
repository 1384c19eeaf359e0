import { SseStream } from '../http/sse';
import { describeError } from '../observability/logger';
import { GatewayError } from '../protocol/errors';
import { META_KEYS } from '../protocol/meta';
import type { JSONRPCNotification, ModernServerCapabilities, RequestId } from '../protocol/types';
import type { Caller } from '../targets/target-link';
import type { ModernDeps } from './deps';
import type { ModernRequest } from './validate';

/**
 * `subscriptions/listen` (2026-07-28, SEP-2575): the client's one long-lived stream of what changes
 * (tool, prompt and resource lists, updated resources; with the Tasks extension, its tasks' status).
 * The gateway listens at each 2026-07-28 target that can honour part of the filter, with that part
 * (the resources it serves, the task ids that are its own), and answers with one acknowledgement:
 * exactly what some target acknowledged, nothing it cannot deliver. Each target's notification is
 * relayed stamped with the client's subscription id (the listen request's id) — a task's status with
 * the gateway's task id — and a list change also drops that target's cached listing. The stream ends
 * with the `complete` result the spec asks for before a server ends it: before the invocation's
 * deadline (a function URL's timeout; a Web Function's request timeout), when every target's listen
 * ended, or at once when nothing was acknowledged. Closing it is the client's way to stop listening,
 * and stops the targets' listens.
 *
 * Not included: 2025 targets (their changes reach a 2025 session's GET stream; a listen of their own
 * would need a target session per listen), and a 2026 target that did not acknowledge in
 * LISTEN_ACK_WAIT_MS (left out of the acknowledgement, its listen closed).
 */

export const SUBSCRIPTION_ID_META_KEY = 'io.modelcontextprotocol/subscriptionId';

/** The filter a listen asks for (`params.notifications`). */
export interface ListenFilter {
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  resourceSubscriptions?: string[];
  taskIds?: string[];
}

/** How long the gateway waits for each target's acknowledgement before acknowledging itself. */
export const LISTEN_ACK_WAIT_MS = 1000;
/** The stream's end (the complete result) goes out this long before the invocation's deadline. */
const END_BEFORE_DEADLINE_MS = 1500;

const LIST_FLAGS = {
  toolsListChanged: 'tools',
  promptsListChanged: 'prompts',
  resourcesListChanged: 'resources',
} as const;

export function parseListenFilter(params: Record<string, unknown>): ListenFilter {
  const raw = params.notifications;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new GatewayError('InvalidParams', "Invalid params: 'notifications' is required (a subscription filter)");
  }
  const filter: ListenFilter = {};
  const source = raw as Record<string, unknown>;
  for (const flag of Object.keys(LIST_FLAGS) as Array<keyof typeof LIST_FLAGS>) {
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

/** One target's part of a listen: what it is asked for, and how its answers map back. */
interface TargetListen {
  target: string;
  filter: ListenFilter;
  /** The target's task id → the gateway's. */
  taskIds: Map<string, string>;
  acknowledged?: ListenFilter;
}

/** What `capabilities` let a target honour of `wanted` (the SDK servers narrow their acks the same way). */
function honourable(wanted: ListenFilter, caps: ModernServerCapabilities | undefined): ListenFilter {
  const out: ListenFilter = {};
  const listChanged = (kind: 'tools' | 'prompts' | 'resources') =>
    (caps?.[kind] as { listChanged?: boolean } | undefined)?.listChanged === true;
  for (const [flag, kind] of Object.entries(LIST_FLAGS) as Array<
    [keyof typeof LIST_FLAGS, 'tools' | 'prompts' | 'resources']
  >) {
    if (wanted[flag] && listChanged(kind)) out[flag] = true;
  }
  if (wanted.resourceSubscriptions?.length && (caps?.resources as { subscribe?: boolean } | undefined)?.subscribe)
    out.resourceSubscriptions = wanted.resourceSubscriptions;
  if (wanted.taskIds?.length) out.taskIds = wanted.taskIds;
  return out;
}

const isEmpty = (filter: ListenFilter) => Object.keys(filter).length === 0;

/** The listens a request opens: one per 2026-07-28 target that could honour part of the filter. */
async function plan(
  deps: ModernDeps,
  filter: ListenFilter,
  principal: string,
  caller: Caller,
  signal: AbortSignal,
): Promise<TargetListen[]> {
  // The resources and tasks each target owns (a URI the catalog cannot place is honoured by none).
  const uris = new Map<string, string[]>();
  for (const uri of filter.resourceSubscriptions ?? []) {
    const target = await deps.catalog.resolveResource(uri, { caller, signal }).catch(() => undefined);
    if (target) uris.set(target, [...(uris.get(target) ?? []), uri]);
  }
  const tasks = new Map<string, Map<string, string>>();
  for (const gatewayId of filter.taskIds ?? []) {
    const opened = deps.taskIds.open(gatewayId, principal);
    if (!opened.ok) continue; // never acknowledged: the client sees it is not listened to
    const own = tasks.get(opened.task.target) ?? new Map<string, string>();
    own.set(opened.task.taskId, gatewayId);
    tasks.set(opened.task.target, own);
  }
  const listens: TargetListen[] = [];
  for (const target of deps.targets.names) {
    const verdict = await deps.targets.eras.modernVerdict(target, signal).catch(() => undefined);
    if (!verdict?.serves) continue;
    const taskIds = tasks.get(target) ?? new Map<string, string>();
    const wanted: ListenFilter = {
      ...(filter.toolsListChanged ? { toolsListChanged: true } : {}),
      ...(filter.promptsListChanged ? { promptsListChanged: true } : {}),
      ...(filter.resourcesListChanged ? { resourcesListChanged: true } : {}),
      ...(uris.get(target)?.length ? { resourceSubscriptions: uris.get(target) } : {}),
      ...(taskIds.size ? { taskIds: [...taskIds.keys()] } : {}),
    };
    const asked = honourable(wanted, verdict.discover?.capabilities as ModernServerCapabilities | undefined);
    if (!isEmpty(asked)) listens.push({ target, filter: asked, taskIds });
  }
  return listens;
}

/** The gateway's acknowledgement: what the targets acknowledged, in the client's terms. */
function acknowledgement(listens: TargetListen[]): ListenFilter {
  const ack: ListenFilter = {};
  for (const listen of listens) {
    const got = listen.acknowledged;
    if (!got) continue;
    for (const flag of Object.keys(LIST_FLAGS) as Array<keyof typeof LIST_FLAGS>) if (got[flag]) ack[flag] = true;
    const uris = (got.resourceSubscriptions ?? []).filter((uri) => listen.filter.resourceSubscriptions?.includes(uri));
    if (uris.length) ack.resourceSubscriptions = [...(ack.resourceSubscriptions ?? []), ...uris];
    const ids = (got.taskIds ?? []).map((id) => listen.taskIds.get(id)).filter((id): id is string => id !== undefined);
    if (ids.length) ack.taskIds = [...(ack.taskIds ?? []), ...ids];
  }
  return ack;
}

function stamped(notification: JSONRPCNotification, subscriptionId: RequestId): JSONRPCNotification {
  const params = (notification.params ?? {}) as Record<string, unknown>;
  const meta = (params._meta ?? {}) as Record<string, unknown>;
  return { ...notification, params: { ...params, _meta: { ...meta, [SUBSCRIPTION_ID_META_KEY]: subscriptionId } } };
}

/**
 * Serves one listen: the SSE response at once (its first event the acknowledgement, once the targets
 * acknowledged or LISTEN_ACK_WAIT_MS passed), relaying until the end. `signal` is the request's scope
 * (the client closing, or the deadline); `done` is called once the stream has ended.
 */
export function serveListen(
  deps: ModernDeps,
  request: ModernRequest,
  filter: ListenFilter,
  principal: string,
  caller: Caller,
  context: { signal: AbortSignal; deadline: number; done: () => void },
): Response {
  const subscriptionId = request.id;
  const stream = new SseStream();
  stream.startKeepAlive(deps.keepAliveMs);
  const stop = new AbortController();
  const signal = AbortSignal.any([context.signal, stop.signal]);
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    stop.abort('gateway: the listen ended');
    stream.end({
      jsonrpc: '2.0',
      id: subscriptionId,
      result: {
        resultType: 'complete',
        _meta: { [SUBSCRIPTION_ID_META_KEY]: subscriptionId, [META_KEYS.serverInfo]: deps.serverInfo },
      },
    });
    context.done();
  };
  stream.onCancel = () => {
    ended = true;
    stop.abort('gateway: the client closed the listen');
    context.done();
  };
  const endTimer = setTimeout(end, Math.max(0, context.deadline - END_BEFORE_DEADLINE_MS - Date.now()));
  endTimer.unref();
  signal.addEventListener('abort', () => clearTimeout(endTimer), { once: true });

  void (async () => {
    const listens = await plan(deps, filter, principal, caller, signal);
    const acked = listens.map((listen) => {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      return { listen, promise, resolve };
    });
    const running = acked.map(async ({ listen, resolve }) => {
      try {
        const link = await deps.targets.open(listen.target, caller, signal);
        await link.call(
          { method: 'subscriptions/listen', params: { notifications: listen.filter } },
          {
            signal,
            onNotification: (notification) => {
              if (notification.method === 'notifications/subscriptions/acknowledged') {
                listen.acknowledged =
                  (notification.params as { notifications?: ListenFilter } | undefined)?.notifications ?? {};
                resolve();
                return;
              }
              if (!listen.acknowledged || ended) return; // nothing before the gateway's own acknowledgement
              deps.catalog.noticed(listen.target, notification);
              const message = relayed(notification, listen);
              if (message) stream.send(stamped(message, subscriptionId));
            },
          },
        );
      } catch (error) {
        if (!signal.aborted) {
          deps.logger.warn('a target listen failed', { target: listen.target, error: describeError(error) });
        }
      } finally {
        resolve();
      }
    });
    const waited = setTimeout(() => {
      for (const { resolve } of acked) resolve();
    }, LISTEN_ACK_WAIT_MS);
    await Promise.all(acked.map(({ promise }) => promise));
    clearTimeout(waited);
    if (ended) return;
    const ack = acknowledgement(listens);
    stream.send(
      stamped(
        { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: ack } },
        subscriptionId,
      ),
    );
    deps.logger.info('listening', {
      subscribed: Object.keys(ack),
      targets: listens.filter((l) => l.acknowledged).length,
    });
    if (isEmpty(ack)) return end();
    await Promise.all(running);
    end(); // every target's listen ended: so does the client's
  })().catch((error) => {
    deps.logger.warn('a listen failed', { error: describeError(error) });
    end();
  });
  return stream.response();
}

/**
 * A target's notification in the client's terms: a task's status names the gateway's task id (and a
 * task the client did not ask about is not relayed: another client's, as far as the gateway knows).
 */
function relayed(notification: JSONRPCNotification, listen: TargetListen): JSONRPCNotification | undefined {
  if (notification.method !== 'notifications/tasks') return notification;
  const params = (notification.params ?? {}) as Record<string, unknown>;
  const gatewayId = typeof params.taskId === 'string' ? listen.taskIds.get(params.taskId) : undefined;
  return gatewayId ? { ...notification, params: { ...params, taskId: gatewayId } } : undefined;
}
