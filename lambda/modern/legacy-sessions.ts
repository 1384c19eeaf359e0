import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import type { ModernClientCapabilities } from '../protocol/types';
import type { Clock } from '../scheduling/clock';
import type { StoredTargetSession, TargetSessionSlots } from '../targets/target-link';
import type { Targets } from '../targets/targets';
import { canonicalJson } from './request-state';

/**
 * Legacy-era target sessions used by 2026-07-28 requests (a modern client calling a legacy-only
 * target). The modern path stores nothing, so these live in this instance's memory only, per
 * (target, principal, declared capabilities) — target session state never leaks between
 * principals, and the target sees the capabilities of the caller at hand — reused while fresh,
 * bounded in number (the least recently used is ended first), re-initialized when the target
 * forgot it. Losing them (a cold start) only costs one `initialize`.
 *
 * A call that can be asked for input listens on its target session's GET stream, where a request
 * names no call it belongs to: such a call checks a session out for itself, so concurrent calls of
 * one principal (two client processes with the same identity, or one client's parallel calls) never
 * see each other's questions. A concurrent call finds no free session and opens its own; on return
 * a key keeps at most `maxIdlePerKey` idle sessions and ends the rest. Lists and calls that cannot
 * be asked share any session of their key.
 */

interface Entry {
  session: StoredTargetSession;
  usedAt: number;
  /** A listening call holds it: no other listening call gets it. */
  checkedOut: boolean;
}

let nextPool = 0;

export class LegacySessionPool {
  /** Per key, least recently used first. */
  private readonly entries = new Map<string, Entry[]>();
  private readonly id = ++nextPool;
  /** Sessions opened (for tests and metrics). */
  initializations = 0;

  constructor(
    private readonly targets: Targets,
    private readonly logger: GatewayLogger,
    /** The gateway's clock: idle sessions are aged by it. */
    private readonly clock: Clock,
    private readonly options: { maxEntries?: number; maxIdlePerKey?: number; idleMs?: number } = {},
  ) {}

  /** The slots of one caller: its principal and what it declared. */
  slotsFor(principal: string, capabilities: ModernClientCapabilities): TargetSessionSlots {
    const caller = `${principal}\u0000${canonicalJson(capabilities)}`;
    const keyOf = (target: string) => `${target}\u0000${caller}`;
    return {
      // Unique per pool: two gateways in one process never share an initialize.
      scope: `pool-${this.id}\u0000${caller}`,
      get: (target) => this.shared(keyOf(target)),
      save: async (target, session, options) => {
        this.put(keyOf(target), session, options?.checkedOut ?? false);
        return session;
      },
      forget: (target, session) => this.remove(keyOf(target), session),
      checkout: (target) => this.checkout(keyOf(target), target),
      checkin: (target, session) => this.checkin(keyOf(target), session),
    };
  }

  /** Target sessions this pool holds (for tests: every session it opened is here or was ended). */
  get size(): number {
    let n = 0;
    for (const list of this.entries.values()) n += list.length;
    return n;
  }

  /** Any fresh session of the key (checked out or not): for requests that do not listen. */
  private shared(key: string): StoredTargetSession | undefined {
    const list = this.fresh(key);
    const entry = list[list.length - 1];
    if (!entry) return undefined;
    this.touch(key, list, entry);
    return entry.session;
  }

  /** A fresh session no listening call holds, now held by the caller; undefined: open one. */
  private checkout(key: string, target: string): StoredTargetSession | undefined {
    const list = this.fresh(key, target);
    for (let i = list.length - 1; i >= 0; i--) {
      const entry = list[i]!;
      if (entry.checkedOut) continue;
      // Without a session id there is no GET stream, so nothing to keep apart.
      entry.checkedOut = entry.session.targetSessionId !== undefined;
      this.touch(key, list, entry);
      return entry.session;
    }
    return undefined;
  }

  private checkin(key: string, session: StoredTargetSession): void {
    const list = this.entries.get(key);
    const entry = list?.find((e) => e.session === session);
    if (!list || !entry) return;
    entry.checkedOut = false;
    entry.usedAt = this.clock.now();
    // More idle sessions than a key needs (after a burst of concurrent calls): the least recently used go.
    const max = this.options.maxIdlePerKey ?? 4;
    let idle = list.filter((e) => !e.checkedOut).length;
    for (const e of [...list]) {
      if (idle <= max) break;
      if (e.checkedOut || e === entry) continue;
      this.end(key, targetOf(key), e);
      idle--;
    }
  }

  private put(key: string, session: StoredTargetSession, checkedOut: boolean): void {
    this.initializations++;
    const list = this.entries.get(key) ?? [];
    list.push({ session, usedAt: this.clock.now(), checkedOut });
    this.entries.delete(key);
    this.entries.set(key, list);
    const max = this.options.maxEntries ?? 256;
    // Least recently used keys first; a session a call holds is never ended under it.
    for (const [oldKey, oldList] of this.entries) {
      if (this.size <= max) break;
      for (const e of [...oldList]) {
        if (this.size <= max) break;
        if (!e.checkedOut) this.end(oldKey, targetOf(oldKey), e);
      }
    }
  }

  /** The target forgot this session (404): dropped, nothing to end. */
  private remove(key: string, session: StoredTargetSession): void {
    const list = this.entries.get(key);
    if (!list) return;
    const kept = list.filter((e) => e.session !== session);
    if (kept.length) this.entries.set(key, kept);
    else this.entries.delete(key);
  }

  /** The key's entries after ending those idle too long. */
  private fresh(key: string, target = targetOf(key)): Entry[] {
    const list = this.entries.get(key);
    if (!list) return [];
    const idleMs = this.options.idleMs ?? 5 * 60_000;
    for (const e of [...list]) if (!e.checkedOut && this.clock.now() - e.usedAt >= idleMs) this.end(key, target, e);
    return this.entries.get(key) ?? [];
  }

  /** Most recently used last, in its key and among keys. */
  private touch(key: string, list: Entry[], entry: Entry): void {
    entry.usedAt = this.clock.now();
    list.splice(list.indexOf(entry), 1);
    list.push(entry);
    this.entries.delete(key);
    this.entries.set(key, list);
  }

  private end(key: string, target: string, entry: Entry): void {
    this.remove(key, entry.session);
    void this.targets
      .terminate(target, entry.session)
      .catch((error) => this.logger.debug('ending an idle target session failed', { error: describeError(error) }));
  }
}

function targetOf(key: string): string {
  return key.split('\u0000')[0] ?? '';
}
