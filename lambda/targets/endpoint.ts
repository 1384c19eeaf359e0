import { DEFAULT_TARGET_LIMITS, type TargetConfig, type TargetLimits } from '../config/schema';
import { ConnectionRequiredError } from '../connections/user-connections';
import { recordTargetLatency, recordTargetStreamResume } from '../observability/metrics';
import { currentRequest } from '../observability/request-context';
import { DependencyFailedError } from '../protocol/errors';
import { MCP_HEADERS } from '../protocol/headers';
import { isResponse, type JSONRPCResponse, nestedDeeperThan } from '../protocol/jsonrpc';
// Requests without side effects at the target: the routing tables' safe-to-resend column (protocol/methods.ts).
import { SAFE_TO_RESEND_METHODS as SAFE_TO_RESEND, SILENCE_TIMED_METHODS } from '../protocol/methods';
import type { JSONRPCMessage, JSONRPCRequest } from '../protocol/types';
import { type Clock, sleep } from '../scheduling/clock';
import { NO_CREDENTIALS, type TargetCredentials } from './credentials';
import { BodyTooLargeError, send, type TargetResponse } from './http-client';
import { readResponseStream, type StreamCursor, type StreamListeners, TooDeepError, TooLargeError } from './sse-reader';
import { DEFAULT_RESUME_POLICY, type ResumePolicy, resumeDelayMs } from './stream-resume';
import { TargetClock } from './target-clock';

/**
 * One target's HTTP endpoint, for both eras: the gateway's own credentials, one POST that reads a
 * JSON body or an SSE stream up to the response, the latency metric and the mapping of failures to
 * DependencyFailedError. Connections to targets are kept alive between calls (./http-client.ts,
 * which also sends a request once more when its pooled socket was found dead before any response).
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

/** The request's stream was let go of on purpose (PostOptions.detach): the target goes on; resume from `cursor`. */
export class StreamDetachedError extends Error {
  constructor(
    readonly target: string,
    readonly cursor: StreamCursor,
  ) {
    super(`target ${target}: stream released at event ${cursor.lastEventId ?? '(none)'}`);
    this.name = 'StreamDetachedError';
  }
}

/** The target did not answer in time (config `limits.requestTimeoutMs` / `limits.callIdleTimeoutMs`). */
export class TargetTimeoutError extends DependencyFailedError {
  constructor(target: string, method: string, ms: number, idle: boolean) {
    super(target, idle ? `sent nothing for ${ms} ms during ${method}` : `did not answer ${method} within ${ms} ms`);
    this.name = 'TargetTimeoutError';
  }
}

export interface PostOptions {
  signal?: AbortSignal;
  listeners?: StreamListeners;
  /** The request names a target session: a 404 means the target forgot it. */
  sessionBound?: boolean;
  /**
   * A legacy-era request: a stream that ends (or breaks) before the response after an event with an
   * `id` is resumed with GET + `Last-Event-ID` (./stream-resume.ts). 2026-07-28 has no resumption.
   */
  resumable?: boolean;
  /** Where the request's stream stands (its last event id and `retry`): the caller's, so it can release the call. */
  cursor?: StreamCursor;
  /**
   * Stops reading the request's stream without cancelling the request (a released call): the read
   * ends with a StreamDetachedError carrying the cursor, and the target, which keeps its events, is
   * resumed later with `resumeFrom`.
   */
  detach?: AbortSignal;
  /** Goes on with a request sent earlier (a released call): GET + `Last-Event-ID` instead of the POST. */
  resumeFrom?: string;
  /**
   * The stream ended (or broke) before the response after an event id: it is reopened after the
   * target's `retry` and, when this returns a promise, only once it settled (the caller decides
   * meanwhile whether to let the call go: then `detach` aborts and nothing is reopened).
   */
  onTargetPolls?(): void | Promise<void>;
  /**
   * Gets the request's clock, for what the target sends about this request elsewhere (the session's
   * GET stream): a request to the user holds it, a notification restarts it.
   */
  onClock?(clock: Pick<TargetClock, 'hold' | 'touch'>): void;
  /** Sent again with fresh credentials after the target refused a user's token (401): not again. */
  afterRejection?: boolean;
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

export interface PostResult {
  /** The target's response, with the id of the request. */
  response: JSONRPCResponse;
  status: number;
  headers: TargetResponse['headers'];
}

/** The current request's W3C trace context, propagated to every target it reaches (both eras). */
export function traceHeaders(): Record<string, string> {
  const trace = currentRequest()?.trace;
  if (!trace) return {};
  return { traceparent: trace.traceparent, ...(trace.tracestate ? { tracestate: trace.tracestate } : {}) };
}

export class TargetEndpoint {
  /** Parsed once: every request goes to the same URL. */
  readonly url: URL;

  constructor(
    readonly config: TargetConfig,
    /** The gateway's clock: the target's `retry` before a stream is resumed is waited on it. */
    private readonly clock: Clock,
    /** The gateway's own credentials for this target (./credentials.ts); never the client's. */
    private readonly credentials: TargetCredentials = NO_CREDENTIALS,
    /** How long the gateway waits for this target and how much it reads from it. */
    readonly limits: TargetLimits = DEFAULT_TARGET_LIMITS,
    /** Waits and bounds for resuming a stream the target ended before its response. */
    private readonly resume: ResumePolicy = DEFAULT_RESUME_POLICY,
  ) {
    this.url = new URL(config.url);
  }

  get name(): string {
    return this.config.name;
  }

  /** Credential headers plus the transport's; a failure to obtain credentials is the target's failure. */
  async headers(protocol: Record<string, string>): Promise<Record<string, string>> {
    let credentials: Record<string, string>;
    try {
      credentials = await this.credentials.headers();
    } catch (error) {
      if (error instanceof ConnectionRequiredError) throw error; // the user consents (URL elicitation)
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

  /**
   * POSTs a request and reads its response (JSON, or an SSE stream whose other messages go to the
   * listeners), within the target's timeout: for a relayed call the target's silence (the clock stands
   * still while a request it sent to the user is open, and while the client's stream is full), for
   * anything else the whole answer. Each message is read up to `limits.maxMessageBytes`.
   */
  async request(
    request: JSONRPCRequest,
    headers: Record<string, string>,
    options: PostOptions = {},
  ): Promise<PostResult> {
    const idle = SILENCE_TIMED_METHODS.has(request.method);
    const clock = new TargetClock(idle ? this.limits.callIdleTimeoutMs : this.limits.requestTimeoutMs);
    const signals = [
      clock.signal,
      ...(options.signal ? [options.signal] : []),
      ...(options.detach ? [options.detach] : []),
    ];
    const signal = signals.length === 1 ? clock.signal : AbortSignal.any(signals);
    if (idle) options.onClock?.(clock);
    const listeners = options.listeners;
    const timed: StreamListeners | undefined = idle
      ? {
          onNotification: listeners?.onNotification,
          onServerRequest: listeners?.onServerRequest
            ? (serverRequest) => {
                clock.hold(); // a person may be answering: until the target's next byte
                listeners.onServerRequest?.(serverRequest);
              }
            : undefined,
          backpressure: listeners?.backpressure
            ? () => {
                const wait = listeners.backpressure?.();
                if (wait) {
                  clock.hold();
                  void wait.finally(() => clock.touch());
                }
                return wait;
              }
            : undefined,
        }
      : listeners;
    try {
      return await this.exchange(request, headers, { ...options, signal, listeners: timed }, idle ? clock : undefined);
    } catch (error) {
      if (options.detach?.aborted && !options.signal?.aborted && !clock.expired) {
        throw new StreamDetachedError(this.name, options.cursor ?? {});
      }
      if (clock.expired && !options.signal?.aborted) {
        throw new TargetTimeoutError(this.name, request.method, clock.ms, idle);
      }
      throw error;
    } finally {
      clock.stop();
    }
  }

  private async exchange(
    request: JSONRPCRequest,
    headers: Record<string, string>,
    options: PostOptions,
    clock: TargetClock | undefined,
  ): Promise<PostResult> {
    if (options.resumeFrom !== undefined) {
      const cursor = options.cursor ?? {};
      cursor.lastEventId = options.resumeFrom;
      const body = await this.reopen(headers, cursor, options, 'the call was released', { now: true });
      clock?.touch();
      const response = await this.readStream(request, headers, body, options, clock);
      return { response, status: 200, headers: { get: () => null } };
    }
    const res = await this.fetch('POST', headers, JSON.stringify(request), options, SAFE_TO_RESEND.has(request.method));
    clock?.touch();
    const contentType = res.headers.get('content-type') ?? '';
    if (res.ok && contentType.includes('text/event-stream')) {
      const response = await this.readStream(request, headers, res.body, options, clock);
      return { response, status: res.status, headers: res.headers };
    }
    let body: unknown;
    try {
      if (contentType.includes('json'))
        body = JSON.parse(await res.text(this.limits.maxMessageBytes, clock && (() => clock.touch())));
      else res.discard();
      if (nestedDeeperThan(body)) throw new TooDeepError();
    } catch (error) {
      throw this.failure(error, `HTTP ${res.status} with an unreadable body`, options.signal);
    }
    // A JSON-RPC error with an HTTP error status is still the target's answer (e.g. 400 Invalid params).
    if (isResponse(body) && (res.ok || 'error' in body)) {
      return { response: { ...body, id: request.id }, status: res.status, headers: res.headers };
    }
    throw new DependencyFailedError(this.name, res.ok ? 'answered without a JSON-RPC response' : `HTTP ${res.status}`);
  }

  /**
   * Reads a request's SSE stream up to its response. When the stream ends or breaks before it after
   * an event with an `id` (a resumable request), waits the target's `retry` and GETs the stream
   * again with `Last-Event-ID` and the same session and version headers; what the resumed stream
   * carries goes to the same listeners. Without an id seen, the call fails as it always did.
   */
  private async readStream(
    request: JSONRPCRequest,
    headers: Record<string, string>,
    first: TargetResponse['body'],
    options: PostOptions,
    clock: TargetClock | undefined,
  ): Promise<JSONRPCResponse> {
    const cursor: StreamCursor = options.cursor ?? {};
    const read = { maxEventBytes: this.limits.maxMessageBytes, onChunk: clock && (() => clock.touch()), cursor };
    let body = first;
    let resumes = 0;
    for (;;) {
      let ending = 'the stream ended before the response';
      try {
        const response = await readResponseStream(body, request.id, options.listeners, read);
        if (response) return response;
      } catch (error) {
        const final = error instanceof TooDeepError || error instanceof TooLargeError || options.signal?.aborted;
        if (final || !options.resumable || !cursor.lastEventId)
          throw this.failure(error, 'the stream broke before the response', options.signal);
        ending = 'the stream broke before the response';
      }
      if (!options.resumable || !cursor.lastEventId) throw new DependencyFailedError(this.name, ending);
      if (resumes >= this.resume.maxResumes) {
        throw new DependencyFailedError(
          this.name,
          `${ending} after ${resumes} resumptions (the most one call may make)`,
        );
      }
      resumes++;
      // The caller may let go of the call now (a client that resumes is released as the target polls).
      const decided = options.onTargetPolls?.();
      body = await this.reopen(headers, cursor, options, ending, { decided });
      clock?.touch();
    }
  }

  /** GETs a stream again from its last event id, after the target's `retry`; a few failures in a row are tolerated. */
  private async reopen(
    headers: Record<string, string>,
    cursor: StreamCursor,
    options: PostOptions,
    ending: string,
    first: { now?: boolean; decided?: void | Promise<void> } = {},
  ): Promise<TargetResponse['body']> {
    let reason = '';
    for (let attempt = 1; attempt <= this.resume.maxFailedAttempts; attempt++) {
      try {
        // A released call taken over reconnects at once: the target's `retry` was waited out meanwhile.
        const delay = first.now && attempt === 1 ? 0 : resumeDelayMs(this.resume, cursor.retryMs);
        await sleep(this.clock, delay, options.signal);
        options.signal?.throwIfAborted();
        // The caller's decision whether to let the call go comes first: let go of, nothing is reopened.
        if (attempt === 1 && first.decided) await first.decided;
        options.signal?.throwIfAborted();
      } catch (error) {
        throw this.failure(error, ending, options.signal);
      }
      recordTargetStreamResume(this.name);
      // Fresh credentials (a token may have been refreshed while the call waited); not sessionBound: a
      // 404 here must not re-initialize and send the call again, it was already taken.
      const get: Record<string, string> = {
        ...headers,
        ...(await this.credentials.headers().catch(() => ({}))),
        accept: 'text/event-stream',
        [MCP_HEADERS.lastEventId]: cursor.lastEventId ?? '',
      };
      delete get['content-type'];
      try {
        const res = await this.fetch('GET', get, undefined, { signal: options.signal }, true);
        if (res.ok && (res.headers.get('content-type') ?? '').includes('text/event-stream')) return res.body;
        res.discard();
        reason = `HTTP ${res.status}`;
      } catch (error) {
        if (options.signal?.aborted) throw this.failure(error, ending, options.signal);
        reason = error instanceof Error ? error.message : String(error);
      }
    }
    throw new DependencyFailedError(this.name, `${ending} and could not be resumed (${reason})`);
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
        const res = await this.fetch('POST', headers, body, { ...options, signal }, true);
        res.discard();
        if (res.ok) return;
        if (!TRANSIENT_STATUSES.has(res.status)) throw new MessageRejectedError(this.name, res.status);
        failure = new DependencyFailedError(this.name, `HTTP ${res.status}`);
      } catch (error) {
        if (error instanceof MessageRejectedError || error instanceof TargetSessionExpiredError) throw error;
        if (options.signal?.aborted) throw error;
        failure =
          error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')
            ? new DependencyFailedError(this.name, 'did not answer in time', { cause: error })
            : (error as Error);
      }
      const delay = DELIVERY_BACKOFF_MS[attempt - 1];
      if (attempt >= DELIVERY_ATTEMPTS || delay === undefined || overall.aborted) throw failure;
      await sleep(this.clock, delay);
    }
  }

  /** DELETE (ends a target session; targets MAY answer 405). */
  async delete(headers: Record<string, string>): Promise<void> {
    const res = await this.fetch('DELETE', headers, undefined, { signal: AbortSignal.timeout(5000) }, true);
    res.discard();
  }

  /** A GET (the session's standalone stream); the caller reads or discards the body. */
  get(headers: Record<string, string>, signal: AbortSignal): Promise<TargetResponse> {
    return send(this.url, { method: 'GET', headers, signal });
  }

  /**
   * One request. A refused connection (nothing was sent) is tried once more for anything;
   * `idempotent` messages (answers, notifications, DELETE, requests without side effects) are also
   * sent again on a dead pooled socket or a reset before any response. A `tools/call` is not: a
   * connection that dies under it ends the call with a retryable DependencyFailedException rather
   * than risk running the tool twice.
   */
  private async fetch(
    method: string,
    headers: Record<string, string>,
    body: string | undefined,
    options: PostOptions,
    idempotent = false,
  ): Promise<TargetResponse> {
    let res: TargetResponse;
    try {
      const started = performance.now();
      try {
        res = await send(this.url, { method, headers, body, signal: options.signal, resendOnStale: idempotent });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException | undefined)?.code;
        const again = code === 'ECONNREFUSED' || (idempotent && (code === 'ECONNRESET' || code === 'EPIPE'));
        if (!again || options.signal?.aborted) throw error;
        res = await send(this.url, { method, headers, body, signal: options.signal });
      }
      // Time to the target's response headers: its responsiveness, not a person's time to answer.
      recordTargetLatency(this.name, performance.now() - started);
    } catch (error) {
      throw this.failure(error, 'unreachable', options.signal);
    }
    if (res.status === 401) {
      this.credentials.rejected();
      // A user's token the target refused (expired early, revoked): it is refreshed, or the user consents
      // again (ConnectionRequiredError from the fresh headers); once, and only where nothing was done.
      if (this.credentials.perUser && !options.afterRejection) {
        res.discard();
        const fresh = { ...headers, ...(await this.credentials.headers()) };
        return this.fetch(method, fresh, body, { ...options, afterRejection: true }, idempotent);
      }
    }
    if (res.status === 404 && options.sessionBound) {
      res.discard();
      throw new TargetSessionExpiredError(this.name);
    }
    return res;
  }

  private failure(error: unknown, reason: string, signal?: AbortSignal): Error {
    if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return error;
    // The caller aborted (its own decision, not the target's failure): a broken stream says so.
    if (signal?.aborted) return Object.assign(new Error('aborted', { cause: error }), { name: 'AbortError' });
    if (error instanceof TooDeepError || error instanceof TooLargeError)
      return new DependencyFailedError(this.name, error.message, { cause: error });
    if (error instanceof BodyTooLargeError)
      return new DependencyFailedError(this.name, `sent ${error.message} (limits.maxMessageBytes)`, { cause: error });
    if (error instanceof DependencyFailedError || error instanceof ConnectionRequiredError) return error;
    return new DependencyFailedError(this.name, reason, { cause: error });
  }
}
