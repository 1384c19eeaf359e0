import { errorResponse, refuse } from '../http/errors';
import type { ExchangeContext } from '../http/exchange';
import { eventId, frame, SseStream } from '../http/sse';
import { describeError } from '../observability/logger';
import { MCP_HEADERS } from '../protocol/headers';
import { followStream, parseEventId } from '../relay/stream-log';
import type { LoadedSession } from '../state/store';
import type { LegacyDeps } from './deps';

/** How often a resumed stream polls its log while the call runs elsewhere: 100 ms, backing off to 1 s. */
export const DEFAULT_STREAM_POLL_MS = { minMs: 100, maxMs: 1000 };

/**
 * `GET /mcp` with `Last-Event-ID` (the session already loaded and its principal checked): replays
 * the events of that one stream after the id, then follows it live (the call may run on any
 * instance: its events are read from the log) until the stream's end, which is sent and closes the
 * stream. An id the gateway never issued, or one of a stream this session does not have (another
 * session's, expired, removed) → 400, and nothing of any stream. Past the invocation's deadline the
 * stream closes without its end; the client reconnects with the last id it got.
 */
export async function resumeStream(
  deps: LegacyDeps,
  loaded: LoadedSession,
  lastEventId: string,
  exchange: ExchangeContext,
): Promise<Response> {
  const sessionId = loaded.session.id;
  const headers = { [MCP_HEADERS.sessionId]: sessionId };
  const from = parseEventId(lastEventId);
  const unknown = () =>
    refuse(
      'InvalidRequest',
      "Bad Request: Last-Event-ID names no stream of this session (it ended and expired, or it is not one of this gateway's event ids)",
      {
        headers,
      },
    );
  if (!from) return unknown();
  const reader = new AbortController();
  const stopped = AbortSignal.any([reader.signal, exchange.signal]);
  let start: Awaited<ReturnType<typeof followStream>>;
  try {
    start = await followStream(deps.store, sessionId, from, {
      until: exchange.deadline,
      signal: stopped,
      pollMs: deps.streamPollMs ?? DEFAULT_STREAM_POLL_MS,
    });
  } catch (error) {
    deps.logger.warn('reading a stream log failed', { sessionId, error: describeError(error) });
    return errorResponse(null, error, headers);
  }
  if (!start.known) {
    deps.logger.info('resume refused: unknown stream', { sessionId });
    return unknown();
  }
  deps.logger.info('stream resumed', { sessionId, streamId: from.streamId, afterSeq: from.seq });
  const sse = new SseStream();
  sse.onCancel = () => reader.abort();
  sse.startKeepAlive(deps.keepAliveMs);
  const events = start.events;
  void (async () => {
    let ended = false;
    try {
      for await (const event of events) {
        if (event.data !== '') sse.write(frame(eventId(event.streamId, event.seq), event.data));
        if (event.end) ended = true;
      }
    } catch (error) {
      // The client reconnects with the last id it got; nothing is lost by closing here.
      deps.logger.warn('following a stream log failed', { sessionId, error: describeError(error) });
    }
    deps.logger.info(ended ? 'resumed stream ended' : 'resumed stream closed before its end', {
      sessionId,
      streamId: from.streamId,
    });
    sse.close();
  })();
  return sse.response(headers);
}
