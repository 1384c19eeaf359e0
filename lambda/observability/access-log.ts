import { isWellFormedSessionId } from '../protocol/headers';
import type { GatewayLogger } from './logger';
import type { RequestContext } from './request-context';

/**
 * The access log: one INFO line per MCP request, written when its response has ended (for a stream,
 * when the last event went out or the client left), so the HTTP status, the error code and the
 * input requests relayed on the stream are known. It names who called what and how it went; it
 * never carries tokens, header values other than the session id, arguments or results.
 *
 * @example
 * {"level":"INFO","message":"mcp request","requestId":"…","traceId":"4bf9…","principal":"anonymous",
 *  "sessionId":"…","era":"legacy","httpMethod":"POST","method":"tools/call","target":"demo","tool":"echo",
 *  "status":200,"inputRounds":0,"durationMs":12,"outcome":"complete",…}
 */

export const ACCESS_LOG_MESSAGE = 'mcp request';

import type { ResponseOutcome } from './response-outcome';

export type { ResponseOutcome };

export interface AccessLogEntry {
  requestId: string;
  traceId: string;
  principal?: string;
  sessionId?: string;
  era?: string;
  httpMethod: string;
  kind?: string;
  method?: string;
  target?: string;
  tool?: string;
  status: number;
  rpcErrorCode?: number;
  inputRounds: number;
  durationMs: number;
  outcome: ResponseOutcome;
}

/** The entry for a request whose response ended now. */
export function accessLogEntry(
  context: RequestContext,
  request: { readonly url: string; readonly method: string; readonly headers: Headers },
  response: Response,
  outcome: ResponseOutcome,
): AccessLogEntry {
  const { facts } = context;
  // The session the request named, or the one `initialize` just created; a malformed value is not echoed.
  const session = request.headers.get('mcp-session-id') ?? response.headers.get('mcp-session-id') ?? undefined;
  const entry: AccessLogEntry = {
    requestId: context.requestId,
    traceId: context.trace.traceId,
    principal: facts.principal,
    sessionId: session && isWellFormedSessionId(session) ? session : undefined,
    era: facts.era,
    httpMethod: request.method,
    kind: facts.kind,
    method: facts.method,
    target: facts.target,
    tool: facts.tool,
    status: response.status,
    rpcErrorCode: facts.rpcErrorCode,
    inputRounds: facts.inputRounds,
    durationMs: Math.round(performance.now() - context.startedAt),
    outcome,
  };
  // Absent facts are left out rather than written as null.
  for (const key of Object.keys(entry) as Array<keyof AccessLogEntry>) if (entry[key] === undefined) delete entry[key];
  return entry;
}

export function writeAccessLog(logger: GatewayLogger, entry: AccessLogEntry): void {
  logger.info(ACCESS_LOG_MESSAGE, { ...entry });
}
