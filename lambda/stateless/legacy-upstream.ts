import type { ClientCapabilities, InitializeResult, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayLogger } from '../core/logger';
import { describeError } from '../core/logger';
import {
  type JSONRPCResponse,
  type StreamHandlers,
  type TargetClient,
  TargetSessionExpiredError,
  type UpstreamSession,
} from '../targets/upstream-client';
import { canonicalJson } from './request-state';

/**
 * 2025-era target sessions used by 2026-07-28 requests (a modern client calling a legacy-only
 * target). The stateless path stores nothing, so these live in this instance's memory only: one
 * session per (target, principal, declared capabilities) — upstream session state never leaks
 * between callers, and the target sees the capabilities of the caller at hand (spec §10.10) —
 * reused while fresh, bounded in number (the least recently used is ended first), re-initialized
 * when the target forgot it. Losing them (a cold start) only costs one `initialize`.
 */

export interface LegacyCallOptions {
  signal?: AbortSignal;
  handlers?: StreamHandlers;
  /** Called with the session the request went out on (to answer or cancel at the target). */
  onSession?(session: UpstreamSession): void;
}

interface Entry {
  session: Promise<UpstreamSession>;
  usedAt: number;
}

export type ServerCapabilitiesOf = InitializeResult['capabilities'];

export class LegacyUpstreamPool {
  private readonly entries = new Map<string, Entry>();
  /** What each target declared in its last InitializeResult (for server/discover). */
  private readonly serverCapabilities = new Map<string, ServerCapabilitiesOf>();
  /** initialize requests sent (for tests and metrics). */
  initializations = 0;

  constructor(
    private readonly clients: Map<string, TargetClient>,
    private readonly protocolVersion: string,
    private readonly logger: GatewayLogger,
    private readonly options: { maxEntries?: number; idleMs?: number } = {},
  ) {}

  /** The target's capabilities, opening a session for this caller if none was seen yet. */
  async capabilities(
    target: string,
    principal: string,
    capabilities: ClientCapabilities,
    signal?: AbortSignal,
  ): Promise<ServerCapabilitiesOf> {
    const known = this.serverCapabilities.get(target);
    if (known) return known;
    const client = this.clients.get(target)!;
    await this.session(this.key(target, principal, capabilities), client, capabilities, signal);
    return this.serverCapabilities.get(target) ?? {};
  }

  private key(target: string, principal: string, capabilities: ClientCapabilities): string {
    return `${target}\u0000${principal}\u0000${canonicalJson(capabilities)}`;
  }

  async request(
    target: string,
    principal: string,
    capabilities: ClientCapabilities,
    request: JSONRPCRequest,
    options: LegacyCallOptions = {},
  ): Promise<JSONRPCResponse> {
    const client = this.clients.get(target)!;
    const key = this.key(target, principal, capabilities);
    for (let attempt = 0; ; attempt++) {
      const session = await this.session(key, client, capabilities, options.signal);
      options.onSession?.(session);
      try {
        return await client.request(session, request, { signal: options.signal, handlers: options.handlers });
      } catch (error) {
        if (!(error instanceof TargetSessionExpiredError) || attempt > 0) throw error;
        this.entries.delete(key);
        this.logger.info('target session expired; re-initializing', { target });
      }
    }
  }

  private async session(
    key: string,
    client: TargetClient,
    capabilities: ClientCapabilities,
    signal?: AbortSignal,
  ): Promise<UpstreamSession> {
    const now = Date.now();
    const idleMs = this.options.idleMs ?? 5 * 60_000;
    const existing = this.entries.get(key);
    if (existing && now - existing.usedAt < idleMs) {
      existing.usedAt = now;
      // Most recently used last: the first entry is the one to evict.
      this.entries.delete(key);
      this.entries.set(key, existing);
      return existing.session;
    }
    if (existing) this.evict(key, existing, client);
    this.initializations++;
    const session = client.initialize(this.protocolVersion, capabilities, signal).then((outcome) => {
      this.serverCapabilities.set(client.name, outcome.result.capabilities ?? {});
      return outcome.session;
    });
    const entry: Entry = { session, usedAt: now };
    this.entries.set(key, entry);
    session.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    const max = this.options.maxEntries ?? 256;
    while (this.entries.size > max) {
      const [oldestKey, oldest] = this.entries.entries().next().value as [string, Entry];
      this.evict(oldestKey, oldest, this.clients.get(oldestKey.split('\u0000')[0]));
    }
    return session;
  }

  private evict(key: string, entry: Entry, client: TargetClient | undefined): void {
    this.entries.delete(key);
    void entry.session
      .then((session) => client?.terminate(session))
      .catch((error) => this.logger.debug('ending an idle target session failed', { error: describeError(error) }));
  }
}
