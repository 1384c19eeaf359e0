import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { capabilitiesForLegacyTarget, declaresInput, sendsOutsideCalls } from '../protocol/capabilities';
import { DependencyFailedError, rpcErrorOf } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { JSONRPCNotification, JSONRPCRequest } from '../protocol/types';
import type { Era } from '../protocol/versions';
import { TargetSessionExpiredError, TargetTimeoutError } from './endpoint';
import { type LegacyTargetClient, LegacyUnsupportedError } from './legacy-client';
import type { StreamListeners } from './sse-reader';
import type { StandaloneStreams } from './standalone-streams';
import type { Caller, StoredTargetSession, TargetCallOptions, TargetCallRequest, TargetLink } from './target-link';

/**
 * A legacy-era target for one caller: its target session opened lazily (with the caller's version
 * for 2025 callers, the newest configured legacy version for 2026 callers, and only what the
 * caller declared), kept where the caller keeps them, re-initialized once when the target forgot
 * it (404). `ping` from the target is answered here; an aborted call is cancelled at the target.
 */

/**
 * Parallel requests of one caller that find no session share one `initialize` per target: keyed by
 * the slots' scope (the gateway session, or the pool key), which every request of the caller shares.
 */
const opening = new Map<string, { signal?: AbortSignal; session: Promise<StoredTargetSession> }>();

/** Target sessions (scope, target, session id) a listening call holds on this instance (see `checkout`). */
const listened = new Set<string>();

let nextInternalId = 0;

export class LegacyTargetLink implements TargetLink {
  readonly era: Era = 'legacy';
  session?: StoredTargetSession;

  constructor(
    private readonly client: LegacyTargetClient,
    private readonly caller: Caller,
    /** The version spoken to the target. */
    private readonly protocolVersion: string,
    private readonly logger: GatewayLogger,
    /** The target sessions' GET streams on this instance. */
    private readonly streams?: StandaloneStreams,
    /**
     * Whether a target whose 2025 leg answered `initialize` without a session is to be reached in
     * 2026-07-28 instead (2025 callers of a dual-era target); then `initialize` throws LegacyUnsupportedError.
     */
    private readonly modernInsteadWhenSessionless?: (signal?: AbortSignal) => Promise<boolean>,
  ) {}

  get target(): string {
    return this.client.name;
  }

  async call(request: TargetCallRequest, options: TargetCallOptions): Promise<JSONRPCResponse> {
    const id = request.id ?? `gw-${this.target}-${++nextInternalId}`;
    const params = { ...request.params };
    if (options.progressToken !== undefined)
      params._meta = { ...(params._meta as object), progressToken: options.progressToken };
    const message: JSONRPCRequest = { jsonrpc: '2.0', id, method: request.method, params };
    const listeners = {
      onServerRequest: (serverRequest: JSONRPCRequest) => {
        if (serverRequest.method === 'ping') {
          void this.reply({ jsonrpc: '2.0', id: serverRequest.id, result: {} });
          return;
        }
        if (options.onServerRequest) options.onServerRequest(serverRequest);
        else
          void this.reply(rpcErrorOf(serverRequest.id, 'MethodNotFound', `Method not found: ${serverRequest.method}`));
      },
      onNotification: options.onNotification,
      backpressure: options.backpressure,
    };
    const onAbort = () => void this.cancel(id, options.signal.reason);
    options.signal.addEventListener('abort', onAbort, { once: true });
    // A call that can relay the target's requests listens on the session's GET stream too (opened
    // first), on a target session no other such call of this instance listens on (`checkout`).
    const takesRequests = Boolean(options.onServerRequest && this.streams && declaresInput(this.caller.capabilities));
    try {
      if (options.resumeFrom) return await this.resume(message, options.resumeFrom, options, listeners);
      for (let attempt = 0; ; attempt++) {
        // After a 404 the session is opened afresh, never taken from the slots (they may hold more dead ones).
        const fresh = attempt > 0;
        const held = takesRequests ? await this.checkout(options.signal, fresh) : undefined;
        const session = held ? held.session : await this.open(options.signal, fresh);
        const listening = takesRequests || this.hearsNotifications(session, options);
        try {
          // What arrives on the GET stream belongs to this call too: a question to the user stops the call's
          // clock (a person is answering), anything else restarts it.
          let clock: { hold(): void; touch(): void } | undefined;
          const detach = listening
            ? await this.streams?.attach(this.client, session, {
                onServerRequest: (serverRequest) => {
                  clock?.hold();
                  listeners.onServerRequest(serverRequest);
                },
                // A call that hears only notifications gets a request only when no call can relay it.
                relaysRequests: takesRequests,
                onNotification: (notification) => {
                  clock?.touch();
                  listeners.onNotification?.(notification);
                },
                progressToken: options.progressToken,
                // The 2026-07-28 pool's target sessions are this instance's alone (slots with `checkout`).
                resumable: this.caller.sessions.checkout !== undefined,
              })
            : undefined;
          try {
            return await this.client.request(session, message, {
              signal: options.signal,
              cursor: options.cursor,
              detach: options.detach,
              onTargetPolls: options.onTargetPolls,
              listeners,
              onClock: (started) => {
                clock = started;
              },
            });
          } finally {
            await detach?.();
          }
        } catch (error) {
          // The lifecycle page: a request that timed out is cancelled at the receiver.
          if (error instanceof TargetTimeoutError) void this.cancel(id, 'gateway: timed out');
          if (!(error instanceof TargetSessionExpiredError)) throw error;
          this.caller.sessions.forget(this.target, session);
          if (attempt > 0) {
            throw new DependencyFailedError(this.target, 'session not found again right after it was re-initialized', {
              cause: error,
            });
          }
          this.logger.info('target session expired; re-initializing', { target: this.target });
        } finally {
          held?.release();
        }
      }
    } finally {
      options.signal.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Whether a call that takes no requests still listens on its target session's GET stream: what the
   * official SDK servers send there (v1 `server.sendLoggingMessage(params, sessionId)`, list changes,
   * resource updates) reaches a client connected directly on its own GET stream, which a 2025 client
   * keeps open; through the gateway that stream is open only part of the time (legacy/client-stream.ts),
   * so the call in flight hears it and relays it on its own stream, before its result. Only for a client
   * session (one client: any of its calls may carry it) whose request takes a stream, and a target that
   * declared something it sends there. A 2026-07-28 caller shares pooled sessions with other clients and
   * listens only when it can take requests (then on a session of its own).
   */
  private hearsNotifications(session: StoredTargetSession, options: TargetCallOptions): boolean {
    if (!this.streams || !options.onNotification || this.caller.sessions.checkout) return false;
    return this.caller.era === 'legacy' && this.caller.inputCapable && sendsOutsideCalls(session.serverCapabilities);
  }

  /**
   * Goes on with a call released earlier (possibly by another instance): its stream is read again
   * from the last event id, in the target session it was sent in (a 404 there is a failure: the call
   * cannot be sent again, it was already taken). What the target sends meanwhile on the session's GET
   * stream reaches the client's own GET stream.
   */
  private async resume(
    message: JSONRPCRequest,
    from: { lastEventId: string; targetSessionId?: string },
    options: TargetCallOptions,
    listeners: StreamListeners,
  ): Promise<JSONRPCResponse> {
    const stored = this.caller.sessions.get(this.target);
    this.session =
      stored && stored.targetSessionId === from.targetSessionId
        ? stored
        : { targetSessionId: from.targetSessionId, protocolVersion: this.protocolVersion, declaredCapabilities: {} };
    try {
      return await this.client.request(this.session, message, {
        signal: options.signal,
        cursor: options.cursor,
        detach: options.detach,
        onTargetPolls: options.onTargetPolls,
        resumeFrom: from.lastEventId,
        listeners,
      });
    } catch (error) {
      if (error instanceof TargetSessionExpiredError) {
        throw new DependencyFailedError(this.target, 'the target no longer knows the session of a released call', {
          cause: error,
        });
      }
      throw error;
    }
  }

  async reply(message: JSONRPCResponse): Promise<void> {
    if (!this.session) return;
    await this.client
      .send(this.session, message)
      .catch((error) =>
        this.logger.warn('answering the target failed', { target: this.target, error: describeError(error) }),
      );
  }

  async notify(notification: JSONRPCNotification, signal?: AbortSignal): Promise<void> {
    const stored = this.caller.sessions.get(this.target);
    if (!stored) return; // never opened: nothing to tell
    await this.client.send(stored, notification, signal);
  }

  async serverCapabilities(signal?: AbortSignal): Promise<Record<string, unknown> | undefined> {
    return (await this.open(signal)).serverCapabilities ?? {};
  }

  /** The caller's session with this target, opened if there is none (or `fresh`: a new one regardless). */
  async open(signal?: AbortSignal, fresh = false): Promise<StoredTargetSession> {
    const slots = this.caller.sessions;
    const stored = fresh ? undefined : slots.get(this.target);
    if (stored) {
      this.session = stored;
      return stored;
    }
    await slots.ready?.();
    const key = `${slots.scope}\u0000${this.target}`;
    for (;;) {
      let shared = opening.get(key);
      if (!shared) {
        const started = this.initialize(signal).then(async (session) => {
          const kept = await slots.save(this.target, session);
          // Another instance kept one first: that one is used, and this one ended rather than left open.
          if (kept !== session) this.end(session);
          return kept;
        });
        shared = { signal, session: started.finally(() => opening.delete(key)) };
        opening.set(key, shared);
      }
      try {
        this.session = await shared.session;
        return this.session;
      } catch (error) {
        // The request that opened it went away: the others open it again rather than fail with it.
        if (shared.signal === signal || !shared.signal?.aborted || signal?.aborted) throw error;
      }
    }
  }

  /**
   * A session only this call listens on: a request on its GET stream names no call, so two calls that
   * listen on one session on this instance could be shown each other's requests (and the one that ends
   * first would take the other's along). The 2026-07-28 pool hands out a session no other such call
   * holds, or the call opens one for the pool. A 2025 session's own target session is used by one
   * listening call at a time here; a concurrent one opens a session for itself, ended after the call.
   */
  private async checkout(
    signal: AbortSignal,
    fresh: boolean,
  ): Promise<{ session: StoredTargetSession; release: () => void }> {
    const slots = this.caller.sessions;
    let session: StoredTargetSession | undefined;
    if (slots.checkout) {
      session = fresh ? undefined : slots.checkout(this.target);
      if (!session) {
        session = await this.initialize(signal);
        await slots.save(this.target, session, { checkedOut: true });
      }
      const taken = session;
      this.session = taken;
      return { session: taken, release: () => slots.checkin?.(this.target, taken) };
    }
    session = await this.open(signal, fresh);
    const key = `${slots.scope}\u0000${this.target}\u0000${session.targetSessionId}`;
    if (session.targetSessionId === undefined || !listened.has(key)) {
      listened.add(key);
      return { session, release: () => listened.delete(key) };
    }
    const own = await this.initialize(signal);
    this.session = own;
    return { session: own, release: () => this.end(own) };
  }

  /** Ends a target session the gateway does not keep (best effort). */
  private end(session: StoredTargetSession): void {
    void this.client
      .terminate(session)
      .catch((error) => this.logger.debug('ending a target session failed', { error: describeError(error) }));
  }

  /** Opens a target session (not yet kept anywhere). */
  private async initialize(signal?: AbortSignal): Promise<StoredTargetSession> {
    const declaredCapabilities = capabilitiesForLegacyTarget(this.caller.capabilities, this.protocolVersion);
    const { session, result } = await this.client.initialize(this.protocolVersion, declaredCapabilities, signal);
    // Without a session a 2025 server has no stream to send requests on outside a call's own (the
    // TypeScript v2 SDK's default 2025 leg answers statelessly and cannot ask at all): it counts as
    // unable to ask, so a dual-era target is served in the modern era, where it can ask in input_required rounds.
    if (session.targetSessionId === undefined && (await this.modernInsteadWhenSessionless?.(signal))) {
      throw new LegacyUnsupportedError(this.target, 'its 2025 leg keeps no session (it could not ask the client)');
    }
    if (this.caller.logLevel) {
      const setLevel: JSONRPCRequest = {
        jsonrpc: '2.0',
        id: `gw-log-${++nextInternalId}`,
        method: 'logging/setLevel',
        params: { level: this.caller.logLevel },
      };
      await this.client.request(session, setLevel, { signal }).catch((error) =>
        this.logger.warn('logging/setLevel on a new target session failed', {
          target: this.target,
          error: describeError(error),
        }),
      );
    }
    const serverCapabilities = (result.capabilities ?? {}) as Record<string, unknown>;
    this.logger.debug('target session opened', { target: this.target, protocolVersion: session.protocolVersion });
    return { ...session, declaredCapabilities, serverCapabilities };
  }

  private async cancel(requestId: JSONRPCRequest['id'], reason: unknown): Promise<void> {
    if (!this.session) return;
    await this.client
      .send(this.session, {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId, reason: typeof reason === 'string' ? reason : 'gateway: cancelled' },
      })
      .catch((error) =>
        this.logger.warn('cancelling at the target failed', { target: this.target, error: describeError(error) }),
      );
  }
}
