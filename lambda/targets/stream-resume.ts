/**
 * How the gateway resumes a legacy-era target's POST stream that ended before its response (SSE
 * polling, SEP-1699 in MCP 2025-11-25: a server that sent an event with an `id` MAY close the
 * connection mid-call; the client waits the `retry` the server gave, then GETs with `Last-Event-ID`).
 * The official clients do the same (TypeScript SDK v1 `client/streamableHttp.js`, Python SDK
 * `client/streamable_http.py`: 1 s when no `retry` was given, a successful reconnect resets the
 * count of failed ones). The 2026-07-28 transport has no resumption: there, closing is cancelling.
 */

export interface ResumePolicy {
  /** Wait before reconnecting when the target gave no `retry` (the official clients' 1 s). */
  defaultRetryMs: number;
  /** A `retry` below this is raised to it: a target that closes at once must not make a busy loop. */
  minRetryMs: number;
  /** A `retry` above this is lowered to it: the call holds an invocation while it waits. */
  maxRetryMs: number;
  /** Reconnects in a row that did not open a stream (refused, unreachable, not SSE) before the call fails. */
  maxFailedAttempts: number;
  /** Reconnects of one call in all (each one is counted, `TargetStreamResumes`). */
  maxResumes: number;
}

export const DEFAULT_RESUME_POLICY: ResumePolicy = {
  defaultRetryMs: 1000,
  minRetryMs: 100,
  maxRetryMs: 30_000,
  maxFailedAttempts: 3,
  maxResumes: 1000,
};

/** The wait before the next reconnect: the target's `retry`, within the policy's bounds. */
export function resumeDelayMs(policy: ResumePolicy, retryMs: number | undefined): number {
  const wanted = retryMs ?? policy.defaultRetryMs;
  return Math.min(policy.maxRetryMs, Math.max(policy.minRetryMs, wanted));
}
