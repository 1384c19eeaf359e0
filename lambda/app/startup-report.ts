import type { NamedEntry } from '../catalog/naming';
import { overlongNames, shouldPrefix } from '../catalog/naming';
import { describeError } from '../observability/logger';
import type { Prompt, Tool } from '../protocol/types';
import { LATEST_LEGACY_VERSION, legacyVersionsOf } from '../protocol/versions';
import type { GatewayDeps } from './deps';

/**
 * Lists every target once at start-up (a throw-away legacy target session, no client capabilities)
 * and reports what operators should fix early: unreachable targets and exposed names over 64 characters.
 */
export async function reportTargetsAtStartup(
  deps: GatewayDeps,
  timeoutMs = 5000,
): Promise<{ reachable: string[]; longNames: string[] }> {
  const version = legacyVersionsOf(deps.config.supportedVersions)[0] ?? LATEST_LEGACY_VERSION;
  const entries: NamedEntry[] = [];
  const reachable: string[] = [];
  await Promise.all(
    deps.targets.names.map(async (name) => {
      const client = deps.targets.legacyClient(name);
      if (!client) return;
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
            entries.push(...items.map((item) => ({ target: name, name: item.name })));
          }
        }
        reachable.push(name);
        await client.terminate(session).catch(() => undefined);
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
