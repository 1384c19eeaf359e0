import type { CallerIdentity } from '../auth/identity';
import { errorResponse, refuse } from '../http/errors';
import type { ExchangeContext } from '../http/exchange';
import { eventId, frame, SseStream } from '../http/sse';
import { describeError } from '../observability/logger';
import { rpcErrorOf } from '../protocol/errors';
import { MCP_HEADERS } from '../protocol/headers';
import type { RequestId } from '../protocol/types';
import { BackgroundTasks } from '../scheduling/background-tasks';
import type { LoadedSession } from '../state/store';
import { continueCall } from './call-relay';
import type { LegacyDeps } from './deps';
import { releasePolicy, resumeProofKey } from './release-policy';
import { sessionCaller } from './session-caller';
import { followStream, openStreamLog, parseEventId, streamLogSettings } from './stream-log';
import { withTaskIds } from './tasks';
import { type TakeOver, takeOver } from './waiting-call';

/** How often a resumed stream polls its log while the call runs elsewhere: 100 ms, backing off to 1 s. */
export const DEFAULT_STREAM_POLL_MS = { minMs: 100, maxMs: 1000 };

/**
 * `GET /mcp` with `Last-Event-ID` (the session already loaded and its principal checked): replays
 * the events of that one stream after the id, then follows it live (the call may run on any
 * instance: its events are read from the log) until the stream's end, which is sent and closes the
 * stream. Every reconnect ends definitely, for clients that never stop reconnecting (the Python SDK
 * starts again after any 200 that ends without the response; rmcp reconnects at once after an empty
 * 200; the TypeScript SDK takes its next `Last-Event-ID` only from this response's events):
 * - a stream response always opens with an event carrying an id (the one resumed from), so it is
 *   never empty and a client always has an id to come back with;
 * - a stream whose call ended replays what is left, its final message included;
 * - a stream whose call ended, of which only its head is left (the rest expired), gets the JSON-RPC
 *   error for the request it answered, as its new end (a call still going is followed instead);
 * - an id naming the end itself (the client has everything; the TypeScript SDK comes back after an
 *   error response), an id the gateway never issued, or a stream this session does not have → 400;
 *   a gone session → 404 (legacy-path.ts).
 * A client that resumed a stream and got what it missed is proven to resume (legacy/release-policy.ts):
 * its calls are released early from then on. Past the invocation's deadline the stream closes
 * without its end; the client reconnects with the last id it got.
 */
export async function resumeStream(
  deps: LegacyDeps,
  loaded: LoadedSession,
  lastEventId: string,
  exchange: ExchangeContext,
  identity: CallerIdentity,
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
    if (deps.clock.now() - checkedAt < TAKE_OVER_CHECK_MS) return false;
    checkedAt = deps.clock.now();
    const found = await takeOver(deps.store, loaded.session, from.streamId, { clock: deps.clock }).catch((error) => {
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
      clock: deps.clock,
      signal: stopped,
      pollMs: deps.streamPollMs ?? DEFAULT_STREAM_POLL_MS,
      caughtUp,
    });
  } catch (error) {
    deps.logger.warn('reading a stream log failed', { sessionId, error: describeError(error) });
    return errorResponse(null, error, headers);
  }
  if (start.kind === 'unknown') {
    deps.logger.info('resume refused: unknown stream', { sessionId });
    return unknown();
  }
  if (start.kind === 'over') {
    deps.logger.info('resume refused: the stream ended at that event', { sessionId, streamId: from.streamId });
    return refuse(
      'InvalidRequest',
      'Bad Request: Last-Event-ID names the last event of a stream that ended (its final message); nothing follows it',
      { headers },
    );
  }
  if (start.kind === 'expired') return expiredStream(deps, loaded, from, start.requestId, headers);
  deps.logger.info('stream resumed', { sessionId, streamId: from.streamId, afterSeq: from.seq });
  const sse = new SseStream();
  // A priming event with the id the client resumed from: a client that remembers ids per stream (the
  // TypeScript SDK) then has one to reconnect with even if this stream ends before anything new.
  sse.write(`id: ${eventId(from.streamId, from.seq)}\ndata: \n\n`);
  sse.onCancel = () => reader.abort();
  sse.startKeepAlive(deps.keepAliveMs);
  const events = start.events;
  const proof = new ResumeProof(deps, loaded);
  // The stream's whole life: what fails outside its own catches is logged once, not left unhandled.
  new BackgroundTasks(deps.logger, { sessionId }).run('following a resumed stream', async () => {
    let ended = false;
    let last = from.seq;
    try {
      for await (const event of events) {
        if (event.data !== '') {
          sse.write(frame(eventId(event.streamId, event.seq), event.data));
          proof.seen();
        }
        last = event.seq;
        if (event.end) ended = true;
      }
    } catch (error) {
      // The client reconnects with the last id it got; nothing is lost by closing here.
      deps.logger.warn('following a stream log failed', { sessionId, error: describeError(error) });
    }
    if (taken && !ended) {
      // The client reconnected for a call no invocation holds: it resumes (the call goes on releasable).
      proof.seen();
      await goOn(deps, loaded, exchange, sse, taken, last, identity).catch((error) => {
        deps.logger.warn('going on with a released call failed', { sessionId, error: describeError(error) });
        sse.close();
      });
      await proof.written();
      return;
    }
    deps.logger.info(ended ? 'resumed stream ended' : 'resumed stream closed before its end', {
      sessionId,
      streamId: from.streamId,
    });
    // Nothing of the stream runs after its response ends (Lambda): the record is written first.
    await proof.written();
    sse.close();
  });
  return sse.response(headers);
}

/**
 * What is left of a stream is its head: the call's events and its end expired. The reconnect gets
 * the JSON-RPC error for the request the stream answered, kept as the stream's new end (a client
 * that reconnects after it, as the TypeScript SDK does after an error response, then gets 400).
 */
async function expiredStream(
  deps: LegacyDeps,
  loaded: LoadedSession,
  from: { streamId: string; seq: number },
  requestId: RequestId,
  headers: Record<string, string>,
): Promise<Response> {
  const sessionId = loaded.session.id;
  const message = rpcErrorOf(
    requestId,
    'StreamExpired',
    `The stream of this request is no longer kept (its events expire after streamLogTtlSeconds, its result ${deps.config.streamLogRetainSeconds} s after the call ended): whatever the call did, its result is lost; check before calling again`,
  );
  const seq = from.seq + 1;
  const data = JSON.stringify(message);
  const expiresAt = Math.min(
    loaded.session.expiresAt,
    Math.floor(deps.clock.now() / 1000) + deps.config.streamLogRetainSeconds,
  );
  try {
    await deps.store.endStream(sessionId, { streamId: from.streamId, seq, data, end: true, expiresAt }, []);
  } catch (error) {
    // The error still ends this reconnect; a next one from its id gets it again.
    deps.logger.warn('keeping the end of an expired stream failed', { sessionId, error: describeError(error) });
  }
  deps.logger.info('resume of an expired stream: the request gets an error', { sessionId, streamId: from.streamId });
  const sse = new SseStream();
  sse.write(frame(eventId(from.streamId, seq), data));
  sse.close();
  return sse.response(headers);
}

/**
 * The record that this session's client resumed a POST stream and got what it missed
 * (legacy/release-policy.ts), written once per session, before the resumed stream ends.
 */
class ResumeProof {
  private writing?: Promise<void>;

  constructor(
    private readonly deps: LegacyDeps,
    private readonly loaded: LoadedSession,
  ) {}

  seen(): void {
    const { session } = this.loaded;
    if (this.writing || session.clientResumes) return;
    // A call this reconnect takes over is decided for a client that resumes.
    session.clientResumes = true;
    const policy = releasePolicy(this.deps.config);
    // Only the proven mode decides by it: under always or never nothing is written.
    if (policy.mode !== 'proven') return;
    const info = session.clientInfo;
    const proof = info && {
      key: resumeProofKey(session.principal, info),
      expiresAt: Math.floor(this.deps.clock.now() / 1000) + policy.proofSeconds,
    };
    this.writing = this.deps.store
      .markClientResumes(session.id, proof)
      .then(() =>
        this.deps.logger.info('the client resumed a stream: its calls are released early from now on', {
          sessionId: session.id,
          client: info?.name,
        }),
      )
      .catch((error) =>
        this.deps.logger.warn('recording that the client resumes failed', {
          sessionId: session.id,
          error: describeError(error),
        }),
      );
  }

  written(): Promise<void> {
    return this.writing ?? Promise.resolve();
  }
}

/** How often a reconnect that follows a call held elsewhere looks whether it can take it over. */
const TAKE_OVER_CHECK_MS = 1000;

/**
 * Goes on with a call this reconnect took over (legacy/waiting-call.ts), on this stream: what the log
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
  identity: CallerIdentity,
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
  const log = openStreamLog(deps.store, loaded.session, streamLogSettings(deps.config, deps.clock), deps.logger, {
    streamId: waiting.streamId,
    deadline: exchange.deadline,
    kept: kept.map((event) => event.seq),
    requestId: snapshot.call.clientRequestId,
  });
  sse.continueWith(log, next);
  deps.logger.info('took over a released call', { sessionId, streamId: waiting.streamId, step: snapshot.step.kind });
  const { call } = snapshot;
  await continueCall({
    // The call's task ids as the client knows them (./tasks.ts), as when it started.
    deps: withTaskIds(deps, loaded.session),
    loaded,
    caller: sessionCaller(deps, loaded, identity, true),
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
