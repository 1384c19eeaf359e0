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

export type PendingStatus = 'pending' | 'answered';

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
}

export interface LoadedSession {
  session: SessionRecord;
  targets: Map<string, TargetSessionRecord>;
  pending: Map<string, PendingRecord>;
  /** Upstream ids of calls the client cancelled (markers, removed with the session). */
  cancelled?: Set<string>;
}

export interface SessionStore {
  createSession(session: SessionRecord): Promise<void>;
  /** One read: the session with its target sessions and pending requests; undefined when absent or expired. */
  loadSession(sessionId: string, now?: number): Promise<LoadedSession | undefined>;
  putTargetSession(session: SessionRecord, target: TargetSessionRecord): Promise<void>;
  setLogLevel(session: SessionRecord, level: string): Promise<void>;
  /** Removes the session and everything in its partition. */
  deleteSession(loaded: LoadedSession): Promise<void>;
  /** Writes a new pending record into the partition of `session` (a session, or a bridged call's own). */
  putPending(session: Pick<SessionRecord, 'id'>, pending: PendingRecord): Promise<void>;
  /** Claims a pending request exactly once (pending → answered); false when absent, expired or already claimed. */
  claimPending(sessionId: string, gatewayId: string, now?: number): Promise<boolean>;
  deletePending(sessionId: string, gatewayIds: string[]): Promise<void>;
  /** One pending request, read consistently (the invocation waiting for a gateway-authored request polls it). */
  getPending(sessionId: string, gatewayId: string, now?: number): Promise<PendingRecord | undefined>;
  /**
   * The client cancelled a call that another instance may hold: a marker that instance finds (the
   * call's upstream id), expiring with `expiresAt`.
   */
  markCancelled(sessionId: string, upstreamId: string, expiresAt: number): Promise<void>;
  /** Whether the client cancelled this call (a consistent read). */
  isCancelled(sessionId: string, upstreamId: string): Promise<boolean>;
  /** Stores the answer to a gateway-authored request and marks it answered, exactly once; false when absent, expired or answered. */
  answerPending(sessionId: string, gatewayId: string, answer: string, now?: number): Promise<boolean>;
}

/**
 * The pending-record operations alone: what a bridged 2026-07-28 call needs. Its records live in a
 * partition of their own (keyed like a session, with no session item), never in a client's session.
 */
export type PendingStore = Pick<
  SessionStore,
  'putPending' | 'claimPending' | 'getPending' | 'answerPending' | 'deletePending'
>;
