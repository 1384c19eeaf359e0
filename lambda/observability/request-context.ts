import { AsyncLocalStorage } from 'node:async_hooks';
import { INPUT_METHODS } from '../protocol/methods';
import type { TraceContext } from './trace-context';

/**
 * The request-scope record: what one MCP request carries through every layer without being passed
 * along. AsyncLocalStorage rather than parameters, because the facts are learned deep in the era
 * paths and the catalog, and one local process serves many requests at once, so nothing may live in
 * shared mutable state (Powertools Logger's `appendKeys` would).
 *
 * It is the only per-request state, and this is everything that touches it:
 * - created by `app/operations.ts` (`runInRequest`): id, W3C trace context, start time;
 * - `noteRequest`: who and what was asked, by the code that learns it: `app/gateway.ts` (principal,
 *   era, kind, method) and the catalog's resolution (target, tool);
 * - `noteClientMessage`: every JSON-RPC message sent to the client, by the one place that sends them
 *   (`http/client-messages.ts`, used by `jsonResponse` and the SSE writer): the error code the client
 *   got, and the input requests it was asked;
 * - read by the logger (request and trace id on every line), by `targets/` (trace headers to targets),
 *   and by the access log when the response has ended.
 * Metrics are not kept here and nothing here emits one (`observability/metrics.ts`).
 */

export interface RequestFacts {
  principal?: string;
  sessionId?: string;
  /** The origin the client reached the gateway at (consent links point there unless a public URL is configured). */
  origin?: string;
  era?: 'legacy' | 'modern';
  method?: string;
  /** `request`, `notification` or `response` (a client's answer to a relayed request). */
  kind?: 'request' | 'notification' | 'response';
  target?: string;
  tool?: string;
  /** The JSON-RPC error code the client got, where there is one. */
  rpcErrorCode?: number;
  /**
   * Input requests (elicitation, sampling, roots) the client was sent in this response: legacy-era server
   * requests, and the entries of a 2026-07-28 `input_required` result.
   */
  inputRounds: number;
}

export interface RequestContext {
  readonly requestId: string;
  readonly trace: TraceContext;
  readonly startedAt: number;
  readonly facts: RequestFacts;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` (and everything it starts) as part of one request. */
export function runInRequest<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The request being served, if any (undefined in start-up work and background timers). */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

/** Records facts of the current request for its access log line (no-op outside a request). */
export function noteRequest(facts: Partial<Omit<RequestFacts, 'inputRounds'>>): void {
  const context = storage.getStore();
  if (!context) return;
  for (const [key, value] of Object.entries(facts)) {
    if (value !== undefined) (context.facts as unknown as Record<string, unknown>)[key] = value;
  }
}

/**
 * A JSON-RPC message the gateway sends to the client (http/client-messages.ts): the code of an error
 * response is the request's `rpcErrorCode`, whether the gateway authored the error or relayed a
 * target's; an input request, or an `input_required` result's entries, count in `inputRounds`.
 * Messages the gateway sends to targets never pass here.
 */
export function noteClientMessage(message: unknown): void {
  const context = storage.getStore();
  if (!context || typeof message !== 'object' || message === null) return;
  context.facts.inputRounds += inputRequestsIn(message);
  if (!('error' in message)) return;
  const code = (message as { error?: { code?: unknown } }).error?.code;
  if (typeof code === 'number') context.facts.rpcErrorCode = code;
}

/** How many input requests a message to the client carries (a request of its own, or a 2026-07-28 round's). */
function inputRequestsIn(message: object): number {
  if ('method' in message && 'id' in message) {
    return INPUT_METHODS.has(String((message as { method: unknown }).method)) ? 1 : 0;
  }
  const result = (message as { result?: { resultType?: unknown; inputRequests?: unknown } }).result;
  if (result?.resultType !== 'input_required') return 0;
  const requests = result.inputRequests;
  return typeof requests === 'object' && requests !== null ? Object.keys(requests).length : 0;
}
