import type { CallerIdentity } from '../auth/identity';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type {
  JSONRPCNotification,
  JSONRPCRequest,
  LegacyClientCapabilities,
  ModernClientCapabilities,
  RequestId,
} from '../protocol/types';
import type { Era } from '../protocol/versions';
import type { LegacySession } from './legacy-client';
import type { StreamCursor } from './sse-reader';

/**
 * One target as one caller sees it: the interface both era paths use. Which era is spoken to the
 * target, and the translation when it differs from the caller's, are this layer's business.
 */

/** A legacy target session as a caller keeps it (the gateway session's partition in DynamoDB, or memory). */
export interface StoredTargetSession extends LegacySession {
  /** The capabilities the gateway declared to the target for this session. */
  declaredCapabilities: LegacyClientCapabilities;
  /** What the target declared in its InitializeResult (kept in memory only). */
  serverCapabilities?: Record<string, unknown>;
}

/** Where one caller's legacy target sessions live. */
export interface TargetSessionSlots {
  /**
   * The same for every request of one caller on this instance (a 2025 session; a 2026-07-28
   * principal and capability set): parallel requests that find no session share one `initialize`.
   */
  readonly scope: string;
  get(target: string): StoredTargetSession | undefined;
  /**
   * Keeps a session just opened; returns the one to use: this one, or one another instance kept first
   * (the caller then ends its own). `checkedOut`: opened by a call that holds it (see `checkout`).
   */
  save(target: string, session: StoredTargetSession, options?: { checkedOut?: boolean }): Promise<StoredTargetSession>;
  /** The target forgot the session (404): the next call opens a new one. */
  forget(target: string, session: StoredTargetSession): void;
  /**
   * Settles when a new target session may be opened: at once, except for a 2025 call started before its
   * session's read returned (read-ahead), which waits for that read and rejects if the session is gone,
   * so that a deleted session leaves nothing open at a target and nothing stored in its partition.
   */
  ready?(): Promise<void>;
  /**
   * Slots shared by callers that are not one client (the 2026-07-28 pool): a call that listens on the
   * session's GET stream takes a session no other such call holds (undefined: it opens its own) and
   * gives it back with `checkin`. A GET-stream request names no call, so this is what keeps one
   * client's questions from reaching another. Absent: the caller is one client (a 2025 session).
   */
  checkout?(target: string): StoredTargetSession | undefined;
  checkin?(target: string, session: StoredTargetSession): void;
}

/** Who is calling, as far as the target must know. */
export interface Caller {
  /** Who is calling (what policy decides on; never sent to a target). */
  identity: CallerIdentity;
  era: Era;
  /** The caller's negotiated (2025) or declared (2026) protocol version. */
  protocolVersion: string;
  /** What the client declared (2025: at initialize; 2026: in this request's `_meta`). */
  capabilities: LegacyClientCapabilities | ModernClientCapabilities;
  /**
   * Whether what a target asks during a call can reach the user (2025 requests that accept
   * `text/event-stream`, 2026 requests always): otherwise nothing is declared to a target of the other era.
   */
  inputCapable: boolean;
  /** The level the client asked for (2025: logging/setLevel; 2026: `_meta`). */
  logLevel?: string;
  sessions: TargetSessionSlots;
}

export interface TargetCallOptions {
  signal: AbortSignal;
  /** A request the target sends during the call (legacy targets), with the target's own id. */
  onServerRequest?(request: JSONRPCRequest): void;
  onNotification?(notification: JSONRPCNotification): void;
  /** A promise while the caller's client cannot take more: the target's stream is not read meanwhile. */
  backpressure?(): Promise<void> | undefined;
  /** The token the target sees (already the gateway's own), if the client asked for progress. */
  progressToken?: string;
  /** Headers forwarded untouched to a modern target (the client's `Mcp-Param-*`). */
  headers?: Record<string, string>;
  /**
   * Legacy targets: where the call's stream stands (its last event id and `retry`), filled as it is
   * read; with an id the call can be released (`detach`) and resumed (`resumeFrom`) on any instance.
   */
  cursor?: StreamCursor;
  /** Legacy targets: stop reading without cancelling; the call rejects with a StreamDetachedError. */
  detach?: AbortSignal;
  /**
   * Legacy targets: the target ended the call's stream before its response, after an event id (it
   * polls, SEP-1699); the gateway reconnects after its `retry` unless the caller detaches first.
   */
  onTargetPolls?(): void | Promise<void>;
  /** Legacy targets: go on with a call released earlier, from its last event id, in its target session. */
  resumeFrom?: { lastEventId: string; targetSessionId?: string };
}

export interface TargetCallRequest {
  /** The id the target sees (legacy targets; derived ids let a cancellation reach it from any instance). */
  id?: RequestId;
  method: string;
  params: Record<string, unknown>;
}

export interface TargetLink {
  readonly target: string;
  /** The era spoken to the target for this caller (may change once: a refused legacy handshake). */
  readonly era: Era;
  /**
   * Sends one request and returns the target's response (its id is the request's). Aborting
   * `signal` cancels the call at the target (legacy: notifications/cancelled with the abort reason
   * when it is a string; modern: closing the request).
   */
  call(request: TargetCallRequest, options: TargetCallOptions): Promise<JSONRPCResponse>;
  /** Answers a request the target sent during a call on this link (legacy targets). */
  reply(message: JSONRPCResponse): Promise<void>;
  /** A client notification for the target (legacy targets; 2026-07-28 has none over HTTP). */
  notify(notification: JSONRPCNotification, signal?: AbortSignal): Promise<void>;
  /** The legacy target session in use, once there is one. */
  readonly session?: LegacySession;
  /** What a legacy target declared at initialize (opening the caller's session if needed); undefined for modern targets. */
  serverCapabilities(signal?: AbortSignal): Promise<Record<string, unknown> | undefined>;
}
