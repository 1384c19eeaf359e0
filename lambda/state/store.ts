import type { LegacyClientCapabilities as ClientCapabilities, Implementation, RequestId } from '../protocol/types';

export { StoreUnavailableError } from '../protocol/errors';

/**
 * The narrow state interface of the 2025-era (stateful) path. One partition per gateway session:
 * the session itself, one item per upstream target session, one per pending server-to-client request.
 * The stateless (2026-07-28) path never receives a store.
 */

export interface SessionRecord {
  id: string;
  /** Who created the session; every later request must present the same principal. */
  principal: string;
  protocolVersion: string;
  clientCapabilities: ClientCapabilities;
  clientInfo?: Implementation;
  /** Level set with logging/setLevel, forwarded to targets. */
  logLevel?: string;
  createdAt: number;
  /** Absolute expiry (epoch seconds), also the DynamoDB TTL attribute. */
  expiresAt: number;
}

export interface TargetSessionRecord {
  target: string;
  /** The target's Mcp-Session-Id; absent when the target runs without sessions. */
  targetSessionId?: string;
  protocolVersion: string;
  /** The capabilities the gateway declared to the target for this session. */
  declaredCapabilities: ClientCapabilities;
}

/**
 * `pending` → `delivering` (claimed by the instance that took the client's answer, with a token) →
 * `answered` once the target took it; back to `pending` when the delivery provably failed (released,
 * so the client's retry of the answer is accepted). `expired`: the holder gave up waiting.
 * Claim, deliver, settle — or release (DESIGN.md).
 */
export type PendingStatus = 'pending' | 'delivering' | 'answered' | 'expired';

/**
 * `relayed`: a target's request, forwarded to the client; the answer goes to the target (from any
 * instance). `held`: a request the gateway itself asks and waits for (a confirmation, or a 2026-07-28
 * target's input round for a 2025 session); the answer is stored in the record for the waiting invocation.
 */
export type PendingKind = 'relayed' | 'held';

export interface PendingRecord {
  /** The gateway-generated id the client sees. */
  gatewayId: string;
  kind: PendingKind;
  method: string;
  /** The target the request came from (relayed), or the call's target (held). */
  target: string;
  targetSessionId?: string;
  /** The target's own JSON-RPC id for the request. */
  targetRequestId: RequestId;
  /** The protocol version of the target session (when the record does not live in that session's partition). */
  targetProtocolVersion?: string;
  /** The client's request (e.g. its tools/call) this server request belongs to. */
  clientRequestId: RequestId;
  status: PendingStatus;
  createdAt: number;
  expiresAt: number;
  /** Held requests only: the client's answer as JSON, stored by answerPending. */
  answer?: string;
  /** While `delivering`: who claimed it (a random token) and when (epoch ms); a claim older than the lease may be taken over. */
  claim?: string;
  claimedAt?: number;
  /**
   * The holder's lease (epoch ms): the invocation that holds the call renews it while it waits; past
   * it the holder is presumed dead and the record can no longer be answered (nobody would receive
   * what the target does next).
   */
  holderUntil?: number;
}

/** What a request of a session reads: the session and its target sessions (never its pending records). */
export interface LoadedSession {
  session: SessionRecord;
  targets: Map<string, TargetSessionRecord>;
}

/** What an answer POST reads: the session and the one pending record it answers (one request). */
export interface LoadedAnswer {
  session: SessionRecord;
  pending?: PendingRecord;
}

/** Why a call's marker was written: the client cancelled it, or the answer to its request could not be delivered. */
export type CallEndReason = 'cancelled' | 'answer-undeliverable';

/** Whether a principal's new session was admitted; when not, how long until one may be (seconds). */
export type Admission = { admitted: true } | { admitted: false; retryAfterSeconds: number };

/**
 * Per-principal limits on 2025-era sessions, counted across instances (./principal-counters.ts says
 * how, and what it costs).
 */
export interface PrincipalCounters {
  /** Counts one `initialize` in the window starting at `windowStart` (epoch s); false when `limit` were already counted there. */
  countInitialize(principal: string, windowStart: number, windowSeconds: number, limit: number): Promise<boolean>;
  /** Admits one more live session expiring at `expiresAt`, unless `max` of the principal's sessions are live. */
  admitSession(
    principal: string,
    expiresAt: number,
    limits: { max: number; bucketSeconds: number },
    now?: number,
  ): Promise<Admission>;
  /** A live session expiring at `expiresAt` ended (DELETE, or its creation failed after admission). */
  releaseSession(principal: string, expiresAt: number, bucketSeconds: number): Promise<void>;
}

export interface SessionStore extends PrincipalCounters {
  createSession(session: SessionRecord): Promise<void>;
  /**
   * One read: the session with its target sessions; undefined when absent or expired. It does not
   * grow with the number of pending records (they sort before the session item).
   */
  loadSession(
    sessionId: string,
    now?: number,
    options?: { includeExpired?: boolean },
  ): Promise<LoadedSession | undefined>;
  /** One read: the session and one pending record (absent or expired → undefined). */
  loadForAnswer(sessionId: string, gatewayId: string, now?: number): Promise<LoadedAnswer | undefined>;
  putTargetSession(session: SessionRecord, target: TargetSessionRecord): Promise<void>;
  setLogLevel(session: SessionRecord, level: string): Promise<void>;
  /** Removes the session and everything in its partition. */
  deleteSession(sessionId: string): Promise<void>;
  /** Writes a new pending record into the partition of `session` (a session, or a bridged call's own). */
  putPending(session: Pick<SessionRecord, 'id'>, pending: PendingRecord): Promise<void>;
  /**
   * Live pending records of the partition (the per-session cap), up to `limit`: only a call that
   * relays something pays for this read.
   */
  countPending(sessionId: string, limit: number, now?: number): Promise<number>;
  /**
   * Claims a pending request for delivery (pending → delivering), exactly once: the claim token, or
   * undefined when absent, expired, answered, claimed by a live delivery, or its holder's lease ran out.
   */
  claimPending(sessionId: string, gatewayId: string, now?: number): Promise<string | undefined>;
  /** The target took the answer: delivering → answered (only by the claim's owner). */
  settleClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean>;
  /** The delivery provably did not reach the target: delivering → pending, so the client may send the answer again. */
  releaseClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean>;
  /**
   * The holder stops waiting: pending (or a delivery claim older than the lease) → expired. False
   * when the answer was taken meanwhile (answered, or a live delivery in flight) or the record is gone.
   */
  expirePending(sessionId: string, gatewayId: string): Promise<boolean>;
  /** The holder is alive: extends the lease of its waiting records (see PendingRecord.holderUntil). */
  renewHolder(sessionId: string, gatewayIds: string[], until: number): Promise<void>;
  deletePending(sessionId: string, gatewayIds: string[]): Promise<void>;
  /** One pending request, read consistently (the invocation waiting for a gateway-authored request polls it). */
  getPending(sessionId: string, gatewayId: string, now?: number): Promise<PendingRecord | undefined>;
  /**
   * The client cancelled a call that another instance may hold: a marker that instance finds (the
   * call's upstream id), expiring with `expiresAt`.
   */
  markCancelled(sessionId: string, upstreamId: string, expiresAt: number, reason?: CallEndReason): Promise<void>;
  /** Whether the call was ended elsewhere, and why (a consistent read). */
  isCancelled(sessionId: string, upstreamId: string): Promise<CallEndReason | undefined>;
  /** Stores the answer to a gateway-authored request and marks it answered, exactly once; false when absent, expired or answered. */
  answerPending(sessionId: string, gatewayId: string, answer: string, now?: number): Promise<boolean>;
}

/**
 * The pending-record operations alone: what a bridged 2026-07-28 call needs. Its records live in a
 * partition of their own (keyed like a session, with no session item), never in a client's session.
 */
export type PendingStore = Pick<
  SessionStore,
  | 'putPending'
  | 'claimPending'
  | 'settleClaim'
  | 'releaseClaim'
  | 'expirePending'
  | 'renewHolder'
  | 'getPending'
  | 'answerPending'
  | 'deletePending'
>;
