import type { SharedDeps } from '../calls/shared-deps';
import type { TaskIdSealer } from '../crypto/task-ids';
import type { PendingStore } from '../state/store';
import type { LegacySessionPool } from './legacy-sessions';
import type { ListenPlaces } from './listen-places';
import type { RequestStateSealer } from './request-state';

/**
 * What the 2026-07-28 path is built from: the shared parts, the sealer, its in-memory pool of legacy
 * target sessions, and one store, for bridged calls only. It gets no session store: a 2026-07-28
 * request carries what the gateway needs (the sealed requestState holds what lasts between rounds).
 */
export interface ModernDeps extends SharedDeps {
  /** Seals and opens the gateway's requestState (keys from configuration or Secrets Manager). */
  requestState: RequestStateSealer;
  /** Seals and opens the task ids handed to clients for targets' tasks (crypto/task-ids.ts; the same keys). */
  taskIds: TaskIdSealer;
  /** The open listens of each principal in this instance (./listen.ts). */
  listens: ListenPlaces;
  /** Legacy target sessions of modern callers, in this instance's memory. */
  legacySessions: LegacySessionPool;
  /**
   * Where bridged calls (a 2026-07-28 client, a 2025-only target that asks for input) keep their rounds'
   * pending records and each principal's count of them, across instances (./bridge.ts): written only by
   * such a call; a same-era 2026-07-28 request never touches it. The table of the session store, a
   * partition per bridged call with no session item.
   */
  bridgeStore: PendingStore;
}
