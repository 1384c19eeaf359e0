import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { InputRequest, RequestId } from '../protocol/types';
import type { PendingRecord, PendingStore } from '../state/store';

/**
 * What the invocation holding a bridged call hands to the client's retry through DynamoDB: the next
 * round's requests, the target's result, or why the call ended. One record per round (kind `question`), filled
 * once; an outcome larger than fits one item (DynamoDB's 400 KB) is stored in parts — `question` records
 * of their own, already answered, written first — and the round's record names how many. Up to
 * `maxBytes` in all; beyond it the round's record says so (OutcomeTooLarge), so the retry is told at
 * once instead of waiting for a record that never fills. The records are kept until they expire, so
 * the same retry sent again is given the same outcome (idempotent by round).
 */

export interface BridgePayload {
  kind: 'input' | 'result' | 'error';
  /** Round k's requests, keyed by gateway id. */
  inputRequests?: Record<string, InputRequest>;
  response?: JSONRPCResponse;
  /** Why the bridged call ended without a result (a gateway failure, told through the error table). */
  failure?: {
    kind: 'RequestTimeout' | 'DependencyFailed' | 'OutcomeTooLarge' | 'MissingCapability';
    message: string;
    /** The error's data (MissingCapability: the `requiredCapabilities` of a request the target made in a later round). */
    data?: unknown;
  };
}

/** The round's record when the outcome is stored in parts. */
interface PartsPointer {
  kind: 'parts';
  /** Which write attempt's parts (a failed attempt may have left some behind: they are not read). */
  attempt: number;
  parts: number;
}

/** Under DynamoDB's 400 KB item limit with the record's other attributes. */
export const OUTCOME_PART_BYTES = 350 * 1024;

export interface OutcomeRecordTemplate {
  target: string;
  clientRequestId: RequestId;
  /** Epoch seconds, on the gateway's clock. */
  createdAt: number;
  expiresAt: number;
}

export type WriteVerdict = 'stored' | 'too-large' | 'not-stored';

/**
 * Fills the round's record `key` with `payload` (in parts when large). 'too-large': over `maxBytes`,
 * the record holds an OutcomeTooLarge failure instead; 'not-stored': the record is gone or expired.
 * Throws when DynamoDB fails (the caller may write again with the next `attempt`).
 */
export async function writeOutcome(
  store: PendingStore,
  bridgeId: string,
  key: string,
  payload: BridgePayload,
  options: { maxBytes: number; attempt: number; template: OutcomeRecordTemplate },
): Promise<WriteVerdict> {
  const json = JSON.stringify(payload);
  const bytes = Buffer.byteLength(json);
  if (bytes > options.maxBytes) {
    const what = payload.kind === 'input' ? 'next input round' : 'result';
    const failure: BridgePayload = {
      kind: 'error',
      failure: {
        kind: 'OutcomeTooLarge',
        message: `the target's ${what} is ${bytes} bytes, more than the ${options.maxBytes} (maxBridgedOutcomeBytes) a bridged call can hand over; the target did act, but its ${what} cannot be returned`,
      },
    };
    return (await fill(store, bridgeId, key, failure)) ? 'too-large' : 'not-stored';
  }
  // One record when it fits as the store measures an answer (its JSON text, escapes included: a result
  // full of quotes or backslashes measures up to twice its size), else parts (measured as they are).
  if (Buffer.byteLength(JSON.stringify(json)) <= OUTCOME_PART_BYTES) {
    return (await fill(store, bridgeId, key, payload)) ? 'stored' : 'not-stored';
  }
  const parts = splitUtf8(json, OUTCOME_PART_BYTES);
  await Promise.all(
    parts.map((part, index) =>
      store.putPending({ id: bridgeId }, partRecord(partKey(key, options.attempt, index), part, options.template)),
    ),
  );
  const pointer: PartsPointer = { kind: 'parts', attempt: options.attempt, parts: parts.length };
  return (await fill(store, bridgeId, key, pointer)) ? 'stored' : 'not-stored';
}

/** The payload of a filled round's record, reading its parts when it was stored in parts. */
export async function readOutcome(
  store: PendingStore,
  bridgeId: string,
  key: string,
  stored: Record<string, unknown>,
): Promise<BridgePayload | undefined> {
  if (stored.kind !== 'parts') return stored as unknown as BridgePayload;
  const pointer = stored as unknown as PartsPointer;
  const records = await Promise.all(
    Array.from({ length: pointer.parts }, (_, index) =>
      store.getPending(bridgeId, partKey(key, pointer.attempt, index)),
    ),
  );
  if (records.some((record) => record?.answer === undefined)) return undefined; // expired meanwhile
  return JSON.parse(records.map((record) => record?.answer).join('')) as BridgePayload;
}

/** The part records of a round (for removal): every attempt's, as far as it could have written. */
export function partKey(key: string, attempt: number, index: number): string {
  return `${key}.a${attempt}.p${index}`;
}

async function fill(store: PendingStore, bridgeId: string, key: string, result: object): Promise<boolean> {
  const answer = JSON.stringify({ jsonrpc: '2.0', id: key, result });
  const outcome = await store.answerPending(bridgeId, key, answer);
  if (outcome.written) return true;
  // A write whose reply was lost (a timeout) and that was sent again may have been applied: then the
  // refusal found it stored (the record as it stood comes with the refusal, past its TTL too).
  const record = outcome.current;
  return record?.status === 'answered' && record.answer === answer;
}

function partRecord(gatewayId: string, answer: string, template: OutcomeRecordTemplate): PendingRecord {
  return {
    gatewayId,
    kind: 'question',
    method: 'bridge/part',
    target: template.target,
    targetRequestId: gatewayId,
    clientRequestId: template.clientRequestId,
    status: 'answered',
    answer,
    createdAt: template.createdAt,
    expiresAt: template.expiresAt,
  };
}

/** `text` cut into pieces of at most `maxBytes` UTF-8 bytes, never inside a character. */
export function splitUtf8(text: string, maxBytes: number): string[] {
  const bytes = Buffer.from(text, 'utf8');
  const parts: string[] = [];
  let start = 0;
  while (start < bytes.length) {
    let end = Math.min(bytes.length, start + maxBytes);
    // Back off continuation bytes (10xxxxxx), so each piece ends on a whole character.
    while (end < bytes.length && end > start && ((bytes[end] as number) & 0xc0) === 0x80) end--;
    parts.push(bytes.subarray(start, end).toString('utf8'));
    start = end;
  }
  return parts;
}
