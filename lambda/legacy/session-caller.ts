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
  readonly scope: string;

  constructor(
    private readonly store: SessionStore,
    private readonly loaded: LoadedSession,
  ) {
    // Every request of the session loads its own copy: the session id is what they have in common.
    this.scope = `session\u0000${loaded.session.id}`;
  }

  get(target: string): StoredTargetSession | undefined {
    const record = this.loaded.targets.get(target);
    if (!record) return undefined;
    const { targetSessionId, protocolVersion, declaredCapabilities } = record;
    return { targetSessionId, protocolVersion, declaredCapabilities };
  }

  async save(target: string, session: StoredTargetSession): Promise<void> {
    const record: TargetSessionRecord = {
      target,
      targetSessionId: session.targetSessionId,
      protocolVersion: session.protocolVersion,
      declaredCapabilities: session.declaredCapabilities,
    };
    await this.store.putTargetSession(this.loaded.session, record);
    this.loaded.targets.set(target, record);
  }

  forget(target: string, session: StoredTargetSession): void {
    if (this.loaded.targets.get(target)?.targetSessionId === session.targetSessionId)
      this.loaded.targets.delete(target);
  }
}
