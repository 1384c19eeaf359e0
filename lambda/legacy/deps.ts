import type { SharedDeps } from '../calls/shared-deps';
import type { TaskIdSealer } from '../crypto/task-ids';
import type { SessionStore } from '../state/store';
import type { SessionCache } from './session-cache';

/** What the legacy-era path is built from: the shared parts and the session store. */
export interface LegacyDeps extends SharedDeps {
  store: SessionStore;
  /** What this instance last read of each session, to start a call before its read returns (config sessionReadAhead). */
  sessionCache?: SessionCache;
  /** How often a resumed stream polls its log (legacy/resume.ts; tests shorten it). */
  streamPollMs?: { minMs: number; maxMs: number };
  /** Seals and opens the task ids handed to clients for targets' tasks (crypto/task-ids.ts; legacy/tasks.ts). */
  taskIds: TaskIdSealer;
}
