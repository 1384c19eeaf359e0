import type { Clock } from '../scheduling/clock';
import type { LoadedSession } from '../state/store';

/**
 * What this instance last read of each session, kept only to start a call before the session's read
 * returns (./legacy-path.ts, "read-ahead"). It never answers a request by itself: every request still
 * reads the session, and nothing of a call reaches the client before that read has confirmed the
 * session exists, is live and is the caller's — so the transports page's 404 for a deleted or expired
 * session holds on every instance, whatever this cache holds.
 *
 * An entry is used only by the principal that owns it, before the session's expiry, and within
 * `maxAgeMs` of the read that stored it; the least recently used entry goes first past `maxEntries`.
 */
export class SessionCache {
  private readonly entries = new Map<string, { loaded: LoadedSession; readAt: number }>();

  constructor(
    /** The gateway's clock: entries are aged by it. */
    private readonly clock: Clock,
    private readonly maxEntries = 1000,
    private readonly maxAgeMs = 60_000,
  ) {}

  /** The session as last read here, if it may start a call for `principal` now. */
  get(sessionId: string, principal: string): LoadedSession | undefined {
    const entry = this.entries.get(sessionId);
    if (!entry) return undefined;
    const now = this.clock.now();
    if (now - entry.readAt > this.maxAgeMs || entry.loaded.session.expiresAt * 1000 <= now) {
      this.entries.delete(sessionId);
      return undefined;
    }
    return entry.loaded.session.principal === principal ? entry.loaded : undefined;
  }

  /** A fresh read of a live session. */
  put(loaded: LoadedSession): void {
    const id = loaded.session.id;
    this.entries.delete(id); // re-inserted last: the Map's order is the recency order
    this.entries.set(id, { loaded, readAt: this.clock.now() });
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }

  /** The session is gone, or a read disagreed with what is kept. */
  forget(sessionId: string): void {
    this.entries.delete(sessionId);
  }

  get size(): number {
    return this.entries.size;
  }
}
