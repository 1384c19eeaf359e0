import type { GatewayLogger } from '../observability/logger';
import { GatewayError } from '../protocol/errors';
import { BRIDGED_BUCKET_SECONDS } from '../state/principal-counters';
import type { PendingStore } from '../state/store';

/**
 * The places of a principal's bridged calls waiting for input (`maxBridgedCallsPerPrincipal`). Each
 * keeps a target stream (and a client stream) open until the call ends or its round is abandoned, so
 * one caller's abandoned rounds are bounded. Counted in DynamoDB, so the bound holds across instances
 * and Lambda environments (one invocation each: an in-memory count would bound nothing there); the
 * layout and cost are in ../state/principal-counters.ts. A place is taken before anything of round 1
 * is stored and lives at most until the holding invocation's deadline, the longest a bridged call can
 * live: a holder that died without giving it back blocks nobody past that (plus one bucket).
 */
export interface BridgedPlaces {
  store: Pick<PendingStore, 'admitBridgedCall' | 'releaseBridgedCall'>;
  logger: GatewayLogger;
  max: number;
  /** pendingRequestTimeoutSeconds: an unanswered round gives its place back within it (the Retry-After's bound). */
  pendingTimeoutSeconds: number;
}

/**
 * Takes a place for one more bridged call of `principal` held until `deadlineMs` (epoch ms); resolves to
 * the function that gives it back (once, best effort). Rejects with TooManyBridgedCalls (429 with a
 * Retry-After), or the store's failure (503): either way nothing was stored.
 */
export async function takeBridgedPlace(
  places: BridgedPlaces,
  principal: string,
  deadlineMs: number,
): Promise<() => Promise<void>> {
  const expiresAt = Math.ceil(deadlineMs / 1000);
  const admission = await places.store.admitBridgedCall(principal, expiresAt, {
    max: places.max,
    bucketSeconds: BRIDGED_BUCKET_SECONDS,
  });
  if (!admission.admitted) {
    throw new GatewayError(
      'TooManyBridgedCalls',
      `Too many calls waiting for input: this caller already has ${places.max} calls to 2025 targets waiting for answers (at most ${places.max} across gateway instances: maxBridgedCallsPerPrincipal); answer or abandon some first`,
      { limit: places.max },
      // A live call's place comes back when it ends, at the latest when its round is abandoned; a dead
      // holder's when its bucket is over.
      { retryAfterSeconds: Math.min(admission.retryAfterSeconds, places.pendingTimeoutSeconds) },
    );
  }
  let released: Promise<void> | undefined;
  return () => {
    released ??= places.store
      .releaseBridgedCall(principal, expiresAt, BRIDGED_BUCKET_SECONDS)
      .catch((error: unknown) =>
        places.logger.warn('the bridged-call count of a principal was not decreased', { reason: String(error) }),
      );
    return released;
  };
}
