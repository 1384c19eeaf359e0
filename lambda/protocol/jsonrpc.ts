import type {
  JSONRPCErrorResponse,
  JSONRPCNotification,
  JSONRPCRequest,
  JSONRPCResultResponse,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { ERROR_TABLE, type ErrorKind } from './errors';
import { exactNumberId, isReservedStringId, MAX_REQUEST_ID_LENGTH, rawValueAt } from './request-id';

/** JSON-RPC 2.0 message guards and the parser of what clients POST (both eras). */

export type JSONRPCResponse = JSONRPCResultResponse | JSONRPCErrorResponse;

export type ClientMessage =
  | { kind: 'request'; message: JSONRPCRequest }
  | { kind: 'notification'; message: JSONRPCNotification }
  | { kind: 'response'; message: JSONRPCResponse };

export type ParseOutcome =
  | { ok: true; value: ClientMessage }
  | { ok: false; kind: RefusalKind; code: number; message: string; id: RequestId | null };

type RefusalKind = Extract<ErrorKind, 'ParseError' | 'InvalidRequest' | 'NestingTooDeep' | 'ParamsTooDeep'>;

/**
 * How deeply nested a message may be. JSON.parse copes with far more, but the gateway and the SDKs
 * walk and re-serialize messages recursively (JSON.stringify overflowed the stack at a few thousand
 * levels), so deeper input is refused where it enters: a client's message (-32602 for params,
 * -32600 otherwise) and a target's (targets/: DependencyFailedException). MCP's own structures are
 * a few levels deep; 128 leaves arguments and schemas plenty of room.
 */
export const MAX_JSON_DEPTH = 128;

/** Whether `value` nests objects/arrays deeper than `max` (iterative: it must not overflow itself). */
export function nestedDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (typeof current !== 'object' || current === null) continue;
    if (depth >= max) return true;
    for (const child of Object.values(current)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

function refusal(kind: RefusalKind, message: string, id: RequestId | null): ParseOutcome {
  return { ok: false, kind, code: ERROR_TABLE[kind].code, message, id };
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value));
}

/** Top-level members beyond the message's own are refused, as the SDK's strict schemas do. */
function onlyKeys(value: Record<string, unknown>, allowed: readonly string[]): boolean {
  return Object.keys(value).every((key) => allowed.includes(key));
}

export function isResponse(value: unknown): value is JSONRPCResponse {
  return (
    isObject(value) &&
    value.jsonrpc === '2.0' &&
    'id' in value &&
    ('result' in value || 'error' in value) &&
    !('method' in value)
  );
}

export function isRequest(value: unknown): value is JSONRPCRequest {
  return isObject(value) && typeof value.method === 'string' && 'id' in value;
}

export function isNotification(value: unknown): value is JSONRPCNotification {
  return isObject(value) && typeof value.method === 'string' && !('id' in value);
}

function isParams(value: unknown): boolean {
  if (value === undefined) return true;
  if (!isObject(value)) return false;
  const meta = value._meta;
  if (meta === undefined) return true;
  if (!isObject(meta)) return false;
  const token = meta.progressToken;
  return token === undefined || isId(token);
}

function isErrorObject(value: unknown): boolean {
  return (
    isObject(value) &&
    typeof value.code === 'number' &&
    Number.isInteger(value.code) &&
    typeof value.message === 'string'
  );
}

/**
 * The id at `path` of the message `text`, exactly as the client wrote it (./request-id.ts), or an
 * error when it is longer than MAX_REQUEST_ID_LENGTH or a string the gateway reserves.
 */
function exactIdAt(text: string, path: readonly string[], id: RequestId): RequestId | { refused: string } {
  if (typeof id === 'string') {
    if (id.length > MAX_REQUEST_ID_LENGTH)
      return { refused: `Invalid Request: a request id is at most ${MAX_REQUEST_ID_LENGTH} characters` };
    if (isReservedStringId(id)) return { refused: 'Invalid Request: a string id may not start with U+0000' };
    return id;
  }
  // Only a value JSON.parse could not keep is looked up in the text (a scan of the body): beyond 2^53,
  // or -0. Any other number id is its value exactly (1.0 and 1e3 are the number 1 and 1000, and come
  // back so), and costs nothing.
  if (Number.isSafeInteger(id) && !Object.is(id, -0)) return id;
  const token = rawValueAt(text, path, (candidate) => Number(candidate) === id);
  if (token === undefined) return id;
  if (token.length > MAX_REQUEST_ID_LENGTH)
    return { refused: `Invalid Request: a request id is at most ${MAX_REQUEST_ID_LENGTH} characters` };
  return exactNumberId(id, token);
}

/**
 * Parses one POSTed JSON-RPC message. Batches were removed from MCP in 2025-06-18 and are refused.
 * Checked by hand rather than with the SDK's schemas: the shape is all the gateway needs, and the
 * params travel on to the target untouched.
 */
export function parseClientMessage(text: string): ParseOutcome {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return refusal('ParseError', 'Parse error: the body is not valid JSON', null);
  }
  if (Array.isArray(raw)) {
    return refusal('InvalidRequest', 'Invalid Request: JSON-RPC batches are not supported', null);
  }
  // The id exactly as written (a number's text, e.g. 9007199254740993 or -0), so every response echoes it.
  const exact = isObject(raw) && isId(raw.id) ? exactIdAt(text, ['id'], raw.id) : null;
  if (exact !== null && typeof exact === 'object') return refusal('InvalidRequest', exact.refused, null);
  const id = exact;
  if (isObject(raw) && id !== null) raw.id = id;
  if (nestedDeeperThan(raw)) {
    // In a request or notification only `params` can nest; in anything else (an answer) it is the message.
    return isObject(raw) && typeof raw.method === 'string'
      ? refusal('ParamsTooDeep', `Invalid params: nested deeper than ${MAX_JSON_DEPTH} levels`, id)
      : refusal('NestingTooDeep', `Invalid Request: nested deeper than ${MAX_JSON_DEPTH} levels`, id);
  }
  if (isObject(raw) && raw.jsonrpc === '2.0') {
    if (typeof raw.method === 'string' && isParams(raw.params)) {
      if (!('id' in raw) && onlyKeys(raw, ['jsonrpc', 'method', 'params'])) {
        // A cancellation names a request by its id: kept exactly too, so it derives the same target call id.
        const params = raw.params as Record<string, unknown> | undefined;
        if (raw.method === 'notifications/cancelled' && params && isId(params.requestId)) {
          const requestId = exactIdAt(text, ['params', 'requestId'], params.requestId);
          if (typeof requestId === 'object') return refusal('InvalidRequest', requestId.refused, null);
          params.requestId = requestId;
        }
        return { ok: true, value: { kind: 'notification', message: raw as JSONRPCNotification } };
      }
      if (isId(raw.id) && onlyKeys(raw, ['jsonrpc', 'id', 'method', 'params'])) {
        return { ok: true, value: { kind: 'request', message: raw as JSONRPCRequest } };
      }
    } else if (!('method' in raw) && isId(raw.id)) {
      if (isObject(raw.result) && onlyKeys(raw, ['jsonrpc', 'id', 'result'])) {
        return { ok: true, value: { kind: 'response', message: raw as JSONRPCResultResponse } };
      }
      if (isErrorObject(raw.error) && onlyKeys(raw, ['jsonrpc', 'id', 'error'])) {
        return { ok: true, value: { kind: 'response', message: raw as JSONRPCErrorResponse } };
      }
    }
  }
  return refusal('InvalidRequest', 'Invalid Request: not a JSON-RPC 2.0 request, notification or response', id);
}
