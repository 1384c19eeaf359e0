import type { LoadedSession, SessionStore, TargetSessionRecord } from '../state/store';
import type { Caller, StoredTargetSession, TargetSessionSlots } from '../targets/upstream';

/**
 * A 2025 session as the targets see it: its version, what the client declared at initialize, its
 * log level, and its target sessions kept in the session's own partition, so any instance reuses them.
 */
export function sessionCaller(store: SessionStore, loaded: LoadedSession, inputCapable: boolean): Caller {
  const { session } = loaded;
  return {
    era: 'legacy',
    protocolVersion: session.protocolVersion,
    capabilities: session.clientCapabilities,
    inputCapable,
    logLevel: session.logLevel,
    sessions: new PartitionSlots(store, loaded),
  };
}

class PartitionSlots implements TargetSessionSlots {
  /** Target sessions the targets forgot (404), so the one opened in their place may replace them. */
  private readonly forgotten = new Map<string, string | undefined>();

  constructor(
    private readonly store: SessionStore,
    private readonly loaded: LoadedSession,
  ) {}

  get(target: string): StoredTargetSession | undefined {
    const record = this.loaded.targets.get(target);
    if (!record) return undefined;
    const { targetSessionId, protocolVersion, declaredCapabilities } = record;
    return { targetSessionId, protocolVersion, declaredCapabilities };
  }

  /**
   * Kept only when no other request (on any instance) stored a session for the target meanwhile: a
   * client's first requests often run in parallel (its GET stream and its first list), and two target
   * sessions would split what the target sends (a subscription on one, the GET stream on the other).
   */
  async save(target: string, session: StoredTargetSession): Promise<StoredTargetSession | undefined> {
    const record: TargetSessionRecord = {
      target,
      targetSessionId: session.targetSessionId,
      protocolVersion: session.protocolVersion,
      declaredCapabilities: session.declaredCapabilities,
    };
    const replacing = this.forgotten.has(target) ? (this.forgotten.get(target) ?? '') : undefined;
    const stored = await this.store.claimTargetSession(this.loaded.session, record, replacing);
    this.forgotten.delete(target);
    this.loaded.targets.set(target, stored ?? record);
    if (!stored) return undefined;
    const { targetSessionId, protocolVersion, declaredCapabilities } = stored;
    return { targetSessionId, protocolVersion, declaredCapabilities };
  }

  forget(target: string): void {
    this.forgotten.set(target, this.loaded.targets.get(target)?.targetSessionId);
    this.loaded.targets.delete(target);
  }
}
