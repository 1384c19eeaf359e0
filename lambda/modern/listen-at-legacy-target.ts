import { describeError } from '../observability/logger';
import { rpcErrorOf } from '../protocol/errors';
import type { JSONRPCNotification, ModernServerCapabilities } from '../protocol/types';
import type { LegacySession, LegacyTargetClient } from '../targets/legacy-client';
import type { ModernDeps } from './deps';
import { honourable, isEmptyFilter, LIST_FLAG_NAMES, LIST_FLAGS, type ListenFilter } from './listen-filter';

/**
 * A listen's part at a 2025 target, which has no `subscriptions/listen`: what it sends outside calls
 * (list changes, updated resources it was subscribed to) comes on a session's GET stream (spec
 * 2025-11-25, basic/transports "Listening for Messages from the Server"). So the listen opens a target
 * session of its own, declaring nothing (nothing can be asked of the user on a listen), subscribes to
 * the resources of the filter the target serves (`resources/subscribe`), listens on the session's GET
 * stream and relays what the filter asked for. Its acknowledgement is what the target can deliver: the
 * list flags its InitializeResult declares, the resources it accepted; nothing when it keeps no session
 * or refuses GET streams (405). The session ends with the listen (DELETE), before the client's stream
 * ends, so nothing is left open at the target once the invocation is over.
 */

export interface LegacyTargetListen {
  acknowledged: ListenFilter;
  /** Settles when the target ends the listen on its side (it forgot the session). */
  gone: Promise<void>;
  /** Stops listening and ends the target session (idempotent; best effort, bounded by the caller). */
  close(): Promise<void>;
}

/** The notification a list flag asks for, as a 2025 target sends it. */
const LIST_CHANGED_METHODS: Record<(typeof LIST_FLAGS)[keyof typeof LIST_FLAGS], string> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
};
const RESOURCE_UPDATED = 'notifications/resources/updated';

let nextSubscribeId = 0;

/**
 * Opens the listen at `target` for `wanted` (the part of the client's filter the target may serve);
 * undefined when the target can deliver none of it (its session is ended again at once).
 */
export async function listenAtLegacyTarget(
  deps: ModernDeps,
  target: string,
  wanted: ListenFilter,
  onNotification: (notification: JSONRPCNotification) => void,
  signal: AbortSignal,
): Promise<LegacyTargetListen | undefined> {
  const client = deps.targets.legacyClient(target);
  if (!client) return undefined;
  const { session, result } = await client.initialize(deps.targets.legacyVersion, {}, signal);
  let closed: Promise<void> | undefined;
  let closeStream: () => void = () => undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      closeStream();
      await client.terminate(session).catch((error: unknown) => {
        deps.logger.debug('a listen target session not ended', { target, error: describeError(error) });
      });
    })();
    return closed;
  };
  try {
    // A target that keeps no session has no GET stream to listen on (and nothing to end).
    if (!session.targetSessionId) return undefined;
    const asked = honourable(
      { ...wanted, taskIds: undefined },
      result.capabilities as ModernServerCapabilities | undefined,
    );
    if (isEmptyFilter(asked)) {
      await close();
      return undefined;
    }
    const subscribed = await subscribe(deps, client, session, asked.resourceSubscriptions ?? [], signal);
    const acknowledged: ListenFilter = {};
    for (const flag of LIST_FLAG_NAMES) if (asked[flag]) acknowledged[flag] = true;
    if (subscribed.length) acknowledged.resourceSubscriptions = subscribed;
    const relayed = new Set(
      LIST_FLAG_NAMES.filter((flag) => acknowledged[flag]).map((f) => LIST_CHANGED_METHODS[LIST_FLAGS[f]]),
    );
    let goneNow!: () => void;
    const gone = new Promise<void>((resolve) => {
      goneNow = resolve;
    });
    const handle = await deps.targets.streams.listen(client, session, {
      onServerRequest: (request) => {
        // Nothing was declared to the target: it has nobody to ask on a listen.
        void client
          .send(session, rpcErrorOf(request.id, 'MethodNotFound', `Method not found: ${request.method}`))
          .catch(() => undefined);
      },
      onNotification: (notification) => {
        const uri = (notification.params as { uri?: unknown } | undefined)?.uri;
        const asked =
          relayed.has(notification.method) ||
          (notification.method === RESOURCE_UPDATED && typeof uri === 'string' && subscribed.includes(uri));
        if (asked) onNotification(notification);
      },
      onGone: () => goneNow(),
    });
    closeStream = () => handle.close();
    if (deps.targets.streams.refusesStreams(target) || isEmptyFilter(acknowledged)) {
      await close();
      return undefined;
    }
    return { acknowledged, gone, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** `resources/subscribe` for each URI, one after another; the ones the target accepted. */
async function subscribe(
  deps: ModernDeps,
  client: LegacyTargetClient,
  session: LegacySession,
  uris: string[],
  signal: AbortSignal,
): Promise<string[]> {
  const accepted: string[] = [];
  for (const uri of uris) {
    const response = await client
      .request(
        session,
        { jsonrpc: '2.0', id: `gw-subscribe-${++nextSubscribeId}`, method: 'resources/subscribe', params: { uri } },
        { signal },
      )
      .catch((error: unknown) => {
        deps.logger.warn('a listen subscription refused', { target: client.name, error: describeError(error) });
        return undefined;
      });
    if (response && 'result' in response) accepted.push(uri);
  }
  return accepted;
}
