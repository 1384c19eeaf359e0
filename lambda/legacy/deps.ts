import type { SharedDeps } from '../relay/shared-deps';
import type { SessionStore } from '../state/store';

/** What the 2025-era path is built from: the shared parts and the session store. */
export interface LegacyDeps extends SharedDeps {
  store: SessionStore;
}
