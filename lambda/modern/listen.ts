import { SseStream } from '../http/sse';
import { describeError } from '../observability/logger';
import { META_KEYS } from '../protocol/meta';
import type { JSONRPCNotification, ModernServerCapabilities, RequestId } from '../protocol/types';
import { waitAtMost } from '../scheduling/clock';
import type { Caller } from '../targets/target-link';
import type { ModernDeps } from './deps';
import { type LegacyTargetListen, listenAtLegacyTarget } from './listen-at-legacy-target';
import { admits, honourable, isEmptyFilter, LIST_FLAG_NAMES, type ListenFilter, within } from './listen-filter';
import type { ModernRequest } from './validate';

/**
 * `subscriptions/listen` (2026-07-28, SEP-2575): the client's one long-lived stream of what changes
 * (tool, prompt and resource lists, updated resources; with the Tasks extension, its tasks' status).
 * The gateway listens at each 2026-07-28 target that can honour part of the filter, with that part
 * (the resources it serves, the task ids that are its own), and answers with one acknowledgement:
 * what the targets acknowledged of what they were asked, nothing it cannot deliver nor more than the
 * client asked for. A target's notification is relayed only when its type is within what was
 * acknowledged for that target (anything else is dropped), stamped with the client's subscription id
 * (the listen request's id) — a task's status with the gateway's task id — and a list change also
 * drops that target's cached listing. The stream ends
 * with the `complete` result the spec asks for before a server ends it: before the invocation's
 * deadline (a function URL's timeout; a Web Function's request timeout), when every target's listen
 * ended, or at once when nothing was acknowledged. Closing it is the client's way to stop listening,
 * and stops the targets' listens.
 *
 * A 2025 target has no listen of its own: the listen opens a target session of its own there and
 * relays what the target sends on that session's GET stream (./listen-at-legacy-target.ts).
 *
 * Not included: a 2026 target that did not acknowledge in LISTEN_ACK_WAIT_MS (left out of the
 * acknowledgement, its listen closed); task ids at a 2025 target (its experimental tasks have no
 * status notifications to listen for).
 */

export const SUBSCRIPTION_ID_META_KEY = 'io.modelcontextprotocol/subscriptionId';

/** How long the gateway waits for each target's acknowledgement before acknowledging itself. */
export const LISTEN_ACK_WAIT_MS = 1000;
/** The stream's end (the complete result) goes out this long before the invocation's deadline. */
const END_BEFORE_DEADLINE_MS = 1500;
/** How long the end waits at most for the 2025 target sessions the listen opened to be ended (DELETE). */
const CLOSE_TARGET_SESSIONS_MAX_MS = 500;

/** One target's part of a listen: what it is asked for, and how its answers map back. */
interface TargetListen {
  target: string;
  filter: ListenFilter;
  /** The target's task id → the gateway's. */
  taskIds: Map<string, string>;
  acknowledged?: ListenFilter;
  /** The target speaks 2025 only: the listen is a target session of its own (./listen-at-legacy-target.ts). */
  legacy?: boolean;
  /** Closes this target's listen alone (a 2026-07-28 target left out of the acknowledgement). */
  close?: () => void;
}

/**
 * The listens a request opens: one per 2026-07-28 target that could honour part of the filter (as its
 * `server/discover` says), one per 2025 target asked for something (what it can honour is learned
 * from its own session's InitializeResult).
 */
async function plan(
  deps: ModernDeps,
  filter: ListenFilter,
  principal: string,
  caller: Caller,
  signal: AbortSignal,
): Promise<TargetListen[]> {
  // The resources and tasks each target owns (a URI the catalog cannot place is honoured by none). All
  // URIs are placed at once, against one listing of each target: they cost no request of their own.
  const uris = new Map<string, string[]>();
  const requested = filter.resourceSubscriptions ?? [];
  const placed = await deps.catalog
    .placeResources(requested, { caller, signal })
    .catch(() => new Map<string, string>());
  for (const uri of requested) {
    const target = placed.get(uri);
    if (target === undefined) continue;
    const own = uris.get(target) ?? [];
    own.push(uri);
    uris.set(target, own);
  }
  const tasks = new Map<string, Map<string, string>>();
  for (const gatewayId of filter.taskIds ?? []) {
    const opened = deps.taskIds.open(gatewayId, principal);
    if (!opened.ok) continue; // never acknowledged: the client sees it is not listened to
    const own = tasks.get(opened.task.target) ?? new Map<string, string>();
    own.set(opened.task.taskId, gatewayId);
    tasks.set(opened.task.target, own);
  }
  const verdicts = await Promise.all(
    deps.targets.names.map(async (target) => ({
      target,
      verdict: await deps.targets.eras.modernVerdict(target, signal).catch(() => undefined),
    })),
  );
  const listens: TargetListen[] = [];
  for (const { target, verdict } of verdicts) {
    const taskIds = tasks.get(target) ?? new Map<string, string>();
    const wanted: ListenFilter = {};
    for (const flag of LIST_FLAG_NAMES) if (filter[flag]) wanted[flag] = true;
    if (uris.get(target)?.length) wanted.resourceSubscriptions = uris.get(target);
    if (verdict?.serves) {
      if (taskIds.size) wanted.taskIds = [...taskIds.keys()];
      const asked = honourable(wanted, verdict.discover?.capabilities as ModernServerCapabilities | undefined);
      if (!isEmptyFilter(asked)) listens.push({ target, filter: asked, taskIds });
    } else if (verdict && !isEmptyFilter(wanted)) {
      listens.push({ target, filter: wanted, taskIds, legacy: true });
    }
  }
  return listens;
}

/** The gateway's acknowledgement: what the targets acknowledged, in the client's terms. */
function acknowledgement(listens: TargetListen[]): ListenFilter {
  const ack: ListenFilter = {};
  for (const listen of listens) {
    const got = listen.acknowledged;
    if (!got) continue;
    for (const flag of LIST_FLAG_NAMES) if (got[flag]) ack[flag] = true;
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
  /** The gateway's acknowledgement went out: only then is anything relayed. */
  let acknowledgedToClient = false;
  /** The 2025 target sessions this listen opened, ended before the client's stream ends. */
  const closers = new Set<() => Promise<void>>();
  const closeTargetSessions = () =>
    waitAtMost(deps.clock, Promise.allSettled([...closers].map((close) => close())), CLOSE_TARGET_SESSIONS_MAX_MS);
  const end = () => {
    if (ended) return;
    ended = true;
    stop.abort('gateway: the listen ended');
    void closeTargetSessions().then(() => {
      stream.end({
        jsonrpc: '2.0',
        id: subscriptionId,
        result: {
          resultType: 'complete',
          _meta: { [SUBSCRIPTION_ID_META_KEY]: subscriptionId, [META_KEYS.serverInfo]: deps.serverInfo },
        },
      });
      context.done();
    });
  };
  stream.onCancel = () => {
    ended = true;
    stop.abort('gateway: the client closed the listen');
    void closeTargetSessions().then(() => context.done());
  };
  const endTimer = deps.clock.setTimeout(
    end,
    Math.max(0, context.deadline - END_BEFORE_DEADLINE_MS - deps.clock.now()),
  );
  signal.addEventListener('abort', () => deps.clock.clearTimeout(endTimer), { once: true });

  const relay = (listen: TargetListen, notification: JSONRPCNotification) => {
    if (!acknowledgedToClient || ended) return; // nothing before the gateway's own acknowledgement
    deps.catalog.noticed(listen.target, notification);
    // Only what was acknowledged to the client for this target: nothing it did not subscribe to.
    if (!listen.acknowledged || !admits(listen.acknowledged, notification)) {
      deps.logger.debug('a listen notification not subscribed to', {
        target: listen.target,
        method: notification.method,
      });
      return;
    }
    const message = relayed(notification, listen);
    if (message) stream.send(stamped(message, subscriptionId));
  };

  /** A 2026-07-28 target's own listen; `acknowledged` once it acknowledged. */
  const listenModern = async (listen: TargetListen, acknowledged: () => void) => {
    // Its own stop besides the listen's: a target silent past the gateway's acknowledgement is closed alone.
    const own = new AbortController();
    listen.close = () => own.abort('gateway: no acknowledgement in time');
    const link = await deps.targets.open(listen.target, caller, signal);
    await link
      .call(
        { method: 'subscriptions/listen', params: { notifications: listen.filter } },
        {
          signal: AbortSignal.any([signal, own.signal]),
          onNotification: (notification) => {
            if (notification.method === 'notifications/subscriptions/acknowledged') {
              // Too late for the gateway's acknowledgement: the client was not told of it.
              if (acknowledgedToClient) return;
              // Never more than it was asked: that is all the client may be told of.
              listen.acknowledged = within(
                (notification.params as { notifications?: ListenFilter } | undefined)?.notifications ?? {},
                listen.filter,
              );
              acknowledged();
              return;
            }
            if (listen.acknowledged) relay(listen, notification);
          },
        },
      )
      .catch((error: unknown) => {
        if (!own.signal.aborted) throw error;
      });
  };

  /** A 2025 target: a target session of the listen's own, until the listen or the session ends. */
  const listenLegacy = async (listen: TargetListen, acknowledged: () => void) => {
    let opened: LegacyTargetListen | undefined;
    try {
      opened = await listenAtLegacyTarget(
        deps,
        listen.target,
        listen.filter,
        (notification) => relay(listen, notification),
        signal,
      );
      if (!opened) return;
      closers.add(opened.close);
      // Too late for the gateway's acknowledgement: it does not count on this target, so it stops.
      if (acknowledgedToClient || ended) return;
      listen.acknowledged = opened.acknowledged;
      acknowledged();
      await Promise.race([
        opened.gone,
        new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true })),
      ]);
    } finally {
      if (opened) {
        await opened.close();
        closers.delete(opened.close);
      }
    }
  };

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
        await (listen.legacy ? listenLegacy : listenModern)(listen, resolve);
      } catch (error) {
        if (!signal.aborted) {
          deps.logger.warn('a target listen failed', { target: listen.target, error: describeError(error) });
        }
      } finally {
        resolve();
      }
    });
    await waitAtMost(deps.clock, Promise.all(acked.map(({ promise }) => promise)), LISTEN_ACK_WAIT_MS);
    if (ended) return;
    const ack = acknowledgement(listens);
    stream.send(
      stamped(
        { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: ack } },
        subscriptionId,
      ),
    );
    acknowledgedToClient = true;
    // Left out of the acknowledgement (silent for LISTEN_ACK_WAIT_MS): its listen is closed.
    for (const listen of listens) if (!listen.acknowledged) listen.close?.();
    deps.logger.info('listening', {
      subscribed: Object.keys(ack),
      targets: listens.filter((l) => l.acknowledged).length,
    });
    if (isEmptyFilter(ack)) return end();
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
