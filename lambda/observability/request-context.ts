import { AsyncLocalStorage } from 'node:async_hooks';
import type { TraceContext } from './trace-context';

/**
 * What one MCP request carries through every layer without being passed along: its id and W3C
 * trace context (added to every log line and to every request to a target), and the facts the
 * access log reports when the response ends (principal, era, method, target, tool, error code,
 * input requests relayed). AsyncLocalStorage rather than parameters, because the facts are learned
 * deep in the era paths and the catalog, and one local process serves many requests at once, so
 * nothing may live in shared mutable state (Powertools Logger's `appendKeys` would).
 */

export interface RequestFacts {
  principal?: string;
  sessionId?: string;
  era?: 'legacy' | 'modern';
  method?: string;
  /** `request`, `notification` or `response` (a client's answer to a relayed request). */
  kind?: 'request' | 'notification' | 'response';
  target?: string;
  tool?: string;
  /** The JSON-RPC error code the client got, where there is one. */
  rpcErrorCode?: number;
  /** Server-to-client input requests (elicitation, sampling, roots) relayed to the client. */
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
 * Called with every JSON-RPC message the gateway sends to the client (http/responses.ts, the SSE
 * writer): the code of an error response is the request's `rpcErrorCode`, whether the gateway
 * authored the error or relayed a target's. Errors the gateway sends to targets never pass here.
 */
export function noteClientMessage(message: unknown): void {
  const context = storage.getStore();
  if (!context || typeof message !== 'object' || message === null || !('error' in message)) return;
  const code = (message as { error?: { code?: unknown } }).error?.code;
  if (typeof code === 'number') context.facts.rpcErrorCode = code;
}

/** One more input request relayed to the client during the current request. */
export function noteInputRound(): void {
  const context = storage.getStore();
  if (context) context.facts.inputRounds++;
}
