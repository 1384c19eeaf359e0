import type { DiscoverResult, ServerCapabilities } from '@modelcontextprotocol/server';
import { describeError } from '../core/logger';
import { legacyCapabilities } from './capabilities';
import type { ListContext } from './lists';

/**
 * `server/discover` (spec server/discover.mdx): the versions this gateway serves (2026-07-28 and the
 * 2025 versions reached through `initialize`) and the capabilities merged from its targets: a
 * feature is offered when any reachable target offers it. Change notifications and subscriptions are
 * not offered (the gateway does not serve `subscriptions/listen`), nor are tasks.
 */

const DISCOVER_TTL_MS = 60_000;

export async function discover(ctx: ListContext): Promise<Record<string, unknown>> {
  const { deps, request, principal, signal } = ctx;
  const perTarget = await Promise.all(
    deps.config.targets.map(async ({ name }): Promise<ServerCapabilities | undefined> => {
      try {
        const verdict = await deps.modern.eras.eraOf(name, signal);
        if (verdict.era === 'modern')
          return verdict.discover?.capabilities ?? { tools: {}, prompts: {}, resources: {} };
        return (await deps.modern.legacySessions.capabilities(
          name,
          principal,
          legacyCapabilities(request.clientCapabilities),
          signal,
        )) as ServerCapabilities;
      } catch (error) {
        if (signal.aborted) throw error;
        deps.logger.warn('target left out of server/discover', { target: name, error: describeError(error) });
        return undefined;
      }
    }),
  );
  const capabilities: ServerCapabilities = {};
  for (const caps of perTarget) {
    if (!caps) continue;
    if (caps.tools) capabilities.tools = {};
    if (caps.prompts) capabilities.prompts = {};
    if (caps.resources) capabilities.resources = {};
    if (caps.completions) capabilities.completions = {};
    if (caps.logging) capabilities.logging = {};
  }
  const result: Omit<DiscoverResult, 'resultType'> = {
    supportedVersions: [...deps.config.supportedVersions].sort().reverse(),
    capabilities,
    ttlMs: DISCOVER_TTL_MS,
    cacheScope: 'private',
  };
  return result as Record<string, unknown>;
}
