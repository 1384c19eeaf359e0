import { randomUUID } from 'node:crypto';
import type {
  ClientCapabilities,
  Implementation,
  InitializeResult,
  JSONRPCMessage,
  JSONRPCRequest,
  RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { ClientCapabilities as ModernClientCapabilities } from '@modelcontextprotocol/server';
import type { TargetConfig } from '../config/schema';
import { recordTargetLatency } from '../observability/metrics';
import { NO_CREDENTIALS, type TargetCredentials } from './credentials';
import type { EraLookup } from './era-probe';
import { META_KEYS, MODERN_PROTOCOL_VERSION, type ModernTargetClient } from './modern-client';
import { isResponse, type JSONRPCResponse, readResponseStream, type StreamListeners } from './response-stream';

/**
 * The gateway's HTTP client to one target (an upstream MCP server, Streamable HTTP, 2025 era).
 * Deliberately not the SDK `Client`: the gateway must read a target's server-to-client requests
 * off one invocation's stream while their answers are POSTed by another invocation, possibly on
 * another Lambda instance, with the target's session id and request id taken from DynamoDB.
 * Node's fetch keeps connections to targets alive between calls.
 */

export type { JSONRPCResponse } from './response-stream';

/** The target failed (unreachable, bad status, broken stream): surfaced as DependencyFailedException. */
export class DependencyFailedError extends Error {
  constructor(
    readonly target: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`target ${target}: ${reason}`, options);
    this.name = 'DependencyFailedError';
  }
}

/** The target no longer knows our session (HTTP 404): re-initialize and try again. */
export class TargetSessionExpiredError extends Error {
  constructor(readonly target: string) {
    super(`target ${target}: session expired`);
    this.name = 'TargetSessionExpiredError';
  }
}

export interface UpstreamSession {
  targetSessionId?: string;
  protocolVersion: string;
}

/** What a relay wants to hear while a target answers. */
export type StreamHandlers = StreamListeners;

export interface RequestOptions {
  signal?: AbortSignal;
  handlers?: StreamHandlers;
  /**
   * 2026-07-28 targets only (ignored for 2025 sessions): the input capabilities to declare upstream
   * for this request. When set, an `input_required` result is returned as is (with `resultType`),
   * for the caller to run the rounds (lambda/legacy/relay.ts); unset, it is a clear error.
   */
  modernInput?: ModernClientCapabilities;
}

export interface InitializeOutcome {
  session: UpstreamSession;
  result: InitializeResult;
}

/**
 * For a 2026-07-28 target the 2025-era path still uses this client: `initialize` then yields a
 * session without id whose version is 2026-07-28, and requests on it go out as modern requests
 * (see ModernBridge below). Set by the bootstrap; absent in tests that build a bare client.
 */
export interface ModernUpstream {
  eras: EraLookup;
  client: ModernTargetClient;
}

export class TargetClient {
  constructor(
    readonly config: TargetConfig,
    private readonly clientInfo: Implementation,
    private readonly modern?: ModernUpstream,
    /** The gateway's own credentials for this target (lambda/targets/credentials.ts); never the client's. */
    private readonly credentials: TargetCredentials = NO_CREDENTIALS,
  ) {}

  get name(): string {
    return this.config.name;
  }

  async initialize(
    protocolVersion: string,
    capabilities: ClientCapabilities,
    signal?: AbortSignal,
  ): Promise<InitializeOutcome> {
    // --- modern target (lambda/stateless owns the 2026-07-28 side; this keeps 2025 sessions working) ---
    if (this.modern && (await this.modern.eras.eraOf(this.name, signal)).era === 'modern')
      return this.modernSession(signal);
    const request: JSONRPCRequest = {
      jsonrpc: '2.0',
      id: `gw-init-${randomUUID()}`,
      method: 'initialize',
      params: { protocolVersion, capabilities, clientInfo: this.clientInfo },
    };
    const { response, headers } = await this.exchange({ protocolVersion }, request, { signal }, false);
    if ('error' in response) {
      throw new DependencyFailedError(this.name, `initialize failed: ${response.error.message}`);
    }
    const result = response.result as InitializeResult;
    const session: UpstreamSession = {
      targetSessionId: headers.get('mcp-session-id') ?? undefined,
      protocolVersion: typeof result.protocolVersion === 'string' ? result.protocolVersion : protocolVersion,
    };
    await this.send(session, { jsonrpc: '2.0', method: 'notifications/initialized' }, signal);
    return { session, result };
  }

  /** Sends a request and relays everything the target streams before its response. */
  async request(
    session: UpstreamSession,
    request: JSONRPCRequest,
    options: RequestOptions = {},
  ): Promise<JSONRPCResponse> {
    if (isModernSession(session) && this.modern) return bridgeModernRequest(this.modern, request, options);
    return (await this.exchange(session, request, options, true)).response;
  }

  /** POSTs a notification or a response (the answer to a target's request); targets reply 202. */
  async send(session: UpstreamSession, message: JSONRPCMessage, signal?: AbortSignal): Promise<void> {
    // 2026-07-28 over HTTP has no client notifications (closing a request cancels it) and no server requests to answer.
    if (isModernSession(session)) return;
    let res: Response;
    try {
      res = await fetch(this.config.url, {
        method: 'POST',
        headers: await this.headers(session),
        body: JSON.stringify(message),
        signal,
      });
    } catch (error) {
      throw this.failure(error, 'unreachable');
    }
    await res.body?.cancel().catch(() => undefined);
    if (res.status === 401) this.credentials.rejected();
    if (res.status === 404 && session.targetSessionId) throw new TargetSessionExpiredError(this.name);
    if (!res.ok) throw new DependencyFailedError(this.name, `HTTP ${res.status}`);
  }

  /** Ends the target session (best effort: targets MAY answer 405). */
  async terminate(session: UpstreamSession): Promise<void> {
    if (!session.targetSessionId) return;
    const res = await fetch(this.config.url, {
      method: 'DELETE',
      headers: await this.headers(session),
      signal: AbortSignal.timeout(5000),
    });
    await res.body?.cancel().catch(() => undefined);
  }

  /** A 2026-07-28 target has no handshake: its DiscoverResult stands in for the InitializeResult. */
  private async modernSession(signal?: AbortSignal): Promise<InitializeOutcome> {
    const { discover } = await this.modern!.eras.eraOf(this.name, signal);
    const serverInfo = (discover?._meta as Record<string, unknown> | undefined)?.[META_KEYS.serverInfo] as
      | Implementation
      | undefined;
    const result = {
      protocolVersion: MODERN_PROTOCOL_VERSION,
      capabilities: (discover?.capabilities ?? {}) as InitializeResult['capabilities'],
      serverInfo: serverInfo ?? { name: this.name, version: 'unknown' },
    } as InitializeResult;
    return { session: { protocolVersion: MODERN_PROTOCOL_VERSION }, result };
  }

  private async headers(session: UpstreamSession): Promise<Record<string, string>> {
    const headers: Record<string, string> = {
      ...(await credentialHeaders(this.name, this.credentials)),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': session.protocolVersion,
    };
    if (session.targetSessionId) headers['mcp-session-id'] = session.targetSessionId;
    return headers;
  }

  private failure(error: unknown, reason: string): Error {
    if (error instanceof Error && error.name === 'AbortError') return error;
    if (error instanceof DependencyFailedError) return error;
    return new DependencyFailedError(this.name, reason, { cause: error });
  }

  private async exchange(
    session: UpstreamSession,
    request: JSONRPCRequest,
    options: { signal?: AbortSignal; handlers?: StreamHandlers },
    withSession: boolean,
  ): Promise<{ response: JSONRPCResponse; headers: Headers }> {
    let res: Response;
    const headers = await this.headers(withSession ? session : { protocolVersion: session.protocolVersion });
    try {
      const started = performance.now();
      res = await fetch(this.config.url, {
        method: 'POST',
        headers,
        body: JSON.stringify(request),
        signal: options.signal,
      });
      // Time to the target's response headers: its responsiveness, not a person's time to answer.
      recordTargetLatency(this.name, performance.now() - started);
    } catch (error) {
      throw this.failure(error, 'unreachable');
    }
    if (res.status === 401) this.credentials.rejected();
    if (res.status === 404 && withSession && session.targetSessionId) {
      await res.body?.cancel().catch(() => undefined);
      throw new TargetSessionExpiredError(this.name);
    }
    const contentType = res.headers.get('content-type') ?? '';
    if (contentType.includes('text/event-stream') && res.ok) {
      return { response: await this.readStream(res, request.id, options), headers: res.headers };
    }
    let body: unknown;
    try {
      if (contentType.includes('json')) body = await res.json();
      else await res.body?.cancel();
    } catch (error) {
      throw this.failure(error, `HTTP ${res.status} with an unreadable body`);
    }
    if (isResponse(body)) {
      // A JSON-RPC error with an HTTP error status is still the target's answer (e.g. 400 Invalid params).
      if (res.ok || 'error' in body) return { response: { ...body, id: request.id }, headers: res.headers };
    }
    throw new DependencyFailedError(this.name, res.ok ? 'answered without a JSON-RPC response' : `HTTP ${res.status}`);
  }

  private async readStream(
    res: Response,
    id: RequestId,
    options: { signal?: AbortSignal; handlers?: StreamHandlers },
  ): Promise<JSONRPCResponse> {
    let response: JSONRPCResponse | undefined;
    try {
      response = await readResponseStream(res, id, options.handlers);
    } catch (error) {
      throw this.failure(error, 'the stream broke before the response');
    }
    if (!response) throw new DependencyFailedError(this.name, 'the stream ended before the response');
    return response;
  }
}

/** The target's credential headers; a failure to obtain them is the target's failure (DependencyFailedException). */
export async function credentialHeaders(
  target: string,
  credentials: TargetCredentials,
): Promise<Record<string, string>> {
  try {
    return await credentials.headers();
  } catch (error) {
    throw new DependencyFailedError(
      target,
      `outbound credentials unavailable: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

export function isModernSession(session: UpstreamSession): boolean {
  return session.protocolVersion >= MODERN_PROTOCOL_VERSION;
}

/**
 * A 2025-era session's request to a 2026-07-28 target, sent as a modern request. Without
 * `modernInput` it declares no input capabilities and a target that needs input (-32021 or
 * input_required) gets a clear error instead of a hang. With it (the 2025 relay, which relays the
 * rounds to the client), those capabilities are declared and an input_required result is handed
 * back untouched; -32021 (something the session did not declare) stays the clear error.
 * `resultType` is dropped from complete results: 2025 clients do not know it.
 */
async function bridgeModernRequest(
  modern: ModernUpstream,
  request: JSONRPCRequest,
  options: RequestOptions,
): Promise<JSONRPCResponse> {
  const params = { ...(request.params as Record<string, unknown> | undefined) };
  const meta = params._meta as Record<string, unknown> | undefined;
  if (meta) {
    // Keep only what a 2026 request may carry from a 2025 one (the progress token).
    params._meta = meta.progressToken !== undefined ? { progressToken: meta.progressToken } : undefined;
  }
  const { response } = await modern.client.request(
    request.method,
    params,
    { clientCapabilities: options.modernInput ?? {} },
    {
      signal: options.signal,
      onNotification: (notification) => options.handlers?.onNotification?.(notification),
    },
  );
  const target = modern.client.name;
  if ('error' in response) {
    if (response.error.code === -32021) {
      const requiredCapabilities = (response.error.data as Record<string, unknown> | undefined)?.requiredCapabilities;
      return crossEraInputError(target, request.id, 'a client capability', { requiredCapabilities });
    }
    return { ...response, id: request.id };
  }
  const { resultType, ...result } = response.result as Record<string, unknown>;
  if (resultType === 'input_required') {
    if (options.modernInput) return { jsonrpc: '2.0', id: request.id, result: response.result };
    const methods = Object.values((result.inputRequests as Record<string, { method?: string }> | undefined) ?? {}).map(
      (r) => r.method,
    );
    return crossEraInputError(target, request.id, methods.join(', ') || 'input_required', { inputRequests: methods });
  }
  return { jsonrpc: '2.0', id: request.id, result };
}

/** A 2026-07-28 target needs input the 2025 session cannot take: a clear error, never a hang. */
export function crossEraInputError(
  target: string,
  id: RequestId,
  what: string,
  data: Record<string, unknown>,
): JSONRPCResponse {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: -32603,
      message:
        `Target ${target} (protocol 2026-07-28) needs input from the user (${what}) that this session cannot take: ` +
        'it is relayed only when declared at initialize (elicitation, its url mode, sampling, roots) and the request accepts text/event-stream',
      data: { type: 'CrossEraInputUnsupported', target, ...data },
    },
  };
}
