import { createHash } from 'node:crypto';
import type { ClientPattern } from '../config/resuming-clients';
import type { GatewayConfig, StreamReleaseMode } from '../config/schema';
import type { Implementation } from '../protocol/types';
import { hasStreamPolling } from '../protocol/versions';
import type { SessionRecord } from '../state/store';
import type { CarriedRelease, ReleaseDecision } from './waiting-call';

/**
 * Which waiting calls of a 2025-11-25 session are released (legacy/waiting-call.ts), and when.
 *
 * Ending a call's POST stream with `retry` saves the invocation that would hold it while a person
 * thinks, but only a client that reconnects with `GET` + `Last-Event-ID` gets its result then. Many
 * never reconnect a POST stream the server ended (VS Code resumes only its GET stream; the Java SDK
 * takes a `retry` field for a parse error; the Swift SDK, Zed, raw HTTP clients), and a plain SSE
 * parser (`sseclient-py`, the WHATWG rules) dispatches a priming event's empty `data` as an event
 * whose JSON does not parse. `clientInfo.name` names the application, not its SDK, so the only
 * evidence that a client resumes is having seen it do so, or the operator saying so
 * (`streamReleaseClients`). Hence, per call:
 * - a client trusted to resume gets today's resumable stream: a priming event first, and its wait
 *   released after `streamReleaseAfterSeconds`;
 * - any other client's call is held on its open stream, with nothing on it a plain parser chokes on
 *   (no priming event, no `retry`), and released only just before the invocation's deadline, when the
 *   stream would be cut anyway: a client that resumes then gets its result, and is proven from then on.
 */

/** The operator's settings (config `streamRelease*`). */
export interface ReleasePolicy {
  mode: StreamReleaseMode;
  /** How long a trusted client's waiting call stays held before it is released: an answer within it pays no reconnect. */
  afterMs: number;
  /** The `retry` given to the client when its stream is released. */
  retryMs: number;
  /** `clientInfo.name`s whose streams are never released (clients that do not reconnect). */
  excludeClients: string[];
  /** Clients trusted to resume (`streamReleaseClients`). */
  resumingClients: ClientPattern[];
  /** How long a client seen resuming stays proven for the same principal's later sessions. */
  proofSeconds: number;
}

export function releasePolicy(config: GatewayConfig): ReleasePolicy {
  return {
    mode: config.streamRelease,
    afterMs: config.streamReleaseAfterSeconds * 1000,
    retryMs: config.streamReleaseRetryMs,
    excludeClients: config.streamReleaseExcludeClients,
    resumingClients: config.streamReleaseClients,
    proofSeconds: config.streamReleaseProofDays * 86_400,
  };
}

/** What one call's stream does, decided once when the call starts. */
export type { ReleaseDecision };

const HELD: ReleaseDecision = { prime: false, early: false, atDeadline: false };

type SessionFacts = Pick<SessionRecord, 'protocolVersion' | 'clientInfo' | 'clientResumes'>;

export function decideRelease(policy: ReleasePolicy, session: SessionFacts): ReleaseDecision {
  if (!hasStreamPolling(session.protocolVersion)) return HELD;
  const name = session.clientInfo?.name;
  if (name !== undefined && policy.excludeClients.includes(name)) return HELD;
  const trusted = policy.mode === 'always' || session.clientResumes === true || allowlisted(policy, session.clientInfo);
  // Under `never` nothing is released, but a client that resumes still gets the priming event: its
  // reconnect after a dropped connection then has an id from the start.
  if (policy.mode === 'never') return { ...HELD, prime: trusted };
  return { prime: trusted, early: trusted, atDeadline: true };
}

/** Whether a session's client must be looked up among the clients seen resuming (at initialize). */
/**
 * The decision a call carries (legacy/waiting-call.ts `CarriedRelease`): for now, and for once its
 * client has resumed (what a takeover, which is a reconnect, goes on with).
 */
export function decideCarriedRelease(policy: ReleasePolicy, session: SessionFacts): CarriedRelease {
  return {
    now: decideRelease(policy, session),
    onceResumed: decideRelease(policy, { ...session, clientResumes: true }),
  };
}

export function needsResumeProof(policy: ReleasePolicy, session: SessionFacts): boolean {
  if (policy.mode !== 'proven' || session.clientInfo === undefined) return false;
  const decision = decideRelease(policy, session);
  return decision.atDeadline && !decision.early;
}

export function allowlisted(policy: Pick<ReleasePolicy, 'resumingClients'>, info: Implementation | undefined): boolean {
  return info !== undefined && policy.resumingClients.some((pattern) => matchesClient(pattern, info));
}

export function matchesClient(pattern: ClientPattern, info: Pick<Implementation, 'name' | 'version'>): boolean {
  if (!globMatches(pattern.name, info.name)) return false;
  if (pattern.version === undefined) return true;
  if (pattern.version.startsWith('>=')) return atLeast(info.version, pattern.version.slice(2));
  return globMatches(pattern.version, info.version);
}

function globMatches(pattern: string, value: string): boolean {
  if (!pattern.includes('*')) return pattern === value;
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`).test(value);
}

/**
 * `version >= minimum`, comparing dotted numbers; a version with anything after its numbers (a
 * pre-release, a build tag) or none at all is not known to be at least anything.
 */
function atLeast(version: string, minimum: string): boolean {
  if (!/^\d+(\.\d+)*$/.test(version)) return false;
  const have = version.split('.').map(Number);
  const want = minimum.split('.').map(Number);
  for (let i = 0; i < Math.max(have.length, want.length); i++) {
    const a = have[i] ?? 0;
    const b = want[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

/**
 * The key of the record that a client resumed (`K#<key>`): per principal and `clientInfo`, hashed so
 * that neither appears in a key. A client's resumption says nothing of another principal's client
 * that sends the same `clientInfo`.
 */
export function resumeProofKey(principal: string, info: Pick<Implementation, 'name' | 'version'>): string {
  return createHash('sha256').update(`${principal}\n${info.name}\n${info.version}`).digest('base64url');
}
