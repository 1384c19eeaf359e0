import { DYNAMODB_ITEM_LIMIT_BYTES } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import { poll } from '../scheduling/backoff';
import type { Clock } from '../scheduling/clock';
import type { PendingRecord, PendingStore, RecordOutcome } from '../state/store';
import { MessageRejectedError, TargetSessionExpiredError } from '../targets/endpoint';
import type { Targets } from '../targets/targets';

/**
 * The holder delivers: the answer to a relayed request whose call a live instance holds is not sent
 * to the target by the instance that receives it. That instance keeps it in the pending record (one
 * conditional write: pending → recorded, only while the holder's lease runs and the request has not
 * expired) and replies 202; the holder, which looks at its waiting records anyway (pending/holder-ack.ts),
 * finds it and POSTs it to the target itself. So the answer reaches the target only through an
 * instance that is alive to receive what the target does next, with no claim, acknowledgement or
 * settle write, and no instance waiting for another. The holder alone knows the outcome: delivered
 * (the call goes on), refused (a 4xx: it ends the call), not taken (it sends it again until the
 * request's pending timeout). Records without a holder lease (a call that can be taken over, a request
 * on the session's GET stream) keep the direct delivery (pending/answer-delivery.ts).
 */

/** Room left in the 400 KB item for the record's other attributes (its target, ids, leases: well under 4 KB). */
const RECORD_ROOM_BYTES = 4 * 1024;

/**
 * Whether the answer fits its pending record (DynamoDB's item limit). One that does not is delivered
 * by the instance that received it instead (pending/answer-delivery.ts): relayed answers are limited only
 * by the request body's size.
 */
export function fitsARecord(answer: JSONRPCResponse): boolean {
  return Buffer.byteLength(JSON.stringify(answer), 'utf8') <= DYNAMODB_ITEM_LIMIT_BYTES - RECORD_ROOM_BYTES;
}

/**
 * Keeps a client's answer in its record for the holder; false when the record refused it (see
 * PendingStore.recordAnswer). `writeId`, unique to the answer POST, is kept with it: when DynamoDB
 * took the write but its response was lost (a timeout on a loaded table), the SDK sends the write
 * again and its condition refuses it — the record then shows the answer as this POST's own
 * (`recordedBy`), and the POST is accepted rather than told its answer came too late.
 */
export function recordAnswer(
  store: Pick<PendingStore, 'recordAnswer'>,
  partition: string,
  gatewayId: string,
  answer: JSONRPCResponse,
  writeId?: string,
): Promise<RecordOutcome> {
  // Only what the target needs: the id is replaced by the target's own on delivery.
  const kept: KeptAnswer = 'error' in answer ? { error: answer.error } : { result: answer.result };
  if (writeId) kept.recordedBy = writeId;
  return store.recordAnswer(partition, gatewayId, JSON.stringify(kept));
}

/** A recorded answer as its record keeps it. */
interface KeptAnswer {
  result?: unknown;
  error?: unknown;
  /** The answer POST that recorded it (recordAnswer's `writeId`). */
  recordedBy?: string;
}

const keptOf = (record: PendingRecord): KeptAnswer => JSON.parse(record.answer ?? '{}') as KeptAnswer;

/**
 * Whether the POST with `writeId` recorded the answer `record` holds (its own write, taken once
 * already). With `retried` (its write was refused on the SDK's retry, its first reply lost): also a
 * record gone meanwhile — the call that asked went on and ended, with this answer as far as can be
 * known, so the POST is not told its answer came too late.
 */
export function recordedBy(record: PendingRecord | undefined, writeId: string, retried = false): boolean {
  if (retried && !record) return true;
  if (record?.status !== 'recorded' || !record.answer) return false;
  try {
    return keptOf(record).recordedBy === writeId;
  } catch {
    return false;
  }
}

export type RecordedDelivery =
  | { kind: 'delivered' }
  /** The target refused it (4xx: it no longer knows the session or the request): the call ends. */
  | { kind: 'refused'; error: unknown }
  /** The target did not take it (unreachable, reset, 5xx): the holder may send it again. */
  | { kind: 'not-delivered'; error: unknown };

/** The holder's side: POSTs a recorded answer to the target, with the target's session and request id. */
export async function deliverRecorded(
  targets: Pick<Targets, 'deliver'>,
  record: PendingRecord,
  protocolVersion: string,
  signal?: AbortSignal,
): Promise<RecordedDelivery> {
  const kept = keptOf(record);
  const message = (
    kept.error !== undefined
      ? { jsonrpc: '2.0', id: record.targetRequestId, error: kept.error }
      : { jsonrpc: '2.0', id: record.targetRequestId, result: kept.result }
  ) as JSONRPCResponse;
  try {
    await targets.deliver(
      record.target,
      { targetSessionId: record.targetSessionId, protocolVersion: record.targetProtocolVersion ?? protocolVersion },
      message,
      signal,
    );
    return { kind: 'delivered' };
  } catch (error) {
    const refused = error instanceof MessageRejectedError || error instanceof TargetSessionExpiredError;
    return refused ? { kind: 'refused', error } : { kind: 'not-delivered', error };
  }
}

/** Between the holder's attempts at an answer the target did not take (each attempt resends what provably did not arrive). */
export const RECORDED_RETRY_MS = 1000;

/**
 * deliverRecorded, sent again after each attempt the target did not take, until it is taken, refused,
 * or `signal` stops it (the call ended: its pending timeout, the deadline, a cancellation). The
 * client got 202 for it and will not send it again, so the holder does.
 */
export async function deliverRecordedUntilTaken(
  targets: Pick<Targets, 'deliver'>,
  record: PendingRecord,
  protocolVersion: string,
  options: { signal: AbortSignal; retryMs?: number; onFailedAttempt?: (error: unknown) => void; clock: Clock },
): Promise<RecordedDelivery> {
  let last: RecordedDelivery | undefined;
  const polled = await poll(
    async () => {
      last = await deliverRecorded(targets, record, protocolVersion, options.signal);
      if (last.kind !== 'not-delivered' || options.signal.aborted) return last;
      options.onFailedAttempt?.(last.error);
      return undefined;
    },
    { firstMs: options.retryMs ?? RECORDED_RETRY_MS },
    { signal: options.signal, clock: options.clock },
  );
  if ('value' in polled) return polled.value;
  // Stopped while the target had not taken it (or before a first attempt): nothing was delivered.
  return last ?? { kind: 'not-delivered', error: options.signal.reason };
}
