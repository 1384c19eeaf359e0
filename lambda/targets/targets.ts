import { DEFAULT_TARGET_LIMITS, limitsOf, type TargetConfig, type TargetLimits } from '../config/schema';
import { CONNECT_TOOL, ConnectionRequiredError, type UserConnections } from '../connections/user-connections';
import type { GatewayLogger } from '../observability/logger';
import { elicitationModes } from '../protocol/capabilities';
import { RpcCode } from '../protocol/codes';
import { DependencyFailedError, GatewayError } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import { listingKindOf, RELAYED_CALL_METHODS } from '../protocol/methods';
import type { Implementation, JSONRPCMessage } from '../protocol/types';
import type { Era } from '../protocol/versions';
import type { Clock } from '../scheduling/clock';
import { NO_CREDENTIALS, type TargetCredentials } from './credentials';
import { TargetEndpoint } from './endpoint';
import { EraProbe, type EraProbeOptions } from './era';
import { type LegacySession, LegacyTargetClient, LegacyUnsupportedError } from './legacy-client';
import { LegacyTargetLink } from './legacy-link';
import { ModernTargetClient } from './modern-client';
import { ModernTargetLink } from './modern-link';
import { StandaloneStreams, type StandaloneStreamsOptions } from './standalone-streams';
import type { Caller, TargetCallOptions, TargetCallRequest, TargetLink } from './target-link';

/**
 * The configured targets: one endpoint, one client per era and the era verdicts, per instance.
 * `open` is the only way the era paths reach a target.
 */
export class Targets {
  readonly eras: EraProbe;
  /** The legacy target sessions' GET streams on this instance. */
  readonly streams: StandaloneStreams;
  private readonly legacy = new Map<string, LegacyTargetClient>();
  private readonly modern = new Map<string, ModernTargetClient>();

  constructor(
    readonly configs: readonly TargetConfig[],
    private readonly options: {
      clientInfo: Implementation;
      logger: GatewayLogger;
      /** The gateway's clock (era verdicts, GET streams). */
      clock: Clock;
      credentials?: ReadonlyMap<string, TargetCredentials>;
      /** The version spoken to legacy targets for 2026-07-28 callers (the newest configured legacy version). */
      legacyVersion: string;
      eras?: EraProbeOptions;
      streams?: StandaloneStreamsOptions;
      /** The gateway's `targetLimits` (a target's own `limits` override them). */
      limits?: TargetLimits;
      /** Per-user connections (targets[].userOAuth): a call without one asks the user to connect. */
      connections?: UserConnections;
    },
  ) {
    this.streams = new StandaloneStreams(options.logger, options.clock, options.streams);
    for (const config of configs) {
      const limits = limitsOf(config, options.limits ?? DEFAULT_TARGET_LIMITS);
      const endpoint = new TargetEndpoint(
        config,
        options.clock,
        options.credentials?.get(config.name) ?? NO_CREDENTIALS,
        limits,
      );
      this.legacy.set(config.name, new LegacyTargetClient(endpoint, options.clientInfo));
      this.modern.set(config.name, new ModernTargetClient(endpoint, options.clientInfo));
    }
    this.eras = new EraProbe(
      new Map(configs.map((c) => [c.name, c])),
      this.modern,
      options.logger,
      options.clock,
      options.eras,
    );
  }

  /** Per-user connections (targets[].userOAuth), when a target has them. */
  get connections(): UserConnections | undefined {
    return this.options.connections;
  }

  get names(): string[] {
    return this.configs.map((c) => c.name);
  }

  /** The 2025 version spoken to a legacy target for a 2026-07-28 caller (the newest one configured). */
  get legacyVersion(): string {
    return this.options.legacyVersion;
  }

  /** A target's timeouts and size limits. */
  limits(name: string): TargetLimits {
    return this.legacy.get(name)?.endpoint.limits ?? this.options.limits ?? DEFAULT_TARGET_LIMITS;
  }

  has(name: string): boolean {
    return this.legacy.has(name);
  }

  /** The target as `caller` reaches it, in the era decided for the pair. */
  async open(name: string, caller: Caller, signal?: AbortSignal): Promise<TargetLink> {
    const legacy = this.legacy.get(name);
    const modern = this.modern.get(name);
    if (!legacy || !modern) throw new DependencyFailedError(name, 'not configured');
    let era: Era;
    for (let attempt = 1; ; attempt++) {
      try {
        era = await this.eras.eraFor(name, caller.era, signal);
        break;
      } catch (error) {
        if (error instanceof DependencyFailedError) this.eras.forget(name);
        if (!(error instanceof ConnectionRequiredError)) throw error;
        // The era probe is shared by the requests that wait for it, and ran as whoever asked first: one
        // not connected fails it for all. A caller with its own connection probes again, as itself.
        if (attempt === 1 && (await this.options.connections?.callerConnected(name))) continue;
        // Nothing can be asked of a per-user target before this principal connects: every call consents.
        return this.watched(consentOnly(name), caller);
      }
    }
    if (era === 'modern') return this.watched(new ModernTargetLink(modern, caller), caller);
    const version = caller.era === 'legacy' ? caller.protocolVersion : this.options.legacyVersion;
    if (caller.era === 'modern') {
      return this.watched(new LegacyTargetLink(legacy, caller, version, this.options.logger, this.streams), caller);
    }
    const targetLink = new LegacyTargetLink(
      legacy,
      caller,
      version,
      this.options.logger,
      this.streams,
      async (signal) => {
        const verdict = await this.eras.modernVerdict(name, signal).catch(() => ({ serves: false }));
        return verdict.serves;
      },
    );
    return this.watched(
      new FallbackTargetLink(targetLink, () => {
        this.eras.noteLegacyUnsupported(name);
        return new ModernTargetLink(modern, caller);
      }),
      caller,
    );
  }

  /** Delivers a message (an answer, a notification) to a legacy target session, from any instance. */
  async deliver(name: string, session: LegacySession, message: JSONRPCMessage, signal?: AbortSignal): Promise<void> {
    const client = this.legacy.get(name);
    if (!client) throw new DependencyFailedError(name, 'not configured');
    await client.send(session, message, signal);
  }

  /** Ends a legacy target session (best effort). */
  async terminate(name: string, session: LegacySession): Promise<void> {
    await this.legacy.get(name)?.terminate(session);
  }

  /** The legacy-era client of a target (start-up checks). */
  legacyClient(name: string): LegacyTargetClient | undefined {
    return this.legacy.get(name);
  }

  /** The 2026-07-28 client of a target (start-up checks of a target that refuses the 2025 handshake). */
  modernClient(name: string): ModernTargetClient | undefined {
    return this.modern.get(name);
  }

  private isConnectToolCall(target: string, request: TargetCallRequest): boolean {
    return (
      request.method === 'tools/call' &&
      request.params.name === CONNECT_TOOL &&
      this.options.connections?.has(target) === true
    );
  }

  /** The connect tool (listed while not connected): connected now, or the consent (thrown, as any call's). */
  private async connectToolCall(target: string, request: TargetCallRequest): Promise<JSONRPCResponse> {
    await this.options.connections?.credentialsFor(target).headers();
    return {
      jsonrpc: '2.0',
      id: request.id ?? 0,
      result: {
        content: [
          {
            type: 'text',
            text: `Your account at ${target} is connected. List the tools again: its own tools are available now.`,
          },
        ],
      },
    };
  }

  /**
   * What a call that needs the principal's connection gets: a URL elicitation (-32042, the exception
   * form of MCP 2025-11-25 URL mode) pointing at the gateway's consent page. A 2026-07-28 caller gets it
   * as a URL round, as any target's -32042 (modern/outcome.ts). Lists leave the target out (the catalog),
   * and a 2025 client that declared no URL elicitation is told what it is missing.
   */
  private consentResponse(target: string, request: TargetCallRequest, caller: Caller): JSONRPCResponse {
    const connections = this.options.connections;
    if (!connections || listingKindOf(request.method) !== undefined) throw new ConnectionRequiredError(target);
    if (!RELAYED_CALL_METHODS.has(request.method)) {
      throw new DependencyFailedError(target, `needs you to connect your account first (call one of its tools)`);
    }
    if (caller.era === 'legacy' && !elicitationModes(caller.capabilities).url) {
      throw new GatewayError(
        'ConnectionNeedsUrlElicitation',
        `Target ${target} acts as you and needs you to connect your account in a browser, which takes URL-mode elicitation: this client did not declare the elicitation.url capability`,
        { target, requiredCapabilities: { elicitation: { url: {} } } },
      );
    }
    const { elicitationId, url, message } = connections.consent(target);
    return {
      jsonrpc: '2.0',
      id: request.id ?? 0,
      error: {
        code: RpcCode.UrlElicitationRequired,
        message: 'This request requires more information.',
        data: { elicitations: [{ mode: 'url', elicitationId, url, message }] },
      },
    };
  }

  /**
   * A target that failed may have changed (redeployed, upgraded): its era is learned again next time.
   * A per-user target the principal has not connected to answers a call with URL elicitation.
   */
  private watched(targetLink: TargetLink, caller: Caller): TargetLink {
    const eras = this.eras;
    const consent = (error: unknown, request: TargetCallRequest): JSONRPCResponse => {
      if (!(error instanceof ConnectionRequiredError) || !this.options.connections) throw error;
      return this.consentResponse(error.target, request, caller);
    };
    return {
      get target() {
        return targetLink.target;
      },
      get era() {
        return targetLink.era;
      },
      get session() {
        return targetLink.session;
      },
      reply: (message) => targetLink.reply(message),
      // Unknown until the principal connects: nothing declared.
      serverCapabilities: (signal) =>
        targetLink.serverCapabilities(signal).catch((error: unknown) => {
          if (error instanceof ConnectionRequiredError) return undefined;
          throw error;
        }),
      notify: (notification, signal) => targetLink.notify(notification, signal),
      call: async (request, options) => {
        try {
          if (this.isConnectToolCall(targetLink.target, request))
            return await this.connectToolCall(targetLink.target, request);
          return await targetLink.call(request, options);
        } catch (error) {
          if (error instanceof DependencyFailedError) eras.forget(targetLink.target);
          return consent(error, request);
        }
      },
    };
  }
}

/** The link of a per-user target the principal has not connected to: every call needs the connection. */
function consentOnly(target: string): TargetLink {
  const required = () => Promise.reject(new ConnectionRequiredError(target));
  return {
    target,
    era: 'legacy',
    call: required,
    reply: required,
    notify: required,
    serverCapabilities: required,
  };
}

/**
 * A legacy caller's target link that starts in the legacy era and, when the target refuses the
 * handshake (a modern-only server), switches to the modern era for good. Nothing was sent but the
 * refused `initialize`, so switching is safe.
 */
class FallbackTargetLink implements TargetLink {
  private current: TargetLink;
  private switched = false;

  constructor(
    first: LegacyTargetLink,
    private readonly fallback: () => TargetLink,
  ) {
    this.current = first;
  }

  get target(): string {
    return this.current.target;
  }

  get era(): Era {
    return this.current.era;
  }

  get session(): LegacySession | undefined {
    return this.current.session;
  }

  async call(request: TargetCallRequest, options: TargetCallOptions) {
    try {
      return await this.current.call(request, options);
    } catch (error) {
      if (!(error instanceof LegacyUnsupportedError) || this.switched) throw error;
      this.switched = true;
      this.current = this.fallback();
      return this.current.call(request, options);
    }
  }

  serverCapabilities(signal?: AbortSignal) {
    return this.current.serverCapabilities(signal);
  }

  reply(message: Parameters<TargetLink['reply']>[0]) {
    return this.current.reply(message);
  }

  notify(notification: Parameters<TargetLink['notify']>[0], signal?: AbortSignal) {
    return this.current.notify(notification, signal);
  }
}
