import type { Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayDeps } from '../core/deps';
import { describeError } from '../core/logger';
import { type NamedEntry, overlongNames, shouldPrefix } from './naming';

/**
 * Lists every target once at start-up (a throw-away target session, no client capabilities) and
 * reports what operators should fix early: unreachable targets and exposed names over 64 characters.
 */
export async function reportTargetsAtStartup(
  deps: GatewayDeps,
  timeoutMs = 5000,
): Promise<{ reachable: string[]; longNames: string[] }> {
  const version =
    deps.config.supportedVersions
      .filter((v) => v < '2026-01-01')
      .sort()
      .pop() ?? '2025-11-25';
  const entries: NamedEntry[] = [];
  const reachable: string[] = [];
  await Promise.all(
    [...deps.targets.values()].map(async (client) => {
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        const { session } = await client.initialize(version, {}, signal);
        for (const [method, field] of [
          ['tools/list', 'tools'],
          ['prompts/list', 'prompts'],
        ] as const) {
          const response = await client.request(
            session,
            { jsonrpc: '2.0', id: `gw-startup-${field}`, method, params: {} },
            { signal },
          );
          if ('result' in response) {
            const items = (response.result[field] as Array<Tool | Prompt> | undefined) ?? [];
            entries.push(...items.map((item) => ({ target: client.name, name: item.name })));
          }
        }
        reachable.push(client.name);
        await client.terminate(session).catch(() => undefined);
      } catch (error) {
        deps.logger.warn('target not reachable at start-up', { target: client.name, error: describeError(error) });
      }
    }),
  );
  const longNames = overlongNames(entries, shouldPrefix(deps.config.toolNamePrefix, deps.config.targets.length));
  if (longNames.length)
    deps.logger.warn('exposed names longer than 64 characters; some clients refuse them', { names: longNames });
  return { reachable, longNames };
}
