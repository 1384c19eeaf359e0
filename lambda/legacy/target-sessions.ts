import type { GatewayDeps } from '../core/deps';
import { describeError } from '../core/logger';
import type { LoadedSession, TargetSessionRecord } from '../state/store';
import {
  DependencyFailedError,
  type TargetClient,
  TargetSessionExpiredError,
  type UpstreamSession,
} from '../targets/upstream-client';
import { capabilitiesForTarget } from './capabilities';

/**
 * One target session per (gateway session, target), opened lazily with the client's protocol
 * version and only the capabilities the client declared, and kept in the gateway session's
 * partition so that any instance can reuse it. A target that forgot the session (404) is
 * re-initialized transparently, once per call.
 */
export class TargetSessions {
  private readonly opening = new Map<string, Promise<UpstreamSession>>();

  constructor(
    private readonly deps: GatewayDeps,
    private readonly loaded: LoadedSession,
  ) {}

  client(target: string): TargetClient {
    const client = this.deps.targets.get(target);
    if (!client) throw new DependencyFailedError(target, 'not configured');
    return client;
  }

  /** The stored target session, or a new one. */
  async session(target: string, signal?: AbortSignal): Promise<UpstreamSession> {
    const stored = this.loaded.targets.get(target);
    if (stored) return { targetSessionId: stored.targetSessionId, protocolVersion: stored.protocolVersion };
    return this.open(target, signal);
  }

  /** Runs `fn` with the target session, re-initializing once if the target answers 404. */
  async with<T>(
    target: string,
    signal: AbortSignal | undefined,
    fn: (session: UpstreamSession, client: TargetClient) => Promise<T>,
  ): Promise<T> {
    const client = this.client(target);
    const session = await this.session(target, signal);
    try {
      return await fn(session, client);
    } catch (error) {
      if (!(error instanceof TargetSessionExpiredError)) throw error;
      this.deps.logger.info('target session expired; re-initializing', { sessionId: this.loaded.session.id, target });
      this.loaded.targets.delete(target);
      return fn(await this.open(target, signal), client);
    }
  }

  private open(target: string, signal?: AbortSignal): Promise<UpstreamSession> {
    // Parallel lists in one request share one initialize per target.
    let opening = this.opening.get(target);
    if (!opening) {
      opening = this.initialize(target, signal).finally(() => this.opening.delete(target));
      this.opening.set(target, opening);
    }
    return opening;
  }

  private async initialize(target: string, signal?: AbortSignal): Promise<UpstreamSession> {
    const { session } = this.loaded;
    const declaredCapabilities = capabilitiesForTarget(session.clientCapabilities, session.protocolVersion);
    const client = this.client(target);
    const { session: upstream } = await client.initialize(session.protocolVersion, declaredCapabilities, signal);
    const record: TargetSessionRecord = {
      target,
      targetSessionId: upstream.targetSessionId,
      protocolVersion: upstream.protocolVersion,
      declaredCapabilities,
    };
    if (session.logLevel) {
      await client
        .request(
          upstream,
          {
            jsonrpc: '2.0',
            id: `gw-log-${Date.now()}`,
            method: 'logging/setLevel',
            params: { level: session.logLevel },
          },
          { signal },
        )
        .catch((error) =>
          this.deps.logger.warn('logging/setLevel on a new target session failed', {
            target,
            error: describeError(error),
          }),
        );
    }
    await this.deps.store.putTargetSession(session, record);
    this.loaded.targets.set(target, record);
    this.deps.logger.debug('target session opened', {
      sessionId: session.id,
      target,
      protocolVersion: upstream.protocolVersion,
    });
    return upstream;
  }
}
