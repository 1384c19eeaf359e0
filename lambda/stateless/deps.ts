import type { SharedDeps } from '../relay/shared-deps';
import type { PendingStore } from '../state/store';
import type { LegacySessionPool } from './legacy-sessions';
import type { RequestStateSealer } from './request-state';

/** What the 2026-07-28 path is built from: the shared parts, the sealer, memory, and the bridged calls' rounds and per-principal count (no session store). */
export interface StatelessDeps extends SharedDeps {
  /** Seals and opens the gateway's requestState (keys from configuration or Secrets Manager). */
  requestState: RequestStateSealer;
  /** Legacy target sessions of modern callers, in this instance's memory. */
  legacySessions: LegacySessionPool;
  /**
   * Pending records of bridged calls only (a 2026-07-28 client and a 2025-only target that asks for
   * input): a same-era 2026-07-28 request never touches it.
   */
  rounds: PendingStore;
}
