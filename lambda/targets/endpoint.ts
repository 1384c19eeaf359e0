import type { TargetConfig } from '../config/schema';
import { recordTargetLatency } from '../observability/metrics';
import { currentRequest } from '../observability/request-context';
import { DependencyFailedError } from '../protocol/errors';
import { isResponse, type JSONRPCResponse, nestedDeeperThan } from '../protocol/jsonrpc';
import type { JSONRPCMessage, JSONRPCRequest } from '../protocol/types';
import { NO_CREDENTIALS, type TargetCredentials } from './credentials';
import { readResponseStream, type StreamListeners, TooDeepError } from './sse-reader';

/**
 * One target's HTTP endpoint, for both eras: the gateway's own credentials, one POST that reads a
 * JSON body or an SSE stream up to the response, the latency metric and the mapping of failures to
 * DependencyFailedError. Node's fetch keeps connections to targets alive between calls.
 */

/** The target no longer knows the session the request named (HTTP 404): re-initialize and try again. */
export class TargetSessionExpiredError extends Error {
  constructor(readonly target: string) {
    super(`target ${target}: session expired`);
    this.name = 'TargetSessionExpiredError';
  }
}

/** The target refused a message with a 4xx (not a transient failure): sending it again cannot help. */
export class MessageRejectedError extends DependencyFailedError {
  constructor(
    target: string,
    readonly status: number,
  ) {
    super(target, `refused the message (HTTP ${status})`);
    this.name = 'MessageRejectedError';
  }
}

export interface PostOptions {
  signal?: AbortSignal;
  listeners?: StreamListeners;
  /** The request names a target session: a 404 means the target forgot it. */
  sessionBound?: boolean;
  /**
   * The request may be sent again if its connection failed before any response (a stale pooled
   * keep-alive socket): discovery, initialize, lists. Never a tools/call: only a refused connection
   * (nothing was sent) is retried for those.
   */
  safeToResend?: boolean;
}

/**
 * Delivering a message (an answer to the target's request, a notification): sent again on a
 * connection failure before any response, or a 502/503/504 (a proxy in front of the target that
 * could not reach it) — safe, because a JSON-RPC target ignores a response whose id it no longer
 * waits for, and notifications are idempotent. At most DELIVERY_ATTEMPTS, each bounded, all
 * within DELIVERY_TIMEOUT_MS (below CLAIM_LEASE_MS in state/records.ts).
 */
export const DELIVERY_ATTEMPTS = 3;
export const DELIVERY_ATTEMPT_TIMEOUT_MS = 5000;
export const DELIVERY_TIMEOUT_MS = 15_000;
const DELIVERY_BACKOFF_MS = [100, 400];
const TRANSIENT_STATUSES = new Set([502, 503, 504]);

/** Requests without side effects at the target (a duplicate initialize only leaves an idle target session). */
const SAFE_TO_RESEND = new Set([
  'initialize',
  'server/discover',
  'ping',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
]);

/**
 * A connection that failed before the target said anything: `refused` (never opened: nothing was
 * sent) or `reset` (closed under us: typically a pooled keep-alive socket the target, or a NAT on
 * the way, had already dropped — undici's idle timer is 4 s, or the target's Keep-Alive hint minus
 * 1 s, but timers stand still while Lambda freezes the environment, so a socket can be stale on thaw).
 */
function connectionFailure(error: unknown): 'refused' | 'reset' | undefined {
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause;
  const code = cause?.code ?? (error as { code?: string } | undefined)?.code;
  if (code === 'ECONNREFUSED') return 'refused';
  if (code && ['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED'].includes(code)) return 'reset';
  return undefined;
}

export interface PostResult {
  /** The target's response, with the id of the request. */
  response: JSONRPCResponse;
  status: number;
  headers: Headers;
}

/** The current request's W3C trace context, propagated to every target it reaches (both eras). */
export function traceHeaders(): Record<string, string> {
  const trace = currentRequest()?.trace;
  if (!trace) return {};
  return { traceparent: trace.traceparent, ...(trace.tracestate ? { tracestate: trace.tracestate } : {}) };
}

export class TargetEndpoint {
  constructor(
    readonly config: TargetConfig,
    /** The gateway's own credentials for this target (./credentials.ts); never the client's. */
    private readonly credentials: TargetCredentials = NO_CREDENTIALS,
  ) {}

  get name(): string {
    return this.config.name;
  }

  /** Credential headers plus the transport's; a failure to obtain credentials is the target's failure. */
  async headers(protocol: Record<string, string>): Promise<Record<string, string>> {
    let credentials: Record<string, string>;
    try {
      credentials = await this.credentials.headers();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new DependencyFailedError(this.name, `outbound credentials unavailable: ${reason}`, { cause: error });
    }
    return {
      ...credentials,
      ...traceHeaders(),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...protocol,
    };
  }

  /** POSTs a request and reads its response (JSON, or an SSE stream whose other messages go to the listeners). */
  async request(
    request: JSONRPCRequest,
    headers: Record<string, string>,
    options: PostOptions = {},
  ): Promise<PostResult> {
    const safeToResend = options.safeToResend ?? SAFE_TO_RESEND.has(request.method);
    const res = await this.fetch('POST', headers, JSON.stringify(request), { ...options, safeToResend });
    const contentType = res.headers.get('content-type') ?? '';
    if (res.ok && contentType.includes('text/event-stream') && res.body) {
      let response: JSONRPCResponse | undefined;
      try {
        response = await readResponseStream(res.body, request.id, options.listeners);
      } catch (error) {
        throw this.failure(error, 'the stream broke before the response');
      }
      if (!response) throw new DependencyFailedError(this.name, 'the stream ended before the response');
      return { response, status: res.status, headers: res.headers };
    }
    let body: unknown;
    try {
      if (contentType.includes('json')) body = await res.json();
      else await res.body?.cancel();
      if (nestedDeeperThan(body)) throw new TooDeepError();
    } catch (error) {
      throw this.failure(error, `HTTP ${res.status} with an unreadable body`);
    }
    // A JSON-RPC error with an HTTP error status is still the target's answer (e.g. 400 Invalid params).
    if (isResponse(body) && (res.ok || 'error' in body)) {
      return { response: { ...body, id: request.id }, status: res.status, headers: res.headers };
    }
    throw new DependencyFailedError(this.name, res.ok ? 'answered without a JSON-RPC response' : `HTTP ${res.status}`);
  }

  /**
   * POSTs a notification or a response (the answer to a target's request); targets reply 202.
   * Retried as DELIVERY_ATTEMPTS says; a 4xx is a MessageRejectedError (final), anything else that
   * is still failing after the attempts a DependencyFailedError (transient).
   */
  async send(message: JSONRPCMessage, headers: Record<string, string>, options: PostOptions = {}): Promise<void> {
    const body = JSON.stringify(message);
    const overall = AbortSignal.timeout(DELIVERY_TIMEOUT_MS);
    for (let attempt = 1; ; attempt++) {
      const signals = [overall, AbortSignal.timeout(DELIVERY_ATTEMPT_TIMEOUT_MS)];
      const signal = AbortSignal.any(options.signal ? [...signals, options.signal] : signals);
      let failure: Error;
      try {
        const res = await this.fetch('POST', headers, body, { ...options, signal, safeToResend: true });
        await res.body?.cancel().catch(() => undefined);
        if (res.ok) return;
        if (!TRANSIENT_STATUSES.has(res.status)) throw new MessageRejectedError(this.name, res.status);
        failure = new DependencyFailedError(this.name, `HTTP ${res.status}`);
      } catch (error) {
        if (error instanceof MessageRejectedError || error instanceof TargetSessionExpiredError) throw error;
        if (options.signal?.aborted) throw error;
        failure =
          error instanceof Error && error.name === 'TimeoutError'
            ? new DependencyFailedError(this.name, 'did not answer in time', { cause: error })
            : (error as Error);
      }
      const delay = DELIVERY_BACKOFF_MS[attempt - 1];
      if (attempt >= DELIVERY_ATTEMPTS || delay === undefined || overall.aborted) throw failure;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** DELETE (ends a target session; targets MAY answer 405). */
  async delete(headers: Record<string, string>): Promise<void> {
    const res = await this.fetch('DELETE', headers, undefined, {
      signal: AbortSignal.timeout(5000),
      safeToResend: true,
    });
    await res.body?.cancel().catch(() => undefined);
  }

  private async fetch(method: string, headers: Record<string, string>, body: string | undefined, options: PostOptions) {
    let res: Response;
    try {
      const started = performance.now();
      try {
        res = await fetch(this.config.url, { method, headers, body, signal: options.signal });
      } catch (error) {
        // Once, when it provably did not reach the target (refused), or for a request safe to send
        // twice whose pooled connection was found dead: undici dropped that socket, so this opens a new one.
        const failure = connectionFailure(error);
        if (!failure || (failure === 'reset' && !options.safeToResend) || options.signal?.aborted) throw error;
        res = await fetch(this.config.url, { method, headers, body, signal: options.signal });
      }
      // Time to the target's response headers: its responsiveness, not a person's time to answer.
      recordTargetLatency(this.name, performance.now() - started);
    } catch (error) {
      throw this.failure(error, 'unreachable');
    }
    if (res.status === 401) this.credentials.rejected();
    if (res.status === 404 && options.sessionBound) {
      await res.body?.cancel().catch(() => undefined);
      throw new TargetSessionExpiredError(this.name);
    }
    return res;
  }

  private failure(error: unknown, reason: string): Error {
    if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return error;
    if (error instanceof TooDeepError) return new DependencyFailedError(this.name, error.message, { cause: error });
    if (error instanceof DependencyFailedError) return error;
    return new DependencyFailedError(this.name, reason, { cause: error });
  }
}
