import { errorResponse, refuse } from '../http/errors';
import type { ExchangeContext } from '../http/exchange';
import { eventId, frame, SseStream } from '../http/sse';
import { describeError } from '../observability/logger';
import { MCP_HEADERS } from '../protocol/headers';
import { followStream, openStreamLog, parseEventId, streamLogSettings } from '../relay/stream-log';
import { type TakeOver, takeOver } from '../relay/waiting-call';
import type { LoadedSession } from '../state/store';
import { BackgroundTasks } from '../tasks/background-tasks';
import { continueCall } from './call-relay';
import type { LegacyDeps } from './deps';
import { sessionCaller } from './session-caller';

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
  // Caught up with the log: a call that was released (or whose holder died) is taken over here.
  let taken: Extract<TakeOver, { kind: 'taken' }> | undefined;
  let checkedAt = 0;
  const caughtUp = async (): Promise<boolean> => {
    if (Date.now() - checkedAt < TAKE_OVER_CHECK_MS) return false;
    checkedAt = Date.now();
    const found = await takeOver(deps.store, loaded.session, from.streamId).catch((error) => {
      deps.logger.warn('reading a waiting call failed', { sessionId, error: describeError(error) });
      return undefined;
    });
    if (found?.kind !== 'taken') return false;
    taken = found;
    return true;
  };
  let start: Awaited<ReturnType<typeof followStream>>;
  try {
    start = await followStream(deps.store, sessionId, from, {
      until: exchange.deadline,
      signal: stopped,
      pollMs: deps.streamPollMs ?? DEFAULT_STREAM_POLL_MS,
      caughtUp,
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
  // A priming event with the id the client resumed from: a client that remembers ids per stream (the
  // TypeScript SDK) then has one to reconnect with even if this stream ends before anything new.
  sse.write(`id: ${eventId(from.streamId, from.seq)}\ndata: \n\n`);
  sse.onCancel = () => reader.abort();
  sse.startKeepAlive(deps.keepAliveMs);
  const events = start.events;
  // The stream's whole life: what fails outside its own catches is logged once, not left unhandled.
  new BackgroundTasks(deps.logger, { sessionId }).run('following a resumed stream', async () => {
    let ended = false;
    let last = from.seq;
    try {
      for await (const event of events) {
        if (event.data !== '') sse.write(frame(eventId(event.streamId, event.seq), event.data));
        last = event.seq;
        if (event.end) ended = true;
      }
    } catch (error) {
      // The client reconnects with the last id it got; nothing is lost by closing here.
      deps.logger.warn('following a stream log failed', { sessionId, error: describeError(error) });
    }
    if (taken && !ended) {
      await goOn(deps, loaded, exchange, sse, taken, last).catch((error) => {
        deps.logger.warn('going on with a released call failed', { sessionId, error: describeError(error) });
        sse.close();
      });
      return;
    }
    deps.logger.info(ended ? 'resumed stream ended' : 'resumed stream closed before its end', {
      sessionId,
      streamId: from.streamId,
    });
    sse.close();
  });
  return sse.response(headers);
}

/** How often a reconnect that follows a call held elsewhere looks whether it can take it over. */
const TAKE_OVER_CHECK_MS = 1000;

/**
 * Goes on with a call this reconnect took over (relay/waiting-call.ts), on this stream: what the log
 * holds past what was replayed is sent first (a holder that died may have written more than its
 * record says), then the call continues here, its events kept in the same stream's log.
 */
async function goOn(
  deps: LegacyDeps,
  loaded: LoadedSession,
  exchange: ExchangeContext,
  sse: SseStream,
  taken: Extract<TakeOver, { kind: 'taken' }>,
  lastSent: number,
): Promise<void> {
  const sessionId = loaded.session.id;
  const { snapshot, waiting } = taken;
  const kept = await deps.store.readStream(sessionId, waiting.streamId, 0);
  let next = Math.max(taken.seq, lastSent + 1);
  for (const event of kept) {
    if (event.seq > lastSent && event.data !== '' && !event.end)
      sse.write(frame(eventId(event.streamId, event.seq), event.data));
    next = Math.max(next, event.seq + 1);
  }
  const log = openStreamLog(deps.store, loaded.session, streamLogSettings(deps.config), deps.logger, {
    streamId: waiting.streamId,
    deadline: exchange.deadline,
    kept: kept.map((event) => event.seq),
  });
  sse.continueWith(log, next);
  deps.logger.info('took over a released call', { sessionId, streamId: waiting.streamId, step: snapshot.step.kind });
  const { call } = snapshot;
  await continueCall({
    deps,
    loaded,
    caller: sessionCaller(deps.store, loaded, true),
    accept: { sse: true, json: true },
    exchange,
    request: { jsonrpc: '2.0', id: call.clientRequestId, method: call.method, params: call.params },
    target: call.target,
    params: call.params,
    responseHeaders: { [MCP_HEADERS.sessionId]: sessionId },
    confirm: call.confirm,
    resumed: { waiting, snapshot, stream: sse },
  });
}
