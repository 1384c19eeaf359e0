import type { DiscoverResult } from '@modelcontextprotocol/server';
import type { TargetConfig } from '../config/schema';
import type { GatewayLogger } from '../core/logger';
import { MODERN_PROTOCOL_VERSION, type ModernTargetClient } from './modern-client';
import { DependencyFailedError } from './upstream-client';

/**
 * Which protocol era each target speaks (spec basic/versioning.mdx, "era detection by a dual-era
 * client"): one modern `server/discover` probe; a DiscoverResult naming 2026-07-28, or a recognized
 * modern error (-32020/-32021/-32022 naming a modern version), means modern; anything else (a 2025
 * server's 400 "session required", 404, 405, -32601, a timeout) means legacy and the gateway uses
 * `initialize`. The fallback is never keyed to one error code.
 *
 * The verdict is kept per instance (bounded: one entry per configured target, re-probed after
 * `ttlMs` so an upgraded target is noticed), and forgotten when a call fails so the next call probes
 * again. A target's `era` setting other than 'auto' skips the probe.
 */

export type Era = 'legacy' | 'modern';

export interface EraVerdict {
  era: Era;
  /** The target's DiscoverResult (modern targets that answered the probe). */
  discover?: DiscoverResult;
}

export interface EraLookup {
  eraOf(target: string, signal?: AbortSignal): Promise<EraVerdict>;
  forget(target: string): void;
}

const MODERN_ERROR_CODES = new Set([-32020, -32021, -32022]);

export interface EraProbeOptions {
  ttlMs?: number;
  timeoutMs?: number;
  maxEntries?: number;
}

export class EraProbe implements EraLookup {
  private readonly verdicts = new Map<string, { verdict: EraVerdict; at: number }>();
  private readonly probing = new Map<string, Promise<EraVerdict>>();
  private readonly ttlMs: number;
  private readonly timeoutMs: number;
  private readonly maxEntries: number;
  /** Probes sent (for tests and metrics). */
  probes = 0;

  constructor(
    private readonly targets: Map<string, TargetConfig>,
    private readonly clients: Map<string, ModernTargetClient>,
    private readonly logger: GatewayLogger,
    options: EraProbeOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 10 * 60_000;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.maxEntries = options.maxEntries ?? Math.max(16, targets.size);
  }

  async eraOf(target: string, signal?: AbortSignal): Promise<EraVerdict> {
    const config = this.targets.get(target);
    if (!config) throw new DependencyFailedError(target, 'not configured');
    if (config.era === 'legacy' || config.era === 'modern') return { era: config.era };
    const known = this.verdicts.get(target);
    if (known && Date.now() - known.at < this.ttlMs) return known.verdict;
    let probing = this.probing.get(target);
    if (!probing) {
      probing = this.probe(target, signal).finally(() => this.probing.delete(target));
      this.probing.set(target, probing);
    }
    return probing;
  }

  forget(target: string): void {
    this.verdicts.delete(target);
  }

  private remember(target: string, verdict: EraVerdict): void {
    this.verdicts.delete(target);
    this.verdicts.set(target, { verdict, at: Date.now() });
    while (this.verdicts.size > this.maxEntries) this.verdicts.delete(this.verdicts.keys().next().value as string);
  }

  private async probe(target: string, signal?: AbortSignal): Promise<EraVerdict> {
    const client = this.clients.get(target);
    if (!client) throw new DependencyFailedError(target, 'not configured');
    this.probes++;
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let verdict: EraVerdict;
    try {
      const { response } = await client.request(
        'server/discover',
        {},
        { clientCapabilities: {} },
        { signal: combined },
      );
      verdict = classify(response);
    } catch (error) {
      if (signal?.aborted) throw error;
      // Unreachable: no verdict (the call fails as DependencyFailed and the next one probes again).
      if (error instanceof DependencyFailedError && /unreachable/.test(error.message)) throw error;
      verdict = { era: 'legacy' };
    }
    this.remember(target, verdict);
    this.logger.info('target era detected', { target, era: verdict.era });
    return verdict;
  }
}

function classify(response: { result?: unknown; error?: { code: number; data?: unknown } }): EraVerdict {
  if ('result' in response && response.result && typeof response.result === 'object') {
    const result = response.result as DiscoverResult;
    if (Array.isArray(result.supportedVersions) && result.supportedVersions.includes(MODERN_PROTOCOL_VERSION)) {
      return { era: 'modern', discover: result };
    }
    return { era: 'legacy' };
  }
  const error = response.error;
  if (error && MODERN_ERROR_CODES.has(error.code)) {
    const supported = (error.data as { supported?: unknown } | undefined)?.supported;
    // -32022 naming only legacy versions: a dual-era server that does not serve 2026-07-28 to us.
    if (error.code === -32022 && Array.isArray(supported) && !supported.includes(MODERN_PROTOCOL_VERSION))
      return { era: 'legacy' };
    return { era: 'modern' };
  }
  return { era: 'legacy' };
}
