import { capabilitiesForModernTarget, legacySessionAsModern } from '../protocol/capabilities';
import { RpcCode } from '../protocol/codes';
import { rpcErrorOf } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { JSONRPCNotification, LegacyClientCapabilities } from '../protocol/types';
import { type Era, MODERN_PROTOCOL_VERSION } from '../protocol/versions';
import type { ModernTargetClient } from './modern-client';
import type { Caller, TargetCallOptions, TargetCallRequest, TargetLink } from './target-link';

/**
 * A 2026-07-28 target for one caller. For a 2026 caller it forwards with the caller's version and
 * what it declared. For a 2025 caller (across eras) it translates: the session's input capabilities as
 * its version allows them, and only when the request can take what the target asks; `_meta` reduced
 * to the progress token; the session's log level in `_meta` (`debug` until it sets one); `resultType` dropped from complete
 * results (2025 clients do not know it). An `input_required` result is handed back as it is to a
 * caller that can run the rounds; -32021, or input a caller cannot take, is a clear error, never a hang.
 */
/** The level a 2025 session (across eras) without `logging/setLevel` asks a 2026-07-28 target for: every level. */
const LEGACY_CALLER_LOG_LEVEL = 'debug';

export class ModernTargetLink implements TargetLink {
  readonly era: Era = 'modern';

  constructor(
    private readonly client: ModernTargetClient,
    private readonly caller: Caller,
  ) {}

  get target(): string {
    return this.client.name;
  }

  async call(request: TargetCallRequest, options: TargetCallOptions): Promise<JSONRPCResponse> {
    const legacyCaller = this.caller.era === 'legacy';
    // 2026-07-28 removed logging/setLevel: the session's level reaches the target in `_meta` instead.
    if (legacyCaller && request.method === 'logging/setLevel')
      return { jsonrpc: '2.0', id: request.id ?? 'gw-log', result: {} };
    const params = { ...request.params };
    if (legacyCaller) delete params._meta; // a 2025 request's `_meta` carries nothing a 2026 target may read
    const clientCapabilities = legacyCaller
      ? this.caller.inputCapable
        ? legacySessionAsModern(this.caller.capabilities as LegacyClientCapabilities, this.caller.protocolVersion)
        : {}
      : capabilitiesForModernTarget(this.caller.capabilities);
    const { response } = await this.client.request(
      request.method,
      params,
      {
        protocolVersion: legacyCaller ? MODERN_PROTOCOL_VERSION : this.caller.protocolVersion,
        clientCapabilities,
        // 2025: until the client sets a level, a server sends every level it logs (the official SDKs
        // filter only by a level set); 2026-07-28: a request without a level gets no log messages at all.
        logLevel: this.caller.logLevel ?? (legacyCaller ? LEGACY_CALLER_LOG_LEVEL : undefined),
        progressToken: options.progressToken,
      },
      {
        signal: options.signal,
        onNotification: options.onNotification,
        backpressure: options.backpressure,
        headers: options.headers,
      },
    );
    const answered = { ...response, id: request.id ?? response.id } as JSONRPCResponse;
    return legacyCaller ? this.toLegacy(answered) : answered;
  }

  async serverCapabilities(): Promise<undefined> {
    return undefined;
  }

  async reply(): Promise<void> {
    // 2026-07-28 targets send no requests to answer: input comes back as input_required results.
  }

  async notify(_notification: JSONRPCNotification): Promise<void> {
    // No client notifications over HTTP in 2026-07-28: closing a request is its cancellation.
  }

  private toLegacy(response: JSONRPCResponse): JSONRPCResponse {
    if ('error' in response) {
      if (response.error.code === RpcCode.MissingRequiredClientCapability) {
        const requiredCapabilities = (response.error.data as Record<string, unknown> | undefined)?.requiredCapabilities;
        return this.crossEraInput(response, 'a client capability', { requiredCapabilities });
      }
      return response;
    }
    const { resultType, ...result } = response.result as Record<string, unknown>;
    if (resultType === 'input_required') {
      if (this.caller.inputCapable) return response;
      const requests = (result.inputRequests as Record<string, { method?: string }> | undefined) ?? {};
      const methods = Object.values(requests).map((r) => r.method);
      return this.crossEraInput(response, methods.join(', ') || 'input_required', { inputRequests: methods });
    }
    return { jsonrpc: '2.0', id: response.id, result };
  }

  /** The target needs input the 2025 session cannot take: a clear error. */
  private crossEraInput(response: JSONRPCResponse, what: string, data: Record<string, unknown>): JSONRPCResponse {
    return rpcErrorOf(
      response.id ?? null,
      'CrossEraInputUnsupported',
      `Target ${this.target} (protocol 2026-07-28) needs input from the user (${what}) that this session cannot take: ` +
        'it is relayed only when declared at initialize (elicitation, its url mode, sampling, roots) and the request accepts text/event-stream',
      { target: this.target, ...data },
    );
  }
}
