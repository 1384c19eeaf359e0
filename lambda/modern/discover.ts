import { describeError } from '../observability/logger';
import { declaresTasks, TASKS_EXTENSION } from '../protocol/meta';
import type { DiscoverResult, ModernServerCapabilities } from '../protocol/types';
import type { Caller } from '../targets/target-link';
import type { ModernDeps } from './deps';

/**
 * `server/discover` (spec server/discover.mdx): the versions this gateway serves (2026-07-28 and the
 * 2025 versions reached through `initialize`) and the capabilities merged from its targets: a
 * feature is offered when any reachable target offers it, the Tasks extension included (relayed:
 * ./tasks.ts). Change notifications and resource subscriptions are offered as far as a target offers
 * them (they reach the client through `subscriptions/listen`, ./listen.ts).
 */

const DISCOVER_TTL_MS = 60_000;

export async function discover(
  deps: ModernDeps,
  caller: Caller,
  signal: AbortSignal,
): Promise<Record<string, unknown>> {
  const perTarget = await Promise.all(
    deps.targets.names.map(async (name): Promise<{ caps: ModernServerCapabilities; listens: boolean } | undefined> => {
      try {
        const verdict = await deps.targets.eras.modernVerdict(name, signal);
        if (verdict.serves)
          return { caps: verdict.discover?.capabilities ?? { tools: {}, prompts: {}, resources: {} }, listens: true };
        const targetLink = await deps.targets.open(name, caller, signal);
        return {
          caps: ((await targetLink.serverCapabilities(signal)) ?? {}) as ModernServerCapabilities,
          // A 2025 target's changes come on a session's GET stream: none from one that refuses them.
          listens: !deps.targets.streams.refusesStreams(name),
        };
      } catch (error) {
        if (signal.aborted) throw error;
        deps.logger.warn('target left out of server/discover', { target: name, error: describeError(error) });
        return undefined;
      }
    }),
  );
  const capabilities: ModernServerCapabilities = {};
  for (const found of perTarget) {
    if (!found) continue;
    const { caps, listens } = found;
    // Changes reach a 2026-07-28 client through subscriptions/listen (./listen.ts): a 2026-07-28
    // target's own listen, a 2025 target's session GET stream (not offered for one that refuses them).
    const changes = (kind: 'tools' | 'prompts' | 'resources') => {
      const own = caps[kind] as { listChanged?: boolean; subscribe?: boolean } | undefined;
      const merged = (capabilities[kind] ?? {}) as { listChanged?: boolean; subscribe?: boolean };
      if (listens && own?.listChanged) merged.listChanged = true;
      if (listens && kind === 'resources' && own?.subscribe) merged.subscribe = true;
      return merged;
    };
    if (caps.tools) capabilities.tools = changes('tools');
    if (caps.prompts) capabilities.prompts = changes('prompts');
    if (caps.resources) capabilities.resources = changes('resources');
    if (caps.completions) capabilities.completions = {};
    if (caps.logging) capabilities.logging = {};
    // Tasks are relayed (./tasks.ts) to the targets that offer them.
    if (declaresTasks(caps)) (capabilities as { extensions?: object }).extensions = { [TASKS_EXTENSION]: {} };
  }
  const result: Omit<DiscoverResult, 'resultType'> = {
    supportedVersions: [...deps.config.supportedVersions].sort().reverse(),
    capabilities,
    ttlMs: DISCOVER_TTL_MS,
    cacheScope: 'private',
  };
  return result as Record<string, unknown>;
}
