import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayDeps } from '../core/deps';
import { describeError } from '../core/logger';
import type { ListingKind, TargetListing } from '../targets/catalog-cache';
import { exposedName, type NamedEntry, overlongNames, shouldPrefix } from '../targets/naming';
import type { TargetSessions } from './target-sessions';

const LIST_METHODS: Record<ListingKind, { method: string; field: string }> = {
  tools: { method: 'tools/list', field: 'tools' },
  prompts: { method: 'prompts/list', field: 'prompts' },
  resources: { method: 'resources/list', field: 'resources' },
  resourceTemplates: { method: 'resources/templates/list', field: 'resourceTemplates' },
};

/** Bounds a misbehaving target's pagination. */
const MAX_PAGES = 50;

export interface TargetItems<K extends ListingKind> {
  target: string;
  items: NonNullable<TargetListing[K]>;
}

/**
 * Lists one kind from every target in parallel, following each target's cursors. A target that
 * fails or lacks the capability contributes nothing (logged); the others still answer.
 */
export async function listFromTargets<K extends ListingKind>(
  deps: GatewayDeps,
  sessions: TargetSessions,
  kind: K,
  signal: AbortSignal,
  sessionId: string,
  only?: string[],
): Promise<Array<TargetItems<K>>> {
  const { method, field } = LIST_METHODS[kind];
  const targets = deps.config.targets.map((t) => t.name).filter((name) => !only || only.includes(name));
  const lists = await Promise.all(
    targets.map(async (target) => {
      try {
        const items = await sessions.with(target, signal, async (session, client) => {
          const collected: unknown[] = [];
          let cursor: string | undefined;
          for (let page = 0; page < MAX_PAGES; page++) {
            const response = await client.request(
              session,
              { jsonrpc: '2.0', id: `gw-list-${page}`, method, params: cursor ? { cursor } : {} },
              { signal },
            );
            if ('error' in response) {
              deps.logger.debug('target did not list', { sessionId, target, method, code: response.error.code });
              break;
            }
            const result = response.result as Record<string, unknown>;
            collected.push(...((result[field] as unknown[] | undefined) ?? []));
            cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
            if (!cursor) break;
          }
          return collected as NonNullable<TargetListing[K]>;
        });
        deps.catalog.put(target, kind, items);
        return { target, items };
      } catch (error) {
        if (signal.aborted) throw error;
        deps.logger.warn('target skipped in an aggregated list', {
          sessionId,
          target,
          method,
          error: describeError(error),
        });
        return undefined;
      }
    }),
  );
  return lists.filter((list): list is TargetItems<K> => list !== undefined);
}

let reportedLongNames = false;

/** Tools or prompts under their exposed names; with prefixes off, a name two targets share is withheld. */
export function exposeNamed<T extends Tool | Prompt>(
  deps: GatewayDeps,
  lists: Array<{ target: string; items: T[] }>,
): T[] {
  const prefixed = shouldPrefix(deps.config.toolNamePrefix, deps.config.targets.length);
  const entries: NamedEntry[] = lists.flatMap(({ target, items }) =>
    items.map((item) => ({ target, name: item.name })),
  );
  if (!reportedLongNames) {
    reportedLongNames = true;
    const long = overlongNames(entries, prefixed);
    if (long.length)
      deps.logger.warn('exposed names longer than 64 characters; some clients refuse them', { names: long });
  }
  const counts = new Map<string, number>();
  for (const entry of entries) counts.set(entry.name, (counts.get(entry.name) ?? 0) + 1);
  const exposed: T[] = [];
  for (const { target, items } of lists) {
    for (const item of items) {
      if (!prefixed && (counts.get(item.name) ?? 0) > 1) {
        deps.logger.error('duplicate name withheld: prefixes are off and several targets offer it', {
          target,
          name: item.name,
        });
        continue;
      }
      exposed.push({ ...item, name: exposedName(target, item.name, prefixed) });
    }
  }
  return exposed;
}

/** Resources and templates keep their URIs; on duplicates the first target (in configuration order) wins. */
export function exposeByUri<T extends Resource | ResourceTemplate>(
  deps: GatewayDeps,
  lists: Array<{ target: string; items: T[] }>,
  uriOf: (item: T) => string,
): T[] {
  const seen = new Map<string, string>();
  const exposed: T[] = [];
  for (const { target, items } of lists) {
    for (const item of items) {
      const uri = uriOf(item);
      const owner = seen.get(uri);
      if (owner) {
        deps.logger.warn('duplicate resource URI: the first target wins', { uri, target, winner: owner });
        continue;
      }
      seen.set(uri, target);
      exposed.push(item);
    }
  }
  return exposed;
}
