import type { EraLookup } from '../targets/era-probe';
import type { ModernTargetClient } from '../targets/modern-client';
import type { LegacyUpstreamPool } from './legacy-upstream';
import type { RequestStateSealer } from './request-state';

/**
 * What the 2026-07-28 path needs besides the shared parts: all per-instance memory, none of it
 * persisted. Built once by the bootstrap.
 */
export interface ModernServices {
  /** Seals and opens the gateway's requestState (keys from configuration or Secrets Manager). */
  requestState: RequestStateSealer;
  /** Each target's era, probed once and cached. */
  eras: EraLookup;
  /** Clients for targets that speak 2026-07-28. */
  clients: Map<string, ModernTargetClient>;
  /** 2025-era target sessions for modern callers of legacy-only targets. */
  legacySessions: LegacyUpstreamPool;
}
