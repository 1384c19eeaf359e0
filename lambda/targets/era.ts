import type { TargetConfig } from '../config/schema';
import { ConnectionRequiredError } from '../connections/user-connections';
import type { GatewayLogger } from '../observability/logger';
import { DependencyFailedError } from '../protocol/errors';
import type { DiscoverResult } from '../protocol/types';
import { type Era, MODERN_PROTOCOL_VERSION } from '../protocol/versions';
import type { Clock } from '../scheduling/clock';
import { SingleFlight } from '../scheduling/single-flight';
import type { ModernTargetClient } from './modern-client';

/**
 * Which protocol era the gateway speaks to each target: decided here, and only here.
 *
 * The rule is "transparent first, across eras when needed": a caller's own era when the target serves it,
 * the other era only when it does not. What a target serves is learned as a dual-era client learns
 * it (spec basic/versioning.mdx):
 * - the modern era by one `server/discover` probe: a DiscoverResult naming 2026-07-28, or a
 *   recognized modern error (-32020/-32021, -32022 naming a modern version), means it serves it;
 *   anything else (a 2025 server's 400 "session required", 404, 405, -32601, a timeout) means not.
 * - the legacy era by its `initialize`: a dual-era server's discover result only names 2026-07-28,
 *   so a legacy caller simply opens its target session and falls back to the modern era when the
 *   handshake is refused (`noteLegacyUnsupported`).
 * Verdicts are kept per instance and per target, re-learned after `ttlMs` (an upgraded target is
 * noticed) or after a failed call. A target's `era` setting other than 'auto' skips all of it.
 */

export interface ModernVerdict {
  serves: boolean;
  /** The target's DiscoverResult, when it answered the probe. */
  discover?: DiscoverResult;
}

const MODERN_ERROR_CODES = new Set([-32020, -32021, -32022]);

export interface EraProbeOptions {
  /** How long a verdict holds before it is learned again (default 10 min). */
  ttlMs?: number;
  /** How long one `server/discover` probe may take (default 5 s). */
  timeoutMs?: number;
}

export class EraProbe {
  private readonly modern = new Map<string, { verdict: ModernVerdict; at: number }>();
  private readonly legacyRefused = new Map<string, number>();
  /** One probe per target at a time, whoever waits for it. */
  private readonly probing = new SingleFlight<ModernVerdict>();
  private readonly ttlMs: number;
  private readonly timeoutMs: number;
  /** Probes sent (for tests and metrics). */
  probes = 0;

  constructor(
    private readonly targets: ReadonlyMap<string, TargetConfig>,
    private readonly clients: ReadonlyMap<string, ModernTargetClient>,
    private readonly logger: GatewayLogger,
    /** The gateway's clock: verdicts are aged by it. */
    private readonly clock: Clock,
    options: EraProbeOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 10 * 60_000;
    this.timeoutMs = options.timeoutMs ?? 5_000;
  }

  /** The era to speak to `target` for a caller of `callerEra`. */
  async eraFor(target: string, callerEra: Era, signal?: AbortSignal): Promise<Era> {
    const configured = this.config(target).era;
    if (configured === 'legacy' || configured === 'modern') return configured;
    if (callerEra === 'legacy') {
      const refusedAt = this.legacyRefused.get(target);
      return refusedAt !== undefined && this.clock.now() - refusedAt < this.ttlMs ? 'modern' : 'legacy';
    }
    return (await this.modernVerdict(target, signal)).serves ? 'modern' : 'legacy';
  }

  /** The target's answer to `server/discover` (probing once), for modern callers and server/discover. */
  async modernVerdict(target: string, signal?: AbortSignal): Promise<ModernVerdict> {
    const configured = this.config(target).era;
    if (configured === 'legacy') return { serves: false };
    const known = this.modern.get(target);
    if (known && this.clock.now() - known.at < this.ttlMs) return known.verdict;
    // Shared by every request that waits for it, so it follows none of their signals (only its own
    // timeout): one request going away must not fail the others.
    const verdict = await this.probing.run(target, () => this.probe(target), signal);
    // Configured modern: the probe only supplied the DiscoverResult.
    return configured === 'modern' ? { ...verdict, serves: true } : verdict;
  }

  /** The target refused the legacy handshake: legacy callers are served in the modern era for a while. */
  noteLegacyUnsupported(target: string): void {
    this.legacyRefused.set(target, this.clock.now());
    this.logger.info('target era detected', { target, era: 'modern', legacy: false });
  }

  /** A call failed: what the target serves is learned again next time (it may have been redeployed). */
  forget(target: string): void {
    this.modern.delete(target);
    this.legacyRefused.delete(target);
  }

  private config(target: string): TargetConfig {
    const config = this.targets.get(target);
    if (!config) throw new DependencyFailedError(target, 'not configured');
    return config;
  }

  private async probe(target: string): Promise<ModernVerdict> {
    const client = this.clients.get(target);
    if (!client) throw new DependencyFailedError(target, 'not configured');
    this.probes++;
    const combined = AbortSignal.timeout(this.timeoutMs);
    let verdict: ModernVerdict;
    try {
      const { response } = await client.request(
        'server/discover',
        {},
        { protocolVersion: MODERN_PROTOCOL_VERSION, clientCapabilities: {} },
        { signal: combined },
      );
      verdict = classify(response);
    } catch (error) {
      // Unreachable: no verdict (the call fails as DependencyFailed and the next one probes again).
      if (error instanceof DependencyFailedError && /unreachable/.test(error.message)) throw error;
      // A per-user target this principal has not connected to: no verdict until someone can ask it.
      if (error instanceof ConnectionRequiredError) throw error;
      verdict = { serves: false };
    }
    this.modern.set(target, { verdict, at: this.clock.now() });
    this.logger.info('target era detected', { target, era: verdict.serves ? 'modern' : 'legacy' });
    return verdict;
  }
}

function classify(response: { result?: unknown; error?: { code: number; data?: unknown } }): ModernVerdict {
  if ('result' in response && response.result && typeof response.result === 'object') {
    const result = response.result as DiscoverResult;
    const serves =
      Array.isArray(result.supportedVersions) && result.supportedVersions.includes(MODERN_PROTOCOL_VERSION);
    return serves ? { serves, discover: result } : { serves: false };
  }
  const error = response.error;
  if (error && MODERN_ERROR_CODES.has(error.code)) {
    const supported = (error.data as { supported?: unknown } | undefined)?.supported;
    // -32022 naming only legacy versions: a dual-era server that does not serve 2026-07-28 to us.
    if (error.code === -32022 && Array.isArray(supported) && !supported.includes(MODERN_PROTOCOL_VERSION)) {
      return { serves: false };
    }
    return { serves: true };
  }
  return { serves: false };
}
