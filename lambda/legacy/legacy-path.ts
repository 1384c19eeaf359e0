import { randomUUID } from 'node:crypto';
import type { CallerIdentity } from '../auth/identity';
import { errorResponse, refuse } from '../http/errors';
import type { ExchangeContext } from '../http/exchange';
import { type AcceptPreference, messageResponse, parseAccept } from '../http/responses';
import { describeError } from '../observability/logger';
import { declaresLegacyTasks } from '../protocol/capabilities';
import { GatewayError } from '../protocol/errors';
import { isWellFormedSessionId, MCP_HEADERS } from '../protocol/headers';
import type { ClientMessage } from '../protocol/jsonrpc';
import { type MethodFacts, RELAYED_CALL_METHODS, REQUEST_METHODS } from '../protocol/methods';
import type { InitializeRequestParams, InitializeResult, JSONRPCRequest, RequestId } from '../protocol/types';
import { legacyVersionsOf } from '../protocol/versions';
import { newSessionId } from '../state/records';
import type { LoadedSession, SessionRecord } from '../state/store';
import { admitSession, releaseSession } from './admission';
import { deliverAnswer, recordBeforeReading } from './answer';
import { CLIENT_STREAM_KEY, openClientStream } from './client-stream';
import type { LegacyDeps } from './deps';
import { needsResumeProof, releasePolicy, resumeProofKey } from './release-policy';
import { resumeStream } from './resume';
import type { SessionExchange } from './routes';
import { sessionCaller } from './session-caller';
import { handleSessionMessage } from './session-router';
import { tasksOfTargets, withTaskIds } from './tasks';

/**
 * What the gateway serves as one server. List changes and resource subscriptions are declared only
 * when they can reach the client: on its standalone GET stream, which `clientStreamHoldSeconds: 0`
 * turns off. `resources.subscribe` is the gateway's: it routes a subscription to the resource's target
 * (as resources/read does), and a target that does not support subscriptions answers for itself.
 * Whether a target does is not known at initialize (targets are opened lazily, per session).
 * `tasks` (2025-11-25) is declared after the targets' handshakes, to a client that declared tasks
 * itself, as far as its targets declared them (./tasks.ts).
 */
function serverCapabilities(config: LegacyDeps['config']) {
  const push = config.clientStreamHoldSeconds > 0;
  return {
    tools: { listChanged: push },
    prompts: { listChanged: push },
    resources: { subscribe: push, listChanged: push },
    completions: {},
    logging: {},
  };
}

export interface LegacyInput {
  deps: LegacyDeps;
  message: ClientMessage;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  principal: string;
  identity: CallerIdentity;
  headers: Headers;
}

/** A POST on the 2025-era path: initialize, or a message within an existing session. */
export async function handleLegacyPost(input: LegacyInput): Promise<Response> {
  const { deps, message, headers } = input;
  if (message.kind === 'request' && message.message.method === 'initialize') return initialize(input, message.message);

  const versionHeader = headers.get(MCP_HEADERS.protocolVersion);
  if (versionHeader !== null && !legacyVersionsOf(deps.config.supportedVersions).includes(versionHeader)) {
    return refuse('InvalidRequest', `Bad Request: unsupported MCP-Protocol-Version "${versionHeader}"`, {
      id: idOf(message),
      data: { supported: deps.config.supportedVersions, requested: versionHeader },
    });
  }
  if (message.kind === 'response') {
    // An answer to a relayed request whose call a live holder holds: one conditional write, nothing read
    // (answer.ts, recordBeforeReading, says how it keeps what the read below guarantees).
    const sessionId = headers.get(MCP_HEADERS.sessionId);
    // This POST's own: its recording write, if the SDK sends it twice, is recognised (recorded-answer.ts).
    const writeId = randomUUID();
    if (sessionId && isWellFormedSessionId(sessionId)) {
      const recorded = await recordBeforeReading(deps, sessionId, input.principal, message.message, writeId);
      if (recorded) return recorded;
    }
    // Any other answer reads the session and its one pending record, never the whole partition.
    const gatewayId = typeof message.message.id === 'string' ? message.message.id : '';
    const loaded = await loadOwnSession(input, (id) => deps.store.loadForAnswer(id, gatewayId));
    if (loaded instanceof Response) return loaded;
    return deliverAnswer(deps, loaded, message.message, { [MCP_HEADERS.sessionId]: loaded.session.id }, writeId);
  }
  const sessionId = headers.get(MCP_HEADERS.sessionId);
  if (sessionId && message.kind === 'request' && RELAYED_CALL_METHODS.has(message.message.method)) {
    const known = deps.sessionCache?.get(sessionId, input.principal);
    if (known) return readAhead(input, message, known);
  }
  // A request that reaches a target may relay its requests: the same read counts the session's pending
  // records for the per-session cap (call-relay.ts), so a round pays no Query of its own.
  const withPending = message.kind === 'request' && mayRelay(message.message.method);
  const loaded = await loadOwnSession(input, (id) => loadLiveSession(deps, id, withPending));
  if (loaded instanceof Response) {
    if (sessionId) deps.sessionCache?.forget(sessionId);
    return loaded;
  }
  deps.sessionCache?.put(loaded);
  return handleSessionMessage(sessionExchange(input, loaded, input.exchange), message);
}

function sessionExchange(input: LegacyInput, loaded: LoadedSession, exchange: ExchangeContext): SessionExchange {
  const headers = { [MCP_HEADERS.sessionId]: loaded.session.id };
  return { deps: input.deps, identity: input.identity, loaded, accept: input.accept, exchange, headers };
}

/**
 * A relayed call of a session this instance read recently goes to its target with what was read then,
 * while the session is read again: the call's latency no longer includes the read. The read decides
 * as it always does, and nothing is answered before it has: a session found gone, expired or another
 * principal's is answered 404 (and the call is stopped as a cancelled one: legacy/call-relay.ts, the
 * target is told). A session that changed meanwhile (a log level, a target session re-opened by
 * another instance) is the race every instance already has between its read and its call.
 */
async function readAhead(
  input: LegacyInput,
  message: Extract<ClientMessage, { kind: 'request' }>,
  known: LoadedSession,
): Promise<Response> {
  const { deps } = input;
  const refused = new AbortController();
  const stop = () => refused.abort(input.exchange.signal.reason);
  if (input.exchange.signal.aborted) stop();
  else input.exchange.signal.addEventListener('abort', stop, { once: true });
  let settle: (gone?: Error) => void = () => {};
  const sessionRead = new Promise<void>((resolve, reject) => {
    settle = (gone) => (gone ? reject(gone) : resolve());
  });
  sessionRead.catch(() => undefined); // a call that opens nothing never waits for it
  const exchange = { ...input.exchange, signal: refused.signal };
  const call = handleSessionMessage({ ...sessionExchange(input, known, exchange), sessionRead }, message);
  const loaded = await loadOwnSession(input, (id) => loadLiveSession(deps, id, true));
  if (loaded instanceof Response) {
    deps.sessionCache?.forget(known.session.id);
    settle(new Error('the session is gone'));
    refused.abort('gateway: the session is gone');
    // The stopped call winds down (the target told, its records removed) before this invocation
    // answers: on Lambda nothing runs after the response ends. What it answered is read and dropped.
    await call.then(
      (response) => discard(response.body),
      () => undefined,
    );
    return loaded;
  }
  settle();
  // The per-session cap of the call's rounds (counted when the target asks, after this) by this read,
  // and whether its client was seen resuming (another instance may have recorded it since).
  known.pendingCount = loaded.pendingCount;
  if (loaded.session.clientResumes) known.session.clientResumes = true;
  deps.sessionCache?.put(loaded);
  return call;
}

/**
 * A standalone GET: the session's stream of what its targets send outside calls (client-stream.ts).
 * As the v1 SDK server answers: 406 without `text/event-stream` in Accept, 409 for a second stream.
 */
export async function handleLegacyGet(input: Omit<LegacyInput, 'message' | 'accept'>): Promise<Response> {
  const { deps, headers } = input;
  const accept = headers.get('accept');
  if (!accept || !parseAccept(accept).sse) {
    return refuse('NotAcceptable', 'Not Acceptable: Client must accept text/event-stream');
  }
  const versionHeader = headers.get(MCP_HEADERS.protocolVersion);
  if (versionHeader !== null && !legacyVersionsOf(deps.config.supportedVersions).includes(versionHeader)) {
    return refuse('InvalidRequest', `Bad Request: unsupported MCP-Protocol-Version "${versionHeader}"`, {
      data: { supported: deps.config.supportedVersions, requested: versionHeader },
    });
  }
  const loaded = await loadOwnSession(input, (id) => loadLiveSession(deps, id));
  if (loaded instanceof Response) return loaded;
  // A task's status the targets send there reaches the client with the gateway's task id (./tasks.ts).
  return openClientStream(withTaskIds(deps, loaded.session), loaded, input.exchange, {
    [MCP_HEADERS.sessionId]: loaded.session.id,
  });
}

/** DELETE ends the session (and everything in its partition), and its target sessions. */
export async function handleLegacyDelete(input: Omit<LegacyInput, 'message' | 'accept'>): Promise<Response> {
  const loaded = await loadOwnSession(input, (id) => loadLiveSession(input.deps, id));
  if (loaded instanceof Response) return loaded;
  try {
    await input.deps.store.deleteSession(loaded.session.id);
    input.deps.sessionCache?.forget(loaded.session.id);
  } catch (error) {
    return errorResponse(null, error);
  }
  // Its GET stream, when this instance holds it (elsewhere it ends when the targets forget the session).
  input.deps.activeCalls.get(loaded.session.id, CLIENT_STREAM_KEY)?.cancelByClient(undefined);
  await releaseSession(input.deps, loaded.session);
  await terminateTargetSessions(input.deps, loaded);
  input.deps.logger.info('session deleted', { sessionId: loaded.session.id });
  return new Response(null, { status: 200 });
}

/**
 * `GET` with `Last-Event-ID` resumes a stream of the session (legacy/resume.ts); the session is
 * loaded and checked as for any request (another principal's or an unknown session → 404).
 */
export async function handleLegacyResume(
  input: Omit<LegacyInput, 'message' | 'accept'> & { lastEventId: string },
): Promise<Response> {
  const loaded = await loadOwnSession(input, (id) => loadLiveSession(input.deps, id));
  if (loaded instanceof Response) return loaded;
  return resumeStream(input.deps, loaded, input.lastEventId, input.exchange, input.identity);
}

/** Ends the session's target sessions (best effort: targets MAY answer 405). */
async function terminateTargetSessions(deps: LegacyDeps, loaded: LoadedSession): Promise<void> {
  await Promise.all(
    [...loaded.targets.values()].map((record) =>
      deps.targets
        .terminate(record.target, { targetSessionId: record.targetSessionId, protocolVersion: record.protocolVersion })
        .catch(() => undefined),
    ),
  );
}

/**
 * The session when it is live. An expired one that is still stored (DynamoDB's TTL deletes items
 * lazily, within days) is ended now, as DELETE ends one: its target sessions are terminated and its
 * partition removed — so a client that comes back after expiry ends what it left at its targets. Either way
 * the client sees 404 (the same read; nothing extra for a live session).
 */
async function loadLiveSession(
  deps: LegacyDeps,
  sessionId: string,
  withPending = false,
): Promise<LoadedSession | undefined> {
  const loaded = await deps.store.loadSession(sessionId, undefined, { includeExpired: true, withPending });
  if (!loaded || loaded.session.expiresAt > Math.floor(deps.clock.now() / 1000)) return loaded;
  await terminateTargetSessions(deps, loaded);
  await deps.store
    .deleteSession(sessionId)
    .catch((error) => deps.logger.warn('removing an expired session failed', { error: describeError(error) }));
  deps.logger.info('expired session ended', { sessionId });
  return undefined;
}

/** 400 without a session id; 404 for unknown, expired, deleted, or another principal's session. */
async function loadOwnSession<T extends { session: SessionRecord }>(
  input: Omit<LegacyInput, 'message' | 'accept'> & { message?: ClientMessage },
  load: (sessionId: string) => Promise<T | undefined>,
): Promise<T | Response> {
  const { deps, headers, principal } = input;
  const id = input.message ? idOf(input.message) : null;
  const sessionId = headers.get(MCP_HEADERS.sessionId);
  if (!sessionId) {
    return refuse('SessionRequired', 'Bad Request: Mcp-Session-Id header is required (send initialize first)', { id });
  }
  let loaded: T | undefined;
  try {
    loaded = isWellFormedSessionId(sessionId) ? await load(sessionId) : undefined;
  } catch (error) {
    deps.logger.error('loading the session failed', { error: describeError(error) });
    return errorResponse(id, error);
  }
  if (!loaded || loaded.session.principal !== principal) {
    // Another principal's session is indistinguishable from a missing one.
    return refuse('SessionNotFound', 'Session not found: it expired or was deleted; initialize a new one', { id });
  }
  // The transports page (2025-11-25): a request with an invalid or unsupported MCP-Protocol-Version is
  // answered 400; the client SHOULD send the version negotiated at initialize. A version the gateway
  // serves but not the negotiated one is served as the official SDK servers do, and as the official
  // conformance suite expects (server-sse-multiple-streams and server-sse-polling send 2025-03-26 within
  // a 2025-11-25 session); the request is read by the session's negotiated version, never the header's.
  // No header stays accepted (a 2025-03-26 client sends none).
  const versionHeader = headers.get(MCP_HEADERS.protocolVersion);
  if (versionHeader !== null && !legacyVersionsOf(deps.config.supportedVersions).includes(versionHeader)) {
    return refuse('InvalidRequest', `Bad Request: unsupported MCP-Protocol-Version "${versionHeader}"`, {
      id,
      data: { supported: deps.config.supportedVersions, requested: versionHeader },
    });
  }
  return loaded;
}

async function initialize(input: LegacyInput, request: JSONRPCRequest): Promise<Response> {
  const { deps, accept, principal } = input;
  const params = (request.params ?? {}) as Partial<InitializeRequestParams>;
  if (
    typeof params.protocolVersion !== 'string' ||
    typeof params.capabilities !== 'object' ||
    params.capabilities === null
  ) {
    return refuse('MalformedParams', 'Invalid params: initialize needs protocolVersion and capabilities', {
      id: request.id,
    });
  }
  const versions = legacyVersionsOf(deps.config.supportedVersions);
  if (versions.length === 0) {
    return refuse('InvalidRequest', 'This gateway serves only the stateless protocol; initialize is not supported', {
      id: request.id,
      data: { supported: deps.config.supportedVersions, requested: params.protocolVersion },
    });
  }
  // The requested version when supported, else our latest: the client decides whether it can go on.
  const protocolVersion = versions.includes(params.protocolVersion) ? params.protocolVersion : versions[0]!;
  const now = Math.floor(input.deps.clock.now() / 1000);
  const session: SessionRecord = {
    id: newSessionId(),
    principal,
    protocolVersion,
    clientCapabilities: params.capabilities,
    clientInfo: params.clientInfo,
    createdAt: now,
    expiresAt: now + deps.config.sessionTimeoutSeconds,
  };
  const policy = releasePolicy(deps.config);
  // A client this principal was seen resuming with before is released early from its first call on.
  const proven = needsResumeProof(policy, session)
    ? deps.store.hasResumeProof(resumeProofKey(principal, session.clientInfo!)).catch((error) => {
        deps.logger.warn('reading whether the client resumes failed; it is held', { error: describeError(error) });
        return false;
      })
    : undefined;
  try {
    await admitSession(deps, session);
  } catch (error) {
    // DEBUG: the access log already has the 429; a flood of refusals must not flood the log too.
    deps.logger.debug('initialize refused', { kind: error instanceof GatewayError ? error.kind : 'unknown' });
    await proven; // nothing of the request outlives its response
    return errorResponse(request.id, error);
  }
  if (await proven) session.clientResumes = true;
  try {
    await deps.store.createSession(session);
  } catch (error) {
    deps.logger.error('creating the session failed', { error: describeError(error) });
    await releaseSession(deps, session);
    return errorResponse(request.id, error);
  }
  deps.logger.info('session initialized', { sessionId: session.id, protocolVersion, client: params.clientInfo?.name });
  const capabilities: InitializeResult['capabilities'] = serverCapabilities(deps.config);
  if (declaresLegacyTasks(session.clientCapabilities, protocolVersion)) {
    // Only a client that has tasks itself waits for the targets' handshakes to learn whether any has them.
    const caller = sessionCaller(deps, { session, targets: new Map() }, input.identity, false);
    const tasks = await tasksOfTargets(deps, caller, input.exchange.signal);
    if (tasks) capabilities.tasks = tasks;
  }
  const result: InitializeResult = { protocolVersion, capabilities, serverInfo: deps.serverInfo };
  return messageResponse({ jsonrpc: '2.0', id: request.id, result }, accept, { [MCP_HEADERS.sessionId]: session.id });
}

/** A method that names what it calls reaches a target, whose requests may be relayed to the client. */
function mayRelay(method: string): boolean {
  const facts: MethodFacts | undefined = (REQUEST_METHODS as Record<string, MethodFacts>)[method];
  return facts?.nameSource !== undefined;
}

function idOf(message: ClientMessage): RequestId | null {
  return message.kind === 'notification' ? null : (message.message.id ?? null);
}

async function discard(body: ReadableStream<Uint8Array> | null): Promise<void> {
  if (!body) return;
  const reader = body.getReader();
  while (!(await reader.read()).done) {
    // nothing to keep
  }
}
