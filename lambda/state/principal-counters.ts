import { createHash } from 'node:crypto';

/**
 * The item layout of the per-principal counters, shared by the DynamoDB store and the in-memory one.
 *
 * One partition per principal, `U#<SHA-256 of the principal>` (bounded length; no identity in a key):
 * - `R#<window start>`: `initialize` requests in one fixed window (`count`), TTL at the window's end.
 *   One conditional `UpdateItem` per `initialize` (`ADD count 1` if `count < limit`).
 * - `L#<bucket start>`: live sessions whose expiry falls in one bucket of time (`count`), TTL once all of
 *   them expired. A session's expiry is absolute, so a bucket stops counting by itself when it is over:
 *   nothing has to notice a session that simply expired. Live = the buckets from the current one on;
 *   admitting reads them (one `Query`, at most BUCKETS_PER_TIMEOUT + 1 small items) and adds one to the
 *   new session's bucket with the condition `count < max - (the other buckets)`: two instances admitting
 *   at once cannot both take the last place, since only that bucket grows. `DELETE` takes one off
 *   (`UpdateItem`). A session counts until its bucket ends: at most one bucket (a twelfth of
 *   `sessionTimeoutSeconds`) longer than it lives.
 * - `B#<bucket start>`: bridged 2026-07-28 calls waiting for input, counted the same way. A bridged call
 *   lives at most until the deadline of the invocation that holds it (the function timeout on Lambda,
 *   the request timeout locally): that is its place's expiry, so the place of a holder that died without
 *   giving it back stops counting at most BRIDGED_BUCKET_SECONDS after that deadline. Taking a place is
 *   one `Query` (at most 900 / 60 + 1 items) and one conditional `UpdateItem`; giving it back one `UpdateItem`.
 */

/** Buckets per session lifetime: the over-count in time, against the items one admission reads. */
export const BUCKETS_PER_TIMEOUT = 12;
/** The rate window of `initialize`. */
export const INITIALIZE_WINDOW_SECONDS = 60;
/** The width of a bridged-call bucket: the over-count in time of a dead holder's place. */
export const BRIDGED_BUCKET_SECONDS = 60;
/** Counter items outlive what they count by this much (TTL deletion is lazy anyway). */
export const COUNTER_TTL_SLACK_SECONDS = 60;

export const principalPk = (principal: string) => `U#${createHash('sha256').update(principal).digest('base64url')}`;
const epoch = (seconds: number) => String(seconds).padStart(11, '0');
export const rateSk = (windowStart: number) => `R#${epoch(windowStart)}`;
export const liveSk = (bucketStart: number) => `L#${epoch(bucketStart)}`;
/** After every live bucket's sort key. */
export const LIVE_END = 'L#~';
export const bridgedSk = (bucketStart: number) => `B#${epoch(bucketStart)}`;
/** After every bridged-call bucket's sort key (and before every `L#`). */
export const BRIDGED_END = 'B#~';

/** One kind of live counter: its buckets' sort keys and the key after all of them. */
export interface LiveCounter {
  sk: (bucketStart: number) => string;
  end: string;
}
export const LIVE_SESSIONS: LiveCounter = { sk: liveSk, end: LIVE_END };
export const BRIDGED_CALLS: LiveCounter = { sk: bridgedSk, end: BRIDGED_END };
export const bucketStartOf = (seconds: number, bucketSeconds: number) =>
  Math.floor(seconds / bucketSeconds) * bucketSeconds;
export const bucketOfSk = (sk: string) => Number(sk.slice(2));
