import { randomUUID } from 'node:crypto';
import { recordSentError } from '../observability/metrics';
import { DependencyFailedError } from '../protocol/errors';
import { MCP_HEADERS } from '../protocol/headers';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type {
  Implementation,
  InitializeResult,
  JSONRPCMessage,
  JSONRPCRequest,
  LegacyClientCapabilities,
} from '../protocol/types';
import type { PostOptions, TargetEndpoint } from './endpoint';

/**
 * The gateway's HTTP client for a legacy-era (2025-11-25 and earlier) target, one message at a time.
 * Deliberately not the SDK `Client`: the gateway reads a target's server-to-client requests off one
 * invocation's stream while their answers are POSTed by another invocation, possibly on another
 * Lambda instance, with the target's session id and request id taken from DynamoDB. So the session
 * is a value passed in, never state of this object.
 */

export interface LegacySession {
  /** The target's Mcp-Session-Id; absent when the target runs without sessions. */
  targetSessionId?: string;
  protocolVersion: string;
}

/** The target does not speak the legacy era (its `initialize` was refused): talk to it in 2026-07-28. */
export class LegacyUnsupportedError extends Error {
  constructor(
    readonly target: string,
    reason: string,
  ) {
    super(`target ${target} does not serve the 2025 protocol: ${reason}`);
    this.name = 'LegacyUnsupportedError';
  }
}

export class LegacyTargetClient {
  constructor(
    readonly endpoint: TargetEndpoint,
    private readonly clientInfo: Implementation,
  ) {}

  get name(): string {
    return this.endpoint.name;
  }

  async initialize(
    protocolVersion: string,
    capabilities: LegacyClientCapabilities,
    signal?: AbortSignal,
  ): Promise<{ session: LegacySession; result: InitializeResult }> {
    const request: JSONRPCRequest = {
      jsonrpc: '2.0',
      id: `gw-init-${randomUUID()}`,
      method: 'initialize',
      params: { protocolVersion, capabilities, clientInfo: this.clientInfo },
    };
    let posted: Awaited<ReturnType<TargetEndpoint['request']>>;
    try {
      posted = await this.endpoint.request(request, await this.headers({ protocolVersion }), { signal });
    } catch (error) {
      // A 4xx without a JSON-RPC body (a modern-only server refusing the handshake) is not a failure of the target.
      if (error instanceof DependencyFailedError && /HTTP 4(?:0[05]|1[56])\b/.test(error.message)) {
        throw new LegacyUnsupportedError(this.name, error.message);
      }
      throw error;
    }
    const { response, headers } = posted;
    if ('error' in response) {
      if (posted.status >= 400 && posted.status < 500 && posted.status !== 401 && posted.status !== 403) {
        throw new LegacyUnsupportedError(this.name, `initialize answered ${response.error.code}`);
      }
      throw new DependencyFailedError(this.name, `initialize failed: ${response.error.message}`);
    }
    const result = response.result as InitializeResult;
    const session: LegacySession = {
      targetSessionId: headers.get(MCP_HEADERS.sessionId) ?? undefined,
      protocolVersion: typeof result.protocolVersion === 'string' ? result.protocolVersion : protocolVersion,
    };
    await this.send(session, { jsonrpc: '2.0', method: 'notifications/initialized' }, signal);
    return { session, result };
  }

  /** Sends a request on the session and reads its response; requests and notifications before it go to `listeners`. */
  async request(
    session: LegacySession,
    request: JSONRPCRequest,
    options: Pick<
      PostOptions,
      'signal' | 'listeners' | 'onClock' | 'cursor' | 'detach' | 'resumeFrom' | 'onTargetPolls'
    > = {},
  ): Promise<JSONRPCResponse> {
    const headers = await this.headers(session);
    const sessionBound = session.targetSessionId !== undefined;
    // A target that polls (SEP-1699) may end the stream before the response: resumed with Last-Event-ID.
    return (await this.endpoint.request(request, headers, { ...options, sessionBound, resumable: true })).response;
  }

  /**
   * POSTs a notification or a response (the answer to a target's request). Every message the gateway
   * sends a target but its own requests passes here: an error it authored (refusing a request the client
   * cannot take) counts in `GatewayErrors`, as one sent to a client does.
   */
  async send(session: LegacySession, message: JSONRPCMessage, signal?: AbortSignal): Promise<void> {
    recordSentError(message);
    const sessionBound = session.targetSessionId !== undefined;
    await this.endpoint.send(message, await this.headers(session), { signal, sessionBound });
  }

  /** Ends the target session (best effort: targets MAY answer 405). */
  async terminate(session: LegacySession): Promise<void> {
    if (!session.targetSessionId) return;
    await this.endpoint.delete(await this.headers(session));
  }

  private headers(session: LegacySession): Promise<Record<string, string>> {
    return this.endpoint.headers({
      [MCP_HEADERS.protocolVersion]: session.protocolVersion,
      ...(session.targetSessionId ? { [MCP_HEADERS.sessionId]: session.targetSessionId } : {}),
    });
  }
}
