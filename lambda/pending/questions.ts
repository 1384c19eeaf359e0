import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import type { JSONRPCErrorResponse, JSONRPCResultResponse } from '../protocol/types';
import { poll } from '../scheduling/backoff';
import type { Clock } from '../scheduling/clock';
import type { PendingRecord, PendingStore } from '../state/store';

/**
 * Gateway questions (pending records of kind `question`): requests the gateway itself asks a 2025
 * client — a confirmation (confirmTools) or a 2026-07-28 target's input round — and waits for. The
 * client's answer is a separate POST that may reach any instance; it is stored in the record with
 * a conditional update (`storeQuestionAnswer`, once), and the invocation that asked polls the record
 * (a consistent GetItem, 100 ms backing off to 1 s: a person answers in seconds, so a 300 s wait
 * costs about 300 reads) until it is answered, `until` passes, or `stop` aborts.
 */

const POLL_MIN_MS = 100;
const POLL_MAX_MS = 1000;

export type QuestionAnswer = JSONRPCResultResponse | JSONRPCErrorResponse | 'timeout' | 'client-gone' | 'gone';

export async function waitForQuestionAnswer(
  store: PendingStore,
  logger: GatewayLogger,
  sessionId: string,
  gatewayId: string,
  until: number,
  stop: AbortSignal,
  /** goneIsFinal: the record exists already, so its disappearing (removed, expired) ends the wait with 'gone'. */
  options: { goneIsFinal?: boolean; clock: Clock },
): Promise<QuestionAnswer> {
  const polled = await poll(
    async (): Promise<QuestionAnswer | undefined> => {
      let record: PendingRecord | undefined;
      try {
        record = await store.getPending(sessionId, gatewayId);
        if (!record && options.goneIsFinal) return 'gone';
      } catch (error) {
        // A transient store failure: keep waiting (bounded by the deadline).
        logger.warn('polling a gateway question failed', { sessionId, error: describeError(error) });
      }
      if (record?.status === 'answered' && record.answer) {
        return JSON.parse(record.answer) as JSONRPCResultResponse | JSONRPCErrorResponse;
      }
      return undefined;
    },
    { firstMs: POLL_MIN_MS, maxMs: POLL_MAX_MS, factor: 2 },
    { until, signal: stop, clock: options.clock },
  );
  if ('value' in polled) return polled.value;
  return polled.ended === 'aborted' || stop.aborted ? 'client-gone' : 'timeout';
}

/** Stores the client's answer to a question (exactly once); false when it was answered or expired. */
export async function storeQuestionAnswer(
  store: PendingStore,
  sessionId: string,
  answer: JSONRPCResultResponse | JSONRPCErrorResponse,
  /** An answer POST that read nothing: only a question of this principal's live session (PendingStore.answerPending). */
  options: { principal?: string } = {},
): Promise<boolean> {
  const gatewayId = answer.id as string;
  const payload = JSON.stringify(
    'error' in answer
      ? { jsonrpc: '2.0', id: gatewayId, error: answer.error }
      : { jsonrpc: '2.0', id: gatewayId, result: answer.result },
  );
  return (await store.answerPending(sessionId, gatewayId, payload, undefined, options)).written;
}
