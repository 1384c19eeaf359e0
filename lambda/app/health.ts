import { ANONYMOUS_IDENTITY } from '../auth/identity';
import { methodNotAllowed } from '../http/errors';
import type { ExchangeContext, ExchangeRequest } from '../http/exchange';
import { jsonResponse } from '../http/responses';
import { describeError } from '../observability/logger';
import { recordTargetListFailure } from '../observability/metrics';
import type { Era } from '../protocol/versions';
import { MODERN_PROTOCOL_VERSION } from '../protocol/versions';
import type { Caller } from '../targets/target-link';
import type { GatewayDeps } from './deps';

/**
 * `GET /health`: liveness for anyone, `{"status":"ok"}` and nothing about the targets (it needs no
 * token, so it must not reveal the configuration). `GET /health?targets=1` adds each target's status
 * for a caller the configured inbound auth accepts (locally with `auth` `none`: anyone on the
 * loopback): whether it could be listed now, the era it was spoken to, how long listing its tools
 * took, and the last listing failure this instance saw. The probe is a live `tools/list` through the
 * catalog, so it exercises what a client's list does (credentials, era, sessions) and a failing
 * target is counted in `TargetListFailures` like any other list.
 */

export const HEALTH_PATH = '/health';

/** How long one target may take to list its tools in a health probe. */
const PROBE_TIMEOUT_MS = 5000;

/** The probe's own principal: its pooled 2025 target sessions are never shared with a client's. */
const HEALTH_PRINCIPAL = 'gateway-health-probe';

export interface TargetStatus {
  name: string;
  /** The era the target was spoken to (`legacy` 2025-11-25 and earlier, `modern` 2026-07-28); null when unknown. */
  era: Era | null;
  reachable: boolean;
  /** Time to list its tools, when reachable. */
  latencyMs: number | null;
  /** Number of tools it exposes (after `targets[].tools` filtering), when reachable. */
  tools: number | null;
  /** The last time this instance could not list it, and why (this probe included). */
  lastError: { message: string; at: string } | null;
}

const NO_STORE = { 'cache-control': 'no-store' };

export async function healthResponse(
  deps: GatewayDeps,
  request: ExchangeRequest,
  exchange: ExchangeContext,
  url: URL,
): Promise<Response> {
  if (request.method !== 'GET' && request.method !== 'HEAD') return methodNotAllowed('GET');
  const detail = url.searchParams.get('targets');
  if (detail === null || detail === '0' || detail === 'false') return jsonResponse(200, { status: 'ok' }, NO_STORE);
  const auth = await deps.auth.authenticate(request, exchange);
  if (!auth.ok) return auth.response;
  const targets = await Promise.all(deps.targets.names.map((name) => probe(deps, name, exchange.signal)));
  const status = targets.every((target) => target.reachable) ? 'ok' : 'degraded';
  return jsonResponse(200, { status, targets }, NO_STORE);
}

async function probe(deps: GatewayDeps, name: string, clientSignal: AbortSignal): Promise<TargetStatus> {
  const caller: Caller = {
    // The gateway's own probe: no caller's identity, no policy (a probe lists nothing to anyone).
    identity: ANONYMOUS_IDENTITY,
    era: 'modern',
    protocolVersion: MODERN_PROTOCOL_VERSION,
    capabilities: {},
    inputCapable: false,
    sessions: deps.legacySessions.slotsFor(HEALTH_PRINCIPAL, {}),
  };
  const timeout = AbortSignal.timeout(PROBE_TIMEOUT_MS);
  const configured = deps.targets.configs.find((target) => target.name === name)?.era;
  const status: TargetStatus = {
    name,
    era: configured === 'legacy' || configured === 'modern' ? configured : null,
    reachable: false,
    latencyMs: null,
    tools: null,
    lastError: null,
  };
  const started = performance.now();
  try {
    const [listed] = await deps.catalog.list('tools', { caller, signal: AbortSignal.any([clientSignal, timeout]) }, [
      name,
    ]);
    if (listed) {
      Object.assign(status, {
        era: listed.era,
        reachable: true,
        latencyMs: Math.round(performance.now() - started),
        tools: listed.items.length,
      });
    }
  } catch (error) {
    // The catalog rethrows only an abort: the client left, or the target took longer than the probe allows.
    const message = timeout.aborted ? `no answer within ${PROBE_TIMEOUT_MS} ms` : describeError(error).message;
    if (timeout.aborted) recordTargetListFailure(name);
    deps.logger.warn('health probe: target not listed', { target: name, error: message });
    return { ...status, lastError: { message, at: new Date(deps.clock.now()).toISOString() } };
  }
  return { ...status, lastError: deps.catalog.lastFailure(name) ?? null };
}
