import type { CallerIdentity } from '../auth/identity';
import type { Clock } from '../scheduling/clock';
import type { LoadedSession, SessionRecordStore, TargetSessionRecord } from '../state/store';
import type { Caller, StoredTargetSession, TargetSessionSlots } from '../targets/target-link';

/**
 * A 2025 session as the targets see it: its version, what the client declared at initialize, its
 * log level, and its target sessions kept in the session's own partition, so any instance reuses them.
 */
export function sessionCaller(
  { store, clock }: { store: SessionRecordStore; clock: Clock },
  loaded: LoadedSession,
  identity: CallerIdentity,
  inputCapable: boolean,
  /** A call started before its session's read returned: no target session is opened before that read. */
  sessionRead?: Promise<void>,
): Caller {
  const { session } = loaded;
  return {
    identity,
    era: 'legacy',
    protocolVersion: session.protocolVersion,
    capabilities: session.clientCapabilities,
    inputCapable,
    logLevel: session.logLevel,
    sessions: new PartitionSlots(store, clock, loaded, sessionRead),
  };
}

/**
 * Target sessions kept in the last seconds, per gateway session and target, on this instance: a
 * request loads its partition when it starts, so one that loaded it just before a parallel request
 * kept a target session would otherwise open another (and find it refused by the table).
 */
const recentlyKept = new Map<string, { record: TargetSessionRecord; at: number }>();
const RECENT_MS = 10_000;

function remember(key: string, record: TargetSessionRecord, now: number): void {
  if (recentlyKept.size > 1000) {
    for (const [k, v] of recentlyKept) if (now - v.at > RECENT_MS) recentlyKept.delete(k);
  }
  recentlyKept.set(key, { record, at: now });
}

class PartitionSlots implements TargetSessionSlots {
  readonly scope: string;
  /** Target sessions the target forgot during this request (404), by target. */
  private readonly forgotten = new Map<string, string>();

  constructor(
    private readonly store: SessionRecordStore,
    private readonly clock: Clock,
    private readonly loaded: LoadedSession,
    private readonly sessionRead?: Promise<void>,
  ) {
    // Every request of the session loads its own copy: the session id is what they have in common.
    this.scope = `session\u0000${loaded.session.id}`;
  }

  ready(): Promise<void> {
    return this.sessionRead ?? Promise.resolve();
  }

  get(target: string): StoredTargetSession | undefined {
    let record = this.loaded.targets.get(target);
    if (!record && !this.forgotten.has(target)) {
      const recent = recentlyKept.get(`${this.scope}\u0000${target}`);
      if (recent && this.clock.now() - recent.at < RECENT_MS) record = recent.record;
    }
    if (!record) return undefined;
    const { targetSessionId, protocolVersion, declaredCapabilities, serverCapabilities } = record;
    return { targetSessionId, protocolVersion, declaredCapabilities, serverCapabilities };
  }

  async save(target: string, session: StoredTargetSession): Promise<StoredTargetSession> {
    const record: TargetSessionRecord = {
      target,
      targetSessionId: session.targetSessionId,
      protocolVersion: session.protocolVersion,
      declaredCapabilities: session.declaredCapabilities,
      serverCapabilities: session.serverCapabilities,
    };
    const kept = await this.store.putTargetSession(this.loaded.session, record, {
      replacing: this.forgotten.get(target),
    });
    this.loaded.targets.set(target, kept);
    remember(`${this.scope}\u0000${target}`, kept, this.clock.now());
    if (kept.targetSessionId === session.targetSessionId) return session;
    const { targetSessionId, protocolVersion, declaredCapabilities, serverCapabilities } = kept;
    return { targetSessionId, protocolVersion, declaredCapabilities, serverCapabilities };
  }

  forget(target: string, session: StoredTargetSession): void {
    // The next save replaces it in the table (and only it: another instance may have replaced it already).
    if (session.targetSessionId !== undefined) this.forgotten.set(target, session.targetSessionId);
    const key = `${this.scope}\u0000${target}`;
    if (recentlyKept.get(key)?.record.targetSessionId === session.targetSessionId) recentlyKept.delete(key);
    if (this.loaded.targets.get(target)?.targetSessionId === session.targetSessionId)
      this.loaded.targets.delete(target);
  }
}
