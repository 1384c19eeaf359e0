import type { JSONRPCErrorResponse, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { RpcCode } from './codes';

/**
 * The one error model. Every error the gateway itself authors has a kind; the table below says,
 * once, which JSON-RPC code it carries, which HTTP status it gets when it is the whole response,
 * whether retrying helps (`retryable`, and `Retry-After` when a wait is known) and the `data.type`
 * clients can switch on. Errors a target returns are relayed as they are and never pass through here.
 */
interface ErrorSpec {
  code: number;
  status: number;
  retryable?: true;
  retryAfterSeconds?: number;
  type?: string;
  /** An answer the protocol expects in normal operation: not counted in the `GatewayErrors` metric. */
  expected?: true;
}

export const ERROR_TABLE = {
  // The request as a whole (transport rules).
  ParseError: { code: RpcCode.ParseError, status: 400 },
  InvalidRequest: { code: RpcCode.InvalidRequest, status: 400 },
  NotFound: { code: RpcCode.InvalidRequest, status: 404 },
  MethodNotAllowed: { code: RpcCode.ServerError, status: 405 },
  // The standalone GET stream, as the official v1 SDK server answers them (-32000 with 406 / 409).
  NotAcceptable: { code: RpcCode.ServerError, status: 406 },
  StreamConflict: { code: RpcCode.ServerError, status: 409 },
  /**
   * GET /mcp: the transport lets a server without a standalone SSE stream answer 405, and every SDK
   * client tries it once per session, so it is the normal answer, not an error worth an alarm.
   */
  NoStandaloneStream: { code: RpcCode.ServerError, status: 405, expected: true },
  UnsupportedMediaType: { code: RpcCode.InvalidRequest, status: 415 },
  PayloadTooLarge: { code: RpcCode.InvalidRequest, status: 413 },
  Forbidden: { code: RpcCode.InvalidRequest, status: 403 },
  Unauthorized: { code: RpcCode.ServerError, status: 401 },
  AuthForbidden: { code: RpcCode.ServerError, status: 403 },
  AuthUnavailable: {
    code: RpcCode.InternalError,
    status: 503,
    retryable: true,
    retryAfterSeconds: 5,
    type: 'ServiceUnavailable',
  },
  // legacy-era sessions.
  SessionRequired: { code: RpcCode.InvalidRequest, status: 400 },
  SessionNotFound: { code: RpcCode.InvalidRequest, status: 404 },
  AnswerRefused: { code: RpcCode.InvalidRequest, status: 400 },
  /** A principal's `initialize` over `maxSessionsPerPrincipal` live sessions; `Retry-After`: when one ends. */
  TooManySessions: { code: RpcCode.ServerError, status: 429, retryable: true, type: 'TooManySessions' },
  /** A principal's `initialize` over `initializeRatePerMinute`; `Retry-After`: when the minute is over. */
  InitializeRateExceeded: { code: RpcCode.ServerError, status: 429, retryable: true, type: 'RateLimited' },
  /** More pending requests in one session than `maxPendingRequestsPerSession`. */
  TooManyPendingRequests: { code: RpcCode.InternalError, status: 200, type: 'TooManyPendingRequests' },
  /** More bridged 2026-07-28 calls of one principal waiting for input, on any instances, than `maxBridgedCallsPerPrincipal`. */
  TooManyBridgedCalls: {
    code: RpcCode.InternalError,
    status: 429,
    retryable: true,
    retryAfterSeconds: 5,
    type: 'TooManyBridgedCalls',
  },
  /** More open `subscriptions/listen` streams of one principal, on any instances, than `maxListensPerPrincipal`. */
  TooManyListens: {
    code: RpcCode.InternalError,
    status: 429,
    retryable: true,
    retryAfterSeconds: 5,
    type: 'TooManyListens',
  },
  /** JSON nested deeper than the gateway follows (a whole message, or a target's response). */
  NestingTooDeep: { code: RpcCode.InvalidRequest, status: 400 },
  ParamsTooDeep: { code: RpcCode.InvalidParams, status: 400 },
  // A valid request the gateway answers with an error (in-band: HTTP 200, so SDK clients show it).
  MethodNotFound: { code: RpcCode.MethodNotFound, status: 200 },
  InvalidParams: { code: RpcCode.InvalidParams, status: 200 },
  ResourceNotFound: { code: RpcCode.ResourceNotFound, status: 200 },
  // 2026-07-28 request validation (the spec's HTTP statuses).
  MalformedParams: { code: RpcCode.InvalidParams, status: 400 },
  HeaderMismatch: { code: RpcCode.HeaderMismatch, status: 400 },
  UnsupportedProtocolVersion: { code: RpcCode.UnsupportedProtocolVersion, status: 400 },
  UnknownMethod: { code: RpcCode.MethodNotFound, status: 404 },
  MissingCapability: { code: RpcCode.MissingRequiredClientCapability, status: 400 },
  /** A 2025 client without URL elicitation calls a per-user target it has not connected to (in-band). */
  ConnectionNeedsUrlElicitation: { code: RpcCode.InvalidRequest, status: 200 },
  /** The user declined or cancelled connecting an account at a per-user target (in-band). */
  ConnectionNotMade: { code: RpcCode.InvalidRequest, status: 200 },
  RequestStateRefused: { code: RpcCode.InvalidParams, status: 400 },
  /** The configured policies do not let this caller call this tool (in-band; names no policy). */
  PolicyDenied: { code: RpcCode.ServerError, status: 200, type: 'AccessDeniedException' },
  // Dependencies.
  DependencyFailed: { code: RpcCode.InternalError, status: 200, retryable: true, type: 'DependencyFailedException' },
  /** The target did not take the client's answer, provably: the claim was released, so sending the answer again works. */
  AnswerNotDelivered: {
    code: RpcCode.InternalError,
    status: 502,
    retryable: true,
    retryAfterSeconds: 1,
    type: 'DependencyFailedException',
  },
  /** The target refused the answer (a 4xx): resending cannot help; the call is ended with an error. */
  AnswerRejected: { code: RpcCode.InternalError, status: 502, type: 'DependencyFailedException' },
  /** What the gateway must keep (a session, a held answer) exceeds DynamoDB's 400 KB item limit. */
  ItemTooLarge: { code: RpcCode.InvalidParams, status: 413, type: 'ItemTooLarge' },
  StoreUnavailable: {
    code: RpcCode.InternalError,
    status: 503,
    retryable: true,
    retryAfterSeconds: 1,
    type: 'ServiceUnavailable',
  },
  // A relayed call that ended without the target's answer.
  RequestTimeout: { code: RpcCode.RequestTimeout, status: 200, retryable: true },
  ClientGone: { code: RpcCode.RequestTimeout, status: 200 },
  /** The instance holding the call is shutting down (SIGTERM): the call was cancelled at the target first. */
  ShuttingDown: { code: RpcCode.RequestTimeout, status: 503, retryable: true, retryAfterSeconds: 1 },
  /** The answer to a request of the target could not be delivered, so the call cannot go on. */
  AnswerLost: { code: RpcCode.RequestTimeout, status: 200, retryable: true },
  /** Only to a JSON request: a streamed call the client cancelled ends without a response, as the spec asks. */
  ClientCancelled: { code: RpcCode.RequestTimeout, status: 200 },
  /**
   * A bridged call's outcome (the target's result or next round) is larger than the gateway hands over
   * between instances (`maxBridgedOutcomeBytes`): not retryable, the target already acted.
   */
  OutcomeTooLarge: { code: RpcCode.InternalError, status: 413, type: 'OutcomeTooLarge' },
  /**
   * The answers reached the target but the call's outcome was lost (its holder stopped, or could not
   * record it): not retryable — sending the call again would run the tool again.
   */
  OutcomeLost: { code: RpcCode.InternalError, status: 503, type: 'OutcomeLost' },
  /**
   * A reconnect (`Last-Event-ID`) to a stream of which only its head is left: the call's result is no
   * longer kept. Not retryable — whether the call ran is unknown to the gateway.
   */
  StreamExpired: { code: RpcCode.InternalError, status: 200, type: 'StreamExpired' },
  CrossEraInputUnsupported: { code: RpcCode.InternalError, status: 200, type: 'CrossEraInputUnsupported' },
  InputRequestFailed: { code: RpcCode.InternalError, status: 200, type: 'InputRequestFailed' },
  TooManyInputRounds: { code: RpcCode.InternalError, status: 200, type: 'TooManyInputRounds' },
  ProtocolViolation: { code: RpcCode.InternalError, status: 200 },
  UpstreamTimeout: { code: RpcCode.InternalError, status: 504 },
  Internal: { code: RpcCode.InternalError, status: 500 },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorKind = keyof typeof ERROR_TABLE;

/** An error the gateway answers with deliberately. */
export class GatewayError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Details for the client (an object is merged with the table's `type`/`retryable`; anything else is sent as is). */
    readonly data?: unknown,
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(message, options);
    this.name = 'GatewayError';
    this.retryAfterSeconds = options?.retryAfterSeconds ?? (ERROR_TABLE[kind] as ErrorSpec).retryAfterSeconds;
  }

  /** When retrying may help: the table's wait, or this error's own (a rate window's end). */
  readonly retryAfterSeconds?: number;

  get spec(): ErrorSpec {
    return ERROR_TABLE[this.kind];
  }

  /** The message clients see. */
  get rpcMessage(): string {
    return this.message;
  }
}

/** A target failed (unreachable, bad status, broken stream, credentials unavailable): the client should retry. */
export class DependencyFailedError extends GatewayError {
  constructor(
    readonly target: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super('DependencyFailed', `target ${target}: ${reason}`, { target }, options);
    this.name = 'DependencyFailedError';
  }

  override get rpcMessage(): string {
    return `DependencyFailedException: ${this.message}`;
  }
}

/** DynamoDB's item size limit (400 KB, attribute names and values included). */
export const DYNAMODB_ITEM_LIMIT_BYTES = 400 * 1024;

/** Something the gateway must store does not fit one DynamoDB item: refused, never retryable. */
export class ItemTooLargeError extends GatewayError {
  constructor(what: string, bytes: number, options?: { cause?: unknown }) {
    super(
      'ItemTooLarge',
      `${what} is too large to keep: about ${bytes} bytes, over DynamoDB's 400 KB item limit (${DYNAMODB_ITEM_LIMIT_BYTES} bytes)`,
      { limitBytes: DYNAMODB_ITEM_LIMIT_BYTES, sizeBytes: bytes },
      options,
    );
    this.name = 'ItemTooLargeError';
  }
}

/** DynamoDB did not answer or refused for capacity: retry shortly. */
export class StoreUnavailableError extends GatewayError {
  constructor(cause: unknown) {
    super('StoreUnavailable', 'session store unavailable', undefined, { cause });
    this.name = 'StoreUnavailableError';
  }

  override get rpcMessage(): string {
    return 'Session store unavailable; retry shortly';
  }
}

/**
 * Where an error body came from, carried by the body itself: `rpcError` marks the `error` object it
 * builds with a symbol-keyed property that is not enumerable, so JSON never shows it, a test's
 * `toEqual` ignores it, and it survives the envelope being copied with another id (`{ ...body, id }`).
 * Errors a target returned are parsed from JSON and carry none. The places that send messages read it
 * (`authoredErrorOf`) to count the gateway's own errors; building a body has no effect of its own.
 */
const AUTHORED = Symbol('mcp-gateway.authored-error');

/** The body of an error the gateway authored and counts (the `GatewayErrors` metric): its kind and code. */
export interface AuthoredError {
  kind: ErrorKind;
  code: number;
}

/**
 * The gateway's own error in `message` when it is one that counts: a JSON-RPC error response built by
 * `rpcError`, of a kind the table does not mark `expected`. Undefined for anything else (a result, a
 * request, a target's error relayed as it came).
 */
export function authoredErrorOf(message: unknown): AuthoredError | undefined {
  if (typeof message !== 'object' || message === null || !('error' in message)) return undefined;
  const error = (message as { error?: unknown }).error;
  if (typeof error !== 'object' || error === null) return undefined;
  const kind = (error as { [AUTHORED]?: ErrorKind })[AUTHORED];
  if (kind === undefined || (ERROR_TABLE[kind] as ErrorSpec).expected) return undefined;
  return { kind, code: ERROR_TABLE[kind].code };
}

/**
 * The JSON-RPC error body of `error` (any thrown value: unknown ones become a bare "Internal error").
 * Pure: it is counted where it is sent (`authoredErrorOf`), not here.
 */
export function rpcError(id: RequestId | null, error: unknown): JSONRPCErrorResponse {
  const known = error instanceof GatewayError ? error : new GatewayError('Internal', 'Internal error');
  const spec = known.spec;
  const own = known.data;
  let data: unknown = own;
  if (own === undefined || (typeof own === 'object' && own !== null && !Array.isArray(own))) {
    const merged: Record<string, unknown> = {
      ...(spec.type ? { type: spec.type } : {}),
      ...(own as Record<string, unknown> | undefined),
      ...(spec.retryable ? { retryable: true } : {}),
      ...(known.retryAfterSeconds ? { retryAfterSeconds: known.retryAfterSeconds } : {}),
    };
    data = Object.keys(merged).length ? merged : undefined;
  }
  const body = { code: spec.code, message: known.rpcMessage, ...(data !== undefined ? { data } : {}) };
  Object.defineProperty(body, AUTHORED, { value: known.kind, enumerable: false });
  // The SDK type models an absent id, not JSON-RPC's null (JSON-RPC 2.0 §5): the cast keeps the wire format exact.
  return { jsonrpc: '2.0', id: id as RequestId, error: body };
}

/** Shorthand: the body of a new error of `kind`. */
export function rpcErrorOf(
  id: RequestId | null,
  kind: ErrorKind,
  message: string,
  data?: unknown,
): JSONRPCErrorResponse {
  return rpcError(id, new GatewayError(kind, message, data));
}

/** The HTTP status when `error` is the whole response. */
export function httpStatusOf(error: unknown): number {
  return error instanceof GatewayError ? error.spec.status : 500;
}

/** Headers that go with `error` when it is the whole response (`Retry-After` where a wait is known). */
export function errorHeaders(error: unknown): Record<string, string> {
  const seconds = error instanceof GatewayError ? error.retryAfterSeconds : undefined;
  return seconds ? { 'retry-after': String(seconds) } : {};
}
