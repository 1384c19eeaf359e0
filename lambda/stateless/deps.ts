import type { SharedDeps } from '../relay/shared-deps';
import type { LegacySessionPool } from './legacy-sessions';
import type { RequestStateSealer } from './request-state';

/** What the 2026-07-28 path is built from: the shared parts, the sealer, and memory. No store at all. */
export interface StatelessDeps extends SharedDeps {
  /** Seals and opens the gateway's requestState (keys from configuration or Secrets Manager). */
  requestState: RequestStateSealer;
  /** Legacy target sessions of modern callers, in this instance's memory. */
  legacySessions: LegacySessionPool;
}
