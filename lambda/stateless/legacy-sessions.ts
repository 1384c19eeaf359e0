import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import type { ModernClientCapabilities } from '../protocol/types';
import type { Targets } from '../targets/targets';
import type { StoredTargetSession, TargetSessionSlots } from '../targets/upstream';
import { canonicalJson } from './request-state';

/**
 * Legacy-era target sessions used by 2026-07-28 requests (a modern client calling a legacy-only
 * target). The stateless path stores nothing, so these live in this instance's memory only: one
 * session per (target, principal, declared capabilities) — upstream session state never leaks
 * between callers, and the target sees the capabilities of the caller at hand — reused while
 * fresh, bounded in number (the least recently used is ended first), re-initialized when the target
 * forgot it. Losing them (a cold start) only costs one `initialize`.
 */

interface Entry {
  session: StoredTargetSession;
  usedAt: number;
}

export class LegacySessionPool {
  private readonly entries = new Map<string, Entry>();
  /** Sessions opened (for tests and metrics). */
  initializations = 0;

  constructor(
    private readonly targets: Targets,
    private readonly logger: GatewayLogger,
    private readonly options: { maxEntries?: number; idleMs?: number } = {},
  ) {}

  /** The slots of one caller: its principal and what it declared. */
  slotsFor(principal: string, capabilities: ModernClientCapabilities): TargetSessionSlots {
    const keyOf = (target: string) => `${target}\u0000${principal}\u0000${canonicalJson(capabilities)}`;
    return {
      get: (target) => this.get(keyOf(target)),
      save: async (target, session) => this.put(keyOf(target), target, session),
      forget: (target) => {
        this.entries.delete(keyOf(target));
      },
    };
  }

  private get(key: string): StoredTargetSession | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (Date.now() - entry.usedAt >= (this.options.idleMs ?? 5 * 60_000)) {
      this.evict(key, entry);
      return undefined;
    }
    entry.usedAt = Date.now();
    // Most recently used last: the first entry is the one to evict.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.session;
  }

  private put(key: string, _target: string, session: StoredTargetSession): void {
    this.initializations++;
    this.entries.set(key, { session, usedAt: Date.now() });
    const max = this.options.maxEntries ?? 256;
    while (this.entries.size > max) {
      const [oldestKey, oldest] = this.entries.entries().next().value as [string, Entry];
      this.evict(oldestKey, oldest);
    }
  }

  private evict(key: string, entry: Entry): void {
    this.entries.delete(key);
    const target = key.split('\u0000')[0] ?? '';
    void this.targets
      .terminate(target, entry.session)
      .catch((error) => this.logger.debug('ending an idle target session failed', { error: describeError(error) }));
  }
}
