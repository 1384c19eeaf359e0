import type { GatewayDeps } from '../lambda/app/deps';
import type { NamedEntry } from '../lambda/catalog/naming';
import { overlongNames, shouldPrefix } from '../lambda/catalog/naming';
import { describeError } from '../lambda/observability/logger';
import type { Prompt, Tool } from '../lambda/protocol/types';
import { LATEST_LEGACY_VERSION, legacyVersionsOf, MODERN_PROTOCOL_VERSION } from '../lambda/protocol/versions';
import { type LegacyTargetClient, LegacyUnsupportedError } from '../lambda/targets/legacy-client';
import type { ModernTargetClient } from '../lambda/targets/modern-client';

const LISTS = [
  ['tools/list', 'tools'],
  ['prompts/list', 'prompts'],
] as const;

const itemNames = (items: unknown): string[] => ((items as Array<Tool | Prompt> | undefined) ?? []).map((i) => i.name);

/** Names listed through a throw-away legacy target session. */
async function listLegacy(client: LegacyTargetClient, version: string, signal: AbortSignal): Promise<string[]> {
  const names: string[] = [];
  const { session } = await client.initialize(version, {}, signal);
  for (const [method, field] of LISTS) {
    const response = await client.request(
      session,
      { jsonrpc: '2.0', id: `gw-startup-${field}`, method, params: {} },
      { signal },
    );
    if ('result' in response) names.push(...itemNames(response.result[field]));
  }
  await client.terminate(session).catch(() => undefined);
  return names;
}

/** Names listed with 2026-07-28 requests (no session). */
async function listModern(client: ModernTargetClient, signal: AbortSignal): Promise<string[]> {
  const names: string[] = [];
  for (const [method, field] of LISTS) {
    const meta = { protocolVersion: MODERN_PROTOCOL_VERSION, clientCapabilities: {} };
    const { response } = await client.request(method, {}, meta, { signal });
    if ('result' in response) names.push(...itemNames(response.result[field]));
  }
  return names;
}

/**
 * Lists every target once at start-up (no client capabilities) and reports what operators should fix
 * early: unreachable targets and exposed names over 64 characters. A target that refuses the 2025
 * handshake (2026-07-28 only) is listed with 2026-07-28 requests: it is reachable. Per-user targets
 * are not listed.
 */
export async function reportTargetsAtStartup(
  deps: GatewayDeps,
  timeoutMs = 5000,
): Promise<{ reachable: string[]; longNames: string[] }> {
  const version = legacyVersionsOf(deps.config.supportedVersions)[0] ?? LATEST_LEGACY_VERSION;
  const entries: NamedEntry[] = [];
  const reachable: string[] = [];
  // A per-user target (userOAuth) is called with a user's own token, and nobody calls at start-up.
  const perUser = new Set(deps.config.targets.filter((target) => target.userOAuth).map((target) => target.name));
  await Promise.all(
    deps.targets.names.map(async (name) => {
      const legacy = deps.targets.legacyClient(name);
      const modern = deps.targets.modernClient(name);
      if (!legacy || !modern || perUser.has(name)) return;
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        const names = await listLegacy(legacy, version, signal).catch((error: unknown) => {
          if (error instanceof LegacyUnsupportedError) return listModern(modern, signal);
          throw error;
        });
        entries.push(...names.map((item) => ({ target: name, name: item })));
        reachable.push(name);
      } catch (error) {
        deps.logger.warn('target not reachable at start-up', { target: name, error: describeError(error) });
      }
    }),
  );
  const longNames = overlongNames(entries, shouldPrefix(deps.config.toolNamePrefix, deps.targets.names.length));
  if (longNames.length)
    deps.logger.warn('exposed names longer than 64 characters; some clients refuse them', { names: longNames });
  return { reachable, longNames };
}
