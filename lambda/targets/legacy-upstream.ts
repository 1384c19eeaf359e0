import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { capabilitiesForLegacyTarget, declaresInput } from '../protocol/capabilities';
import { rpcErrorOf } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { JSONRPCNotification, JSONRPCRequest } from '../protocol/types';
import type { Era } from '../protocol/versions';
import { TargetSessionExpiredError, TargetTimeoutError } from './endpoint';
import type { LegacySession, LegacyTargetClient } from './legacy-client';
import type { StandaloneStreams } from './standalone-streams';
import type {
  Caller,
  StoredTargetSession,
  TargetSessionSlots,
  Upstream,
  UpstreamCallOptions,
  UpstreamRequest,
} from './upstream';

/**
 * A legacy-era target for one caller: its target session opened lazily (with the caller's version
 * for 2025 callers, the newest configured legacy version for 2026 callers, and only what the
 * caller declared), kept where the caller keeps them, re-initialized once when the target forgot
 * it (404). `ping` from the target is answered here; an aborted call is cancelled at the target.
 */

/** Parallel requests of one caller share one `initialize` per target. */
const opening = new WeakMap<TargetSessionSlots, Map<string, Promise<StoredTargetSession>>>();

let nextInternalId = 0;

export class LegacyUpstream implements Upstream {
  readonly era: Era = 'legacy';
  session?: LegacySession;

  constructor(
    private readonly client: LegacyTargetClient,
    private readonly caller: Caller,
    /** The version spoken to the target. */
    private readonly protocolVersion: string,
    private readonly logger: GatewayLogger,
    /** The target sessions' GET streams on this instance. */
    private readonly streams?: StandaloneStreams,
  ) {}

  get target(): string {
    return this.client.name;
  }

  async call(request: UpstreamRequest, options: UpstreamCallOptions): Promise<JSONRPCResponse> {
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
    try {
      for (let attempt = 0; ; attempt++) {
        const session = await this.open(options.signal);
        // A call that can relay the target's requests listens on the session's GET stream too (opened
        // first). It costs a request (and a connection) per call, so only callers that can take requests pay it.
        // What arrives on the GET stream belongs to this call too: a question to the user stops the call's
        // clock (a person is answering), anything else restarts it.
        let clock: { hold(): void; touch(): void } | undefined;
        const detach =
          options.onServerRequest && this.streams && declaresInput(this.caller.capabilities)
            ? await this.streams.attach(this.client, session, {
                onServerRequest: (serverRequest) => {
                  clock?.hold();
                  listeners.onServerRequest(serverRequest);
                },
                onNotification: (notification) => {
                  clock?.touch();
                  listeners.onNotification?.(notification);
                },
                progressToken: options.progressToken,
              })
            : undefined;
        try {
          return await this.client.request(session, message, {
            signal: options.signal,
            listeners,
            onClock: (started) => {
              clock = started;
            },
          });
        } catch (error) {
          // The lifecycle page: a request that timed out is cancelled at the receiver.
          if (error instanceof TargetTimeoutError) void this.cancel(id, 'gateway: timed out');
          if (!(error instanceof TargetSessionExpiredError) || attempt > 0) throw error;
          this.logger.info('target session expired; re-initializing', { target: this.target });
          this.caller.sessions.forget(this.target);
        } finally {
          await detach?.();
        }
      }
    } finally {
      options.signal.removeEventListener('abort', onAbort);
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
    await this.open(signal);
    return this.caller.sessions.get(this.target)?.serverCapabilities ?? {};
  }

  /** The caller's session with this target, opened if there is none. */
  async open(signal?: AbortSignal): Promise<LegacySession> {
    const stored = this.caller.sessions.get(this.target);
    if (stored) {
      this.session = stored;
      return stored;
    }
    let perCaller = opening.get(this.caller.sessions);
    if (!perCaller) {
      perCaller = new Map();
      opening.set(this.caller.sessions, perCaller);
    }
    let pending = perCaller.get(this.target);
    if (!pending) {
      pending = this.initialize(signal).finally(() => perCaller.delete(this.target));
      perCaller.set(this.target, pending);
    }
    this.session = await pending;
    return this.session;
  }

  private async initialize(signal?: AbortSignal): Promise<StoredTargetSession> {
    const declaredCapabilities = capabilitiesForLegacyTarget(this.caller.capabilities, this.protocolVersion);
    const { session, result } = await this.client.initialize(this.protocolVersion, declaredCapabilities, signal);
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
    const stored: StoredTargetSession = { ...session, declaredCapabilities, serverCapabilities };
    await this.caller.sessions.save(this.target, stored);
    this.logger.debug('target session opened', { target: this.target, protocolVersion: session.protocolVersion });
    return stored;
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
