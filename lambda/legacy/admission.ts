import { GatewayError } from '../protocol/errors';
import { BUCKETS_PER_TIMEOUT, INITIALIZE_WINDOW_SECONDS } from '../state/principal-counters';
import type { SessionRecord } from '../state/store';
import type { LegacyDeps } from './deps';

/**
 * Whether a principal may open one more legacy-era session: at most `initializeRatePerMinute`
 * initializes per minute and `maxSessionsPerPrincipal` live sessions, both counted in DynamoDB so every
 * instance sees the same numbers (the cost: state/principal-counters.ts). Each session then opens a
 * target session at every target it calls, so an unbounded client multiplies into the targets.
 * Refused with 429 and a `Retry-After` that says when a retry can succeed; a DynamoDB failure is the
 * usual 503 (the session could not have been stored either).
 */
export async function admitSession(deps: LegacyDeps, session: SessionRecord): Promise<void> {
  const { config, store } = deps;
  const now = session.createdAt;
  const windowStart = now - (now % INITIALIZE_WINDOW_SECONDS);
  const withinRate = await store.countInitialize(
    session.principal,
    windowStart,
    INITIALIZE_WINDOW_SECONDS,
    config.initializeRatePerMinute,
  );
  if (!withinRate) {
    throw new GatewayError(
      'InitializeRateExceeded',
      `Too many initialize requests: at most ${config.initializeRatePerMinute} per minute for one principal (initializeRatePerMinute)`,
      { limit: config.initializeRatePerMinute },
      { retryAfterSeconds: Math.max(1, windowStart + INITIALIZE_WINDOW_SECONDS - now) },
    );
  }
  const admission = await store.admitSession(
    session.principal,
    session.expiresAt,
    { max: config.maxSessionsPerPrincipal, bucketSeconds: bucketSecondsOf(deps) },
    now,
  );
  if (!admission.admitted) {
    throw new GatewayError(
      'TooManySessions',
      `Too many sessions: at most ${config.maxSessionsPerPrincipal} live sessions for one principal (maxSessionsPerPrincipal); end one with DELETE or retry later`,
      { limit: config.maxSessionsPerPrincipal },
      { retryAfterSeconds: admission.retryAfterSeconds },
    );
  }
}

/** A session that counted as live no longer does (DELETE, or it could not be stored). Best effort. */
export async function releaseSession(deps: LegacyDeps, session: SessionRecord): Promise<void> {
  await deps.store
    .releaseSession(session.principal, session.expiresAt, bucketSecondsOf(deps))
    .catch((error: unknown) =>
      deps.logger.warn('the session count of a principal was not decreased', { reason: String(error) }),
    );
}

function bucketSecondsOf(deps: LegacyDeps): number {
  return Math.ceil(deps.config.sessionTimeoutSeconds / BUCKETS_PER_TIMEOUT);
}
