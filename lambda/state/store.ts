import type { LegacyClientCapabilities as ClientCapabilities, Implementation, RequestId } from '../protocol/types';

export { StoreUnavailableError } from '../protocol/errors';

/**
 * The narrow state interface of the 2025-era (stateful) path. One partition per gateway session:
 * the session itself, one item per target session, one per pending server-to-client request.
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
  /**
   * The client resumed an ended POST stream with `Last-Event-ID` (in this session, or in an earlier
   * one of the same principal and clientInfo): its waiting calls may be released (legacy/release-policy.ts).
   */
  clientResumes?: boolean;
  /** Epoch seconds. */
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
  /**
   * What the target declared at initialize (absent on records written before it was kept): whether a
   * call listens on the session's GET stream for what the target sends there follows from it.
   */
  serverCapabilities?: Record<string, unknown>;
  /**
   * The last event id the target gave on this session's GET stream when the client's GET stream
   * last let go of it: the next one (on any instance) resumes with it, so a target with an event
   * store replays what it sent in between.
   */
  lastEventId?: string;
  /**
   * Epoch seconds: the gateway session's expiry, which the store writes on the item as its TTL
   * attribute. Present on what `loadSession` reads; callers never set it.
   */
  expiresAt?: number;
}

/**
 * `pending` → `delivering` (claimed by the instance that took the client's answer, with a token) →
 * `answered` once the target took it; back to `pending` when the delivery provably failed (released,
 * so the client's retry of the answer is accepted). `expired`: the holder gave up waiting.
 * Claim, deliver, settle — or release (lambda/README.md, "The relay").
 * `recorded`: a relayed request whose call a live holder holds got its answer (kept in `answer`); the
 * holder delivers it to the target itself and never writes the record again (it knows the outcome).
 */
export type PendingStatus = 'pending' | 'delivering' | 'recorded' | 'answered' | 'expired';

/**
 * `relayed`: a target's request, forwarded to the client; the answer goes to the target (from any
 * instance). `held`: a request the gateway itself asks and waits for (a confirmation, or a 2026-07-28
 * target's input round for a 2025 session); the answer is stored in the record for the waiting invocation.
 */
export type PendingKind = 'relayed' | 'question';

/**
 * Two time units side by side, kept as stored (renaming an attribute would leave the items of deployed
 * tables unreadable): `createdAt` and `expiresAt` are epoch SECONDS (`expiresAt` is the TTL attribute,
 * compared with `now` in seconds); `claimedAt` and `holderUntil` are epoch MILLISECONDS (leases,
 * compared with the gateway's clock in ms).
 */
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
  /** Epoch seconds. */
  createdAt: number;
  /** Epoch seconds; also the TTL attribute. Reads ignore an expired record. */
  expiresAt: number;
  /** The client's answer as JSON: a held request's (answerPending), or a held call's relayed request's (recordAnswer). */
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
  /**
   * The holder saw the claim `claim` and is alive to receive what the target does next (it acknowledges
   * each claim it sees): the claimant delivers only then, so no answer reaches a target whose call has
   * no live receiver.
   */
  ack?: string;
  /**
   * The principal of the session whose call created the record, and that session's expiry (epoch
   * seconds), on the records of a session's calls: an answer POST records its answer for the holder
   * with one conditional write on them, without reading the session first (`recordAnswer` with
   * `principal`). Absent on records written before they were kept, and on a bridged call's.
   */
  principal?: string;
  sessionExpiresAt?: number;
}

/**
 * What recording an answer did: written (true), refused (false), or refused on the SDK's retry of an
 * attempt whose reply was lost (`'retried'`: that attempt may have been applied, and the record gone on).
 */
export type RecordOutcome = boolean | 'retried';

/**
 * What a conditional write of a pending record did (`expirePending`, `answerPending`): written, or
 * refused, with the record as it stood then, even past its TTL (undefined: there was none). DynamoDB
 * returns that record with the refusal itself (`ReturnValuesOnConditionCheckFailure: ALL_OLD`), so
 * learning why costs no second request.
 */
export type PendingWriteOutcome = { written: true } | { written: false; current: PendingRecord | undefined };

/** What a request of a session reads: the session and its target sessions (never its pending records). */
export interface LoadedSession {
  session: SessionRecord;
  targets: Map<string, TargetSessionRecord>;
  /**
   * Loaded `withPending`: the live pending records of the session at that read (the per-session cap
   * of a call that relays something, a soft bound: stale by the call's duration).
   */
  pendingCount?: number;
}

/** What an answer POST reads: the session and the one pending record it answers (one request). */
export interface LoadedAnswer {
  session: SessionRecord;
  pending?: PendingRecord;
}

/**
 * One event of a resumable SSE stream (http/sse.ts), kept in the session's partition before it is
 * sent, so a client's reconnect (`GET` + `Last-Event-ID`) can be answered by any instance.
 */
export interface StreamEventRecord {
  /** The stream within the session (random; the first part of the event id). */
  streamId: string;
  /** 0 = the priming event, then the order sent. */
  seq: number;
  /** The JSON-RPC message as sent; '' for the priming event and for an end without a final message. */
  data: string;
  /** The stream's last event: it ended here (with `data` as its final message, if any). */
  end?: boolean;
  /**
   * On the stream's head (seq 0, kept as long as the session, never sent unless it is the priming
   * event): the client's request the stream answers, so a reconnect after the rest expired gets a
   * JSON-RPC error for that request rather than a stream that never ends.
   */
  requestId?: RequestId;
  /** On the stream's head: the stream ended (what is left of it after its end expired is the head). */
  ended?: boolean;
  /** Epoch seconds; also the TTL attribute. Reads ignore expired events. */
  expiresAt: number;
}

/**
 * A call of a 2025 session whose stream may be released while it waits (legacy/waiting-call.ts): where
 * it stands, kept in the session's partition (`R#<streamId>`, sorting before the session item, so
 * the per-request Query never reads it) so that the client's reconnect, on any instance, can go on
 * with it. `held`: an invocation holds it (lease `holderUntil`, epoch ms, renewed while it waits);
 * `released`: no invocation does (the client's stream was ended with a `retry`). Every change is a
 * conditional write on `version`, so exactly one instance takes a released (or orphaned) call over.
 * Two time units side by side, kept as stored: `holderUntil` is epoch MILLISECONDS, `expiresAt` epoch SECONDS.
 */
export interface WaitingCallRecord {
  /** The client's stream this call answers on (its event ids name it). */
  streamId: string;
  version: number;
  state: 'held' | 'released';
  /** While `held`: the holder's token and lease (epoch ms). */
  holder?: string;
  holderUntil?: number;
  /** The last seq written to the client's stream when the record was last written. */
  seq: number;
  /** Where the call stands, as JSON (its shape is the relay's business: legacy/waiting-call.ts). */
  snapshot: string;
  /** Epoch seconds; also the TTL attribute. */
  expiresAt: number;
}

/** Why a relayed call ended before its result: the relay's stop reasons (legacy/call-relay.ts). */
export type CallEndReason =
  | 'client-gone'
  | 'client-cancelled'
  | 'deadline'
  | 'pending-timeout'
  | 'answer-lost'
  | 'shutdown';

/**
 * The end reasons another instance causes, by writing the call's marker: the client cancelled the call
 * (its `notifications/cancelled` reached another instance), or the target refused an answer to it.
 */
export type CallEndMarker = Extract<CallEndReason, 'client-cancelled' | 'answer-lost'>;

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
  /**
   * Admits one more bridged 2026-07-28 call waiting for input, whose holder lives until `expiresAt`
   * (its invocation's deadline), unless `max` of the principal's are live: counted as sessions are, in
   * buckets of their own.
   */
  admitBridgedCall(
    principal: string,
    expiresAt: number,
    limits: { max: number; bucketSeconds: number },
    now?: number,
  ): Promise<Admission>;
  /** A bridged call admitted with `expiresAt` ended (result, failure, abandoned round, shutdown). */
  releaseBridgedCall(principal: string, expiresAt: number, bucketSeconds: number): Promise<void>;
}

/**
 * The session part: a 2025-era session, its target sessions, the markers and the client GET stream
 * in its partition, and what only a session's calls do with its pending records (the cap, detaching).
 */
export interface SessionRecordStore {
  createSession(session: SessionRecord): Promise<void>;
  /**
   * One read: the session with its target sessions; undefined when absent or expired. It does not
   * grow with the number of pending records (they sort before the session item) unless `withPending`:
   * then the same read starts at the pending records (and the waiting calls after them) and counts
   * them (`pendingCount`), for a request that may relay something.
   */
  loadSession(
    sessionId: string,
    now?: number,
    options?: { includeExpired?: boolean; withPending?: boolean },
  ): Promise<LoadedSession | undefined>;
  /** One read: the session and one pending record (absent or expired → undefined). */
  loadForAnswer(sessionId: string, gatewayId: string, now?: number): Promise<LoadedAnswer | undefined>;
  /**
   * Keeps a target session of the session, unless another was kept meanwhile (two instances opening
   * the first at once): written only when there is none, or the one there is `replacing` (the session
   * the target forgot). Returns what is kept now — this record, or the other one (whose opener then
   * ends its own at the target, so none is left open unknown).
   */
  putTargetSession(
    session: SessionRecord,
    target: TargetSessionRecord,
    options?: { replacing?: string },
  ): Promise<TargetSessionRecord>;
  setLogLevel(session: SessionRecord, level: string): Promise<void>;
  /**
   * The session's client resumed an ended POST stream: the session says so (`clientResumes`), and,
   * with `proof`, so does a record of its own (`K#<key>`, expiring at `expiresAt`, epoch seconds) that
   * the same principal's later sessions with the same clientInfo find (`hasResumeProof`).
   */
  markClientResumes(sessionId: string, proof?: { key: string; expiresAt: number }): Promise<void>;
  /** Whether a live record says a client resumed (legacy/release-policy.ts `resumeProofKey`). */
  hasResumeProof(key: string, now?: number): Promise<boolean>;
  /** Removes the session and everything in its partition. */
  deleteSession(sessionId: string): Promise<void>;
  /**
   * Live pending records of the partition (the per-session cap), up to `limit`: only a call that
   * relays something pays for this read.
   */
  countPending(sessionId: string, limit: number, now?: number): Promise<number>;
  /**
   * The holder released its call (legacy/waiting-call.ts): its records no longer need a live holder
   * (the lease is removed), so an answer is taken and delivered without one.
   */
  detachHolder(sessionId: string, gatewayIds: string[]): Promise<void>;
  /**
   * The client cancelled a call that another instance may hold: a marker that instance finds (the
   * call's target call id), expiring with `expiresAt`.
   */
  markCancelled(sessionId: string, targetCallId: string, expiresAt: number, reason?: CallEndMarker): Promise<void>;
  /** Whether the call was ended elsewhere, and why (a consistent read). */
  isCancelled(sessionId: string, targetCallId: string): Promise<CallEndMarker | undefined>;
  /**
   * The session's one client GET stream (`G#stream`): taken when no other is live (its holder's
   * `untilMs` not yet passed), with a token; false when another is. It expires with the session.
   */
  acquireClientStream(session: SessionRecord, token: string, untilMs: number): Promise<boolean>;
  /** Lets go of the client GET stream (only the token's holder; nothing when it is gone). */
  releaseClientStream(sessionId: string, token: string): Promise<void>;
  /**
   * Where the target's GET stream of one target session stopped being read (see
   * TargetSessionRecord.lastEventId); nothing when the record is gone or names another target session.
   */
  saveTargetEventId(sessionId: string, target: string, targetSessionId: string, eventId: string): Promise<void>;
}

/**
 * The pending-record part: what a relayed or held request needs, in a session's partition or a
 * bridged 2026-07-28 call's own (keyed like a session, with no session item, never in a client's
 * session), with the bridged calls' per-principal places.
 */
export interface PendingStore extends Pick<PrincipalCounters, 'admitBridgedCall' | 'releaseBridgedCall'> {
  /** Writes a new pending record into the partition of `session` (a session, or a bridged call's own). */
  putPending(session: Pick<SessionRecord, 'id'>, pending: PendingRecord): Promise<void>;
  /**
   * Claims a pending request for delivery (pending → delivering), exactly once: the claim token, or
   * undefined when absent, expired, answered, claimed by a live delivery, or its holder's lease ran out.
   */
  claimPending(sessionId: string, gatewayId: string, now?: number): Promise<string | undefined>;
  /** The target took the answer: delivering → answered (only by the claim's owner). */
  settleClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean>;
  /** The holder acknowledges a claim it saw (sets `ack` to its token): it is alive; false when the claim changed. */
  ackClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean>;
  /** The delivery provably did not reach the target: delivering → pending, so the client may send the answer again. */
  releaseClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean>;
  /**
   * The holder stops waiting: pending (or a delivery claim older than the lease) → expired. When
   * refused (the answer was taken meanwhile: answered, or a live delivery in flight; or the record is
   * gone or expired already), the record as the refusal found it, even past its TTL — so the holder
   * learns why without reading it again (PendingWriteOutcome).
   */
  expirePending(sessionId: string, gatewayId: string): Promise<PendingWriteOutcome>;
  /** The holder is alive: extends the lease of its waiting records (see PendingRecord.holderUntil). */
  renewHolder(sessionId: string, gatewayIds: string[], until: number): Promise<void>;
  deletePending(sessionId: string, gatewayIds: string[]): Promise<void>;
  /** One pending request, read consistently (the invocation waiting for a gateway-authored request polls it). */
  getPending(sessionId: string, gatewayId: string, now?: number): Promise<PendingRecord | undefined>;
  /**
   * Stores the answer to a gateway-authored request and marks it answered, exactly once; refused when
   * absent, expired or answered (or its holder's lease ran out), with the record as it stood
   * (PendingWriteOutcome: a write whose reply was lost and that the SDK sent again finds its own answer).
   */
  answerPending(
    sessionId: string,
    gatewayId: string,
    answer: string,
    now?: number,
    /** As for recordAnswer: only a question's record of the caller's live session (the POST read nothing). */
    options?: { principal?: string },
  ): Promise<PendingWriteOutcome>;
  /**
   * Keeps the client's answer to a relayed request in its record for the live holder to deliver
   * (pending → recorded), exactly once: false when absent, expired, not pending, or without a live
   * holder lease (no lease: nobody would look for it; delivered directly instead).
   *
   * With `principal` (an answer POST that has not read its session): besides, only a relayed request's
   * record that carries its session's principal — this one — and its session's expiry, not yet passed;
   * false for any other (a question, another principal's, a record without them), which the caller
   * then reads with its session as before. `'retried'`: refused, but on the SDK's retry of a write
   * whose first reply was lost (a timeout): that first attempt may have been applied.
   */
  recordAnswer(
    sessionId: string,
    gatewayId: string,
    answer: string,
    now?: number,
    options?: { principal?: string },
  ): Promise<RecordOutcome>;
}

/** The stream-log part: the events of resumable client streams (legacy/stream-log.ts). */
export interface StreamLogStore {
  /** Keeps one event of a resumable stream (written before the event is sent). */
  putStreamEvent(sessionId: string, event: StreamEventRecord): Promise<void>;
  /**
   * Keeps several events of resumable streams with one request (BatchWriteItem) when they fit one (25
   * items), with new pending records of the session (`pending`: written unconditionally, their ids
   * being 128 random bits; a call's request kept with the event that asks it).
   */
  putStreamEvents(sessionId: string, events: StreamEventRecord[], pending?: PendingRecord[]): Promise<void>;
  /**
   * Ends a stream: writes its end event and removes the events `drop` (their seqs), and the pending
   * records `pending` (gateway ids: the call's, over with it), in one request when they fit one (25
   * items), so after a call only its end is left, until it expires — and its head (`head`, seq 0,
   * written again marked ended), until the session does.
   */
  endStream(
    sessionId: string,
    end: StreamEventRecord,
    drop: number[],
    pending?: string[],
    head?: StreamEventRecord,
  ): Promise<void>;
  /** The live events of a stream from seq `fromSeq` on (inclusive), in order (a consistent read). */
  readStream(sessionId: string, streamId: string, fromSeq: number, now?: number): Promise<StreamEventRecord[]>;
}

/** The waiting-call part: the records of calls whose stream may be released (legacy/waiting-call.ts). */
export interface WaitingCallStore {
  /** A waiting call's record (consistent read); undefined when absent or expired. */
  getWaitingCall(sessionId: string, streamId: string, now?: number): Promise<WaitingCallRecord | undefined>;
  /**
   * Writes a waiting call's record if it is still at `expectedVersion` (undefined: only when there is
   * none); false when another write came first.
   */
  swapWaitingCall(sessionId: string, next: WaitingCallRecord, expectedVersion: number | undefined): Promise<boolean>;
  /**
   * Removes a waiting call's record; with `holder`, only while that holder's token is on it (one
   * conditional delete: a holder that lost the call removes nothing, and reads nothing to find out).
   */
  deleteWaitingCall(sessionId: string, streamId: string, holder?: string): Promise<void>;
}

/**
 * The whole state interface of the 2025-era path, composed of its parts; a module asks for the
 * narrow part it uses.
 */
export interface SessionStore
  extends SessionRecordStore,
    PendingStore,
    StreamLogStore,
    WaitingCallStore,
    PrincipalCounters {}
