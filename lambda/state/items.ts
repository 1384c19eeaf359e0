import { DYNAMODB_ITEM_LIMIT_BYTES, ItemTooLargeError } from '../protocol/errors';
import type { LegacyClientCapabilities as ClientCapabilities, Implementation, RequestId } from '../protocol/types';
import type {
  CallEndMarker,
  PendingKind,
  PendingRecord,
  PendingStatus,
  SessionRecord,
  StreamEventRecord,
  TargetSessionRecord,
  WaitingCallRecord,
} from './store';

/**
 * The table's item layout and the parsing of its items into records, once for both stores (the
 * DynamoDB one and the tests' in-memory one).
 *
 * One partition per session, `S#<session id>` (a bridged 2026-07-28 call's pending records use one of
 * their own, keyed alike); the per-principal counters live in `U#<hash>` partitions
 * (./principal-counters.ts), clients seen resuming in `K#<hash>` ones. Sort keys within a session's partition:
 * - `SESSION`: the session; `T#<target>`: one target session each (both at or after `S`, so the
 *   per-request Query `sk >= 'S'` reads exactly these);
 * - `P#<gateway id>`: a pending server-to-client request; `C#<target call id>`: a call ended elsewhere
 *   (`reason`, `expiresAt`);
 * - `G#stream`: the session's one client GET stream (`token`, `untilMs`, `expiresAt`); `R#<stream id>`:
 *   a waiting call;
 * - `E#<stream id>#<seq, 10 digits>`: an event of a resumable stream, in seq order (seq 0: the stream's
 *   head, with the request it answers, kept as long as the session).
 * Everything but the session and its target sessions sorts before `S`, so loading a session never
 * grows with them — except a load `withPending` (a request that may relay something), which starts
 * at `P#` to count the pending records (the waiting calls come with it).
 *
 * Times: every `expiresAt` is epoch seconds (the table's TTL attribute); leases (`untilMs`,
 * `holderUntil`, `claimedAt`) are epoch milliseconds. Attributes keep their stored names: items in
 * deployed tables must still parse.
 */

/** An item as the document client reads and writes it. */
export type Item = Record<string, unknown>;

export const sessionPk = (sessionId: string) => `S#${sessionId}`;
export const SESSION_SK = 'SESSION';
export const TARGET_PREFIX = 'T#';
export const targetSk = (target: string) => `${TARGET_PREFIX}${target}`;
export const PENDING_PREFIX = 'P#';
export const pendingSk = (gatewayId: string) => `${PENDING_PREFIX}${gatewayId}`;
export const cancelledSk = (targetCallId: string) => `C#${targetCallId}`;
/** The session's client GET stream (sorts before 'S': a session's load does not read it). */
export const CLIENT_STREAM_SK = 'G#stream';
/** A waiting call's record: `R` sorts before the session item, so the per-request Query never reads it. */
export const waitingCallSk = (streamId: string) => `R#${streamId}`;
/** The sort-key prefix of one stream's events. */
export const streamPrefix = (streamId: string) => `E#${streamId}#`;
/** Stream events sort before `S` (the session Query never reads them), in seq order within a stream. */
export const eventSk = (streamId: string, seq: number) => `${streamPrefix(streamId)}${String(seq).padStart(10, '0')}`;
/** Sorts after every seq of a stream (digits sort before `~`). */
export const streamEndSk = (streamId: string) => `${streamPrefix(streamId)}~`;
/** Everything at or after 'S' in a partition: the session item and its target sessions (`C#`, `P#` sort before). */
export const SESSION_AND_TARGETS = 'S';

/**
 * A client seen resuming an ended POST stream (legacy/release-policy.ts): one partition per principal
 * and clientInfo (`K#<hash>`), one item, expiring by itself.
 */
export const resumeProofPk = (key: string) => `K#${key}`;
export const RESUME_PROOF_SK = 'PROOF';

/**
 * Refuses an item over DynamoDB's limit before sending it (its JSON size, a slight over-estimate of
 * DynamoDB's own measure), so the client learns which limit it hit instead of a retryable 503.
 */
export function checkSize(what: string, item: unknown): void {
  const bytes = Buffer.byteLength(JSON.stringify(item));
  if (bytes > DYNAMODB_ITEM_LIMIT_BYTES) throw new ItemTooLargeError(what, bytes);
}

/**
 * A stored item that is not the record its key says: written by something else, or damaged. Never
 * turned into a wrong record (a request using it fails instead, as an internal error).
 */
export class MalformedItemError extends Error {
  constructor(record: string, field: string, expected: string, value: unknown) {
    super(`malformed ${record} item: ${field} should be ${expected}, found ${describe(value)}`);
    this.name = 'MalformedItemError';
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** Reads the fields of one item, each checked once, naming the record and the field when one is wrong. */
class Fields {
  constructor(
    private readonly item: Item,
    private readonly record: string,
  ) {}

  private get(field: string, expected: string, ok: (value: unknown) => boolean, optional: boolean): unknown {
    const value = this.item[field];
    if ((optional && value === undefined) || ok(value)) return value;
    throw new MalformedItemError(this.record, field, expected, value);
  }

  string(field: string): string {
    return this.get(field, 'a string', (v) => typeof v === 'string', false) as string;
  }
  optionalString(field: string): string | undefined {
    return this.get(field, 'a string', (v) => typeof v === 'string', true) as string | undefined;
  }
  number(field: string): number {
    return this.get(field, 'a number', isNumber, false) as number;
  }
  optionalNumber(field: string): number | undefined {
    return this.get(field, 'a number', isNumber, true) as number | undefined;
  }
  optionalBoolean(field: string): boolean | undefined {
    return this.get(field, 'a boolean', (v) => typeof v === 'boolean', true) as boolean | undefined;
  }
  object<T>(field: string): T {
    return this.get(field, 'an object', isObject, false) as T;
  }
  optionalObject<T>(field: string): T | undefined {
    return this.get(field, 'an object', isObject, true) as T | undefined;
  }
  requestId(field: string): RequestId {
    return this.get(field, 'a string or a number', isRequestId, false) as RequestId;
  }
  optionalRequestId(field: string): RequestId | undefined {
    return this.get(field, 'a string or a number', isRequestId, true) as RequestId | undefined;
  }
  oneOf<T extends string>(field: string, values: readonly T[]): T {
    return this.get(field, `one of ${values.join(', ')}`, (v) => values.includes(v as T), false) as T;
  }
}

const isNumber = (value: unknown) => typeof value === 'number' && Number.isFinite(value);
const isRequestId = (value: unknown) => typeof value === 'string' || isNumber(value);
const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every field of a record named (a field added to the type and not parsed here does not compile). */
type AllFieldsOf<T> = { [K in keyof Required<T>]: T[K] };

/** The record with its absent optional fields left out (as the document client stores it: no `undefined`). */
function defined<T extends object>(record: T): T {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as T;
}

const PENDING_KINDS: readonly PendingKind[] = ['relayed', 'question'];
const PENDING_STATUSES: readonly PendingStatus[] = ['pending', 'delivering', 'recorded', 'answered', 'expired'];
const WAITING_CALL_STATES: readonly WaitingCallRecord['state'][] = ['held', 'released'];

/** The `SESSION` item. */
export function sessionOf(item: Item): SessionRecord {
  const f = new Fields(item, 'session');
  return defined({
    id: f.string('id'),
    principal: f.string('principal'),
    protocolVersion: f.string('protocolVersion'),
    clientCapabilities: f.object<ClientCapabilities>('clientCapabilities'),
    clientInfo: f.optionalObject<Implementation>('clientInfo'),
    logLevel: f.optionalString('logLevel'),
    clientResumes: f.optionalBoolean('clientResumes'),
    createdAt: f.number('createdAt'),
    expiresAt: f.number('expiresAt'),
  } satisfies AllFieldsOf<SessionRecord>);
}

/**
 * The attributes the session read takes (`loadSession`): the session item's and its target sessions',
 * plus `expiresAt` of the pending records it counts; a pending record's answer (up to ~400 KB) is never
 * transferred by a call's read. Typed so that a field added to either record and not here fails to compile.
 */
const SESSION_FIELDS = [
  'id',
  'principal',
  'protocolVersion',
  'clientCapabilities',
  'clientInfo',
  'logLevel',
  'clientResumes',
  'createdAt',
  'expiresAt',
] as const satisfies readonly (keyof SessionRecord)[];
const TARGET_SESSION_FIELDS = [
  'target',
  'targetSessionId',
  'protocolVersion',
  'declaredCapabilities',
  'serverCapabilities',
  'lastEventId',
  'expiresAt',
] as const satisfies readonly (keyof TargetSessionRecord)[];
type Covers<T, Listed> = Exclude<keyof T, Listed> extends never ? true : never;
const sessionFieldsCovered: Covers<SessionRecord, (typeof SESSION_FIELDS)[number]> = true;
const targetFieldsCovered: Covers<TargetSessionRecord, (typeof TARGET_SESSION_FIELDS)[number]> = true;
void sessionFieldsCovered;
void targetFieldsCovered;

/** `ProjectionExpression` and its names for the session read (see SESSION_FIELDS). */
export const SESSION_READ_PROJECTION = (() => {
  const names = [...new Set(['sk', ...SESSION_FIELDS, ...TARGET_SESSION_FIELDS])];
  return {
    expression: names.map((_, i) => `#p${i}`).join(', '),
    names: Object.fromEntries(names.map((name, i) => [`#p${i}`, name])),
  };
})();

/** A `T#<target>` item. */
export function targetSessionOf(item: Item): TargetSessionRecord {
  const f = new Fields(item, 'target session');
  return defined({
    target: f.string('target'),
    targetSessionId: f.optionalString('targetSessionId'),
    protocolVersion: f.string('protocolVersion'),
    declaredCapabilities: f.object<ClientCapabilities>('declaredCapabilities'),
    serverCapabilities: f.optionalObject<Record<string, unknown>>('serverCapabilities'),
    lastEventId: f.optionalString('lastEventId'),
    expiresAt: f.optionalNumber('expiresAt'),
  } satisfies AllFieldsOf<TargetSessionRecord>);
}

/** A `P#<gateway id>` item. */
export function pendingOf(item: Item): PendingRecord {
  const f = new Fields(item, 'pending');
  return defined({
    gatewayId: f.string('gatewayId'),
    // `held`: what records of the gateway's own questions were called before; one may span a deployment.
    kind: item.kind === 'held' ? 'question' : f.oneOf('kind', PENDING_KINDS),
    method: f.string('method'),
    target: f.string('target'),
    targetSessionId: f.optionalString('targetSessionId'),
    targetRequestId: f.requestId('targetRequestId'),
    targetProtocolVersion: f.optionalString('targetProtocolVersion'),
    clientRequestId: f.requestId('clientRequestId'),
    status: f.oneOf('status', PENDING_STATUSES),
    createdAt: f.number('createdAt'),
    expiresAt: f.number('expiresAt'),
    answer: f.optionalString('answer'),
    claim: f.optionalString('claim'),
    claimedAt: f.optionalNumber('claimedAt'),
    holderUntil: f.optionalNumber('holderUntil'),
    ack: f.optionalString('ack'),
    principal: f.optionalString('principal'),
    sessionExpiresAt: f.optionalNumber('sessionExpiresAt'),
  } satisfies AllFieldsOf<PendingRecord>);
}

/** An `E#<stream id>#<seq>` item. */
export function streamEventOf(item: Item): StreamEventRecord {
  const f = new Fields(item, 'stream event');
  return defined({
    streamId: f.string('streamId'),
    seq: f.number('seq'),
    data: f.string('data'),
    end: f.optionalBoolean('end'),
    requestId: f.optionalRequestId('requestId'),
    ended: f.optionalBoolean('ended'),
    expiresAt: f.number('expiresAt'),
  } satisfies AllFieldsOf<StreamEventRecord>);
}

/** An `R#<stream id>` item. */
export function waitingCallOf(item: Item): WaitingCallRecord {
  const f = new Fields(item, 'waiting call');
  return defined({
    streamId: f.string('streamId'),
    version: f.number('version'),
    state: f.oneOf('state', WAITING_CALL_STATES),
    holder: f.optionalString('holder'),
    holderUntil: f.optionalNumber('holderUntil'),
    seq: f.number('seq'),
    snapshot: f.string('snapshot'),
    expiresAt: f.number('expiresAt'),
  } satisfies AllFieldsOf<WaitingCallRecord>);
}

/**
 * A call marker's reason. Markers written before the reasons took the relay's names read
 * `answer-undeliverable` / `cancelled`; a marker lives minutes, but one may span a deployment.
 */
export function endMarker(reason: unknown): CallEndMarker {
  return reason === 'answer-lost' || reason === 'answer-undeliverable' ? 'answer-lost' : 'client-cancelled';
}
