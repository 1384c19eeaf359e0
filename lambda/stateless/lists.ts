import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import { GatewayError } from '../core/errors';
import { RpcCode } from '../core/jsonrpc';
import { describeError } from '../core/logger';
import { matchesTemplate } from '../legacy/routing';
import type { ListingKind, TargetListing } from '../targets/catalog-cache';
import { exposedName, NAME_SEPARATOR, type NamedEntry, resolveName, shouldPrefix } from '../targets/naming';
import { callUpstream, type StatelessDeps } from './upstream';
import type { ModernRequest } from './validate';

/**
 * Aggregated lists for 2026-07-28 clients, and the routing that needs them. Every target is listed
 * in its own era (modern: a modern request with the caller's capabilities; legacy: on a pooled 2025
 * session), cursors followed, names prefixed as configured. List results are cacheable results:
 * `ttlMs` is the smallest the targets gave (0 when any target gave none, as 2025 targets never do)
 * and `cacheScope` is "public" only when every target said so.
 */

const LIST_METHODS: Record<ListingKind, { method: string; field: string }> = {
  tools: { method: 'tools/list', field: 'tools' },
  prompts: { method: 'prompts/list', field: 'prompts' },
  resources: { method: 'resources/list', field: 'resources' },
  resourceTemplates: { method: 'resources/templates/list', field: 'resourceTemplates' },
};

export const LIST_KIND_BY_METHOD: Record<string, ListingKind> = {
  'tools/list': 'tools',
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
};

const MAX_PAGES = 50;

export interface ListContext {
  deps: StatelessDeps;
  request: ModernRequest;
  principal: string;
  signal: AbortSignal;
}

interface TargetList<K extends ListingKind> {
  target: string;
  items: NonNullable<TargetListing[K]>;
  ttlMs: number;
  cacheScope: 'public' | 'private';
}

/** One kind from the given targets (default: all), in parallel; a failing target is left out (logged). */
export async function listFromTargets<K extends ListingKind>(
  ctx: ListContext,
  kind: K,
  only?: string[],
): Promise<Array<TargetList<K>>> {
  const { deps, request } = ctx;
  const { method, field } = LIST_METHODS[kind];
  const names = deps.config.targets.map((t) => t.name).filter((name) => !only || only.includes(name));
  const lists = await Promise.all(
    names.map(async (target): Promise<TargetList<K> | undefined> => {
      try {
        const items: unknown[] = [];
        let ttlMs = Number.POSITIVE_INFINITY;
        let cacheScope: 'public' | 'private' = 'public';
        let cursor: string | undefined;
        for (let page = 0; page < MAX_PAGES; page++) {
          const { response, era } = await callUpstream(deps, {
            target,
            principal: ctx.principal,
            method,
            params: cursor ? { cursor } : {},
            clientCapabilities: request.clientCapabilities,
            protocolVersion: request.protocolVersion,
            signal: ctx.signal,
          });
          if ('error' in response) {
            deps.logger.debug('target did not list', { target, method, code: response.error.code });
            break;
          }
          const result = response.result as Record<string, unknown>;
          items.push(...((result[field] as unknown[] | undefined) ?? []));
          const pageTtl = era === 'modern' && typeof result.ttlMs === 'number' && result.ttlMs >= 0 ? result.ttlMs : 0;
          ttlMs = Math.min(ttlMs, pageTtl);
          if (!(era === 'modern' && result.cacheScope === 'public')) cacheScope = 'private';
          cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
          if (!cursor) break;
        }
        deps.catalog.put(target, kind, items as NonNullable<TargetListing[K]>);
        return {
          target,
          items: items as NonNullable<TargetListing[K]>,
          ttlMs: Number.isFinite(ttlMs) ? ttlMs : 0,
          cacheScope,
        };
      } catch (error) {
        if (ctx.signal.aborted) throw error;
        deps.logger.warn('target skipped in an aggregated list', { target, method, error: describeError(error) });
        return undefined;
      }
    }),
  );
  return lists.filter((list): list is TargetList<K> => list !== undefined);
}

/** The aggregated list result for a 2026-07-28 client. */
export async function aggregateList(ctx: ListContext, kind: ListingKind): Promise<Record<string, unknown>> {
  const { deps } = ctx;
  const lists = await listFromTargets(ctx, kind);
  const ttlMs = lists.length ? Math.min(...lists.map((l) => l.ttlMs)) : 0;
  const cacheScope = lists.length && lists.every((l) => l.cacheScope === 'public') ? 'public' : 'private';
  const field = LIST_METHODS[kind].field;
  let items: unknown[];
  if (kind === 'tools' || kind === 'prompts') {
    const prefixed = shouldPrefix(deps.config.toolNamePrefix, deps.config.targets.length);
    const counts = new Map<string, number>();
    for (const { items: list } of lists)
      for (const item of list as Array<Tool | Prompt>) counts.set(item.name, (counts.get(item.name) ?? 0) + 1);
    items = lists.flatMap(({ target, items: list }) =>
      (list as Array<Tool | Prompt>)
        .filter((item) => prefixed || (counts.get(item.name) ?? 0) === 1)
        .map((item) => ({ ...item, name: exposedName(target, item.name, prefixed) })),
    );
  } else {
    const seen = new Set<string>();
    items = lists.flatMap(({ items: list }) =>
      (list as Array<Resource | ResourceTemplate>).filter((item) => {
        const key = 'uri' in item ? (item as Resource).uri : (item as ResourceTemplate).uriTemplate;
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      }),
    );
  }
  return { [field]: items, ttlMs, cacheScope };
}

/** Listings of one kind: this instance's recent ones, or live. */
async function listing<K extends ListingKind>(ctx: ListContext, kind: K, targets?: string[], refresh = false) {
  const names = targets ?? ctx.deps.config.targets.map((t) => t.name);
  const cached = names.map((target) => ({ target, items: ctx.deps.catalog.get(target, kind) }));
  if (!refresh && cached.every((entry) => entry.items !== undefined)) {
    return cached as Array<{ target: string; items: NonNullable<TargetListing[K]> }>;
  }
  return listFromTargets(ctx, kind, names);
}

/** The target of a called tool or prompt name, and the target's own name for it. */
export async function resolveNamed(
  ctx: ListContext,
  called: unknown,
  kind: 'tool' | 'prompt',
): Promise<{ target: string; name: string }> {
  if (typeof called !== 'string' || called.length === 0) {
    throw new GatewayError(RpcCode.InvalidParams, `Invalid params: ${kind} name must be a non-empty string`);
  }
  const listKind = kind === 'tool' ? 'tools' : 'prompts';
  const targetNames = ctx.deps.config.targets.map((t) => t.name);
  const separator = called.indexOf(NAME_SEPARATOR);
  if (separator > 0) {
    const target = called.slice(0, separator);
    const name = called.slice(separator + NAME_SEPARATOR.length);
    if (targetNames.includes(target)) {
      const offers = (lists: Array<{ target: string; items: unknown }>) =>
        lists.some((l) => l.target === target && (l.items as Array<Tool | Prompt>).some((item) => item.name === name));
      if (offers(await listing(ctx, listKind, [target]))) return { target, name };
      const fresh = await listing(ctx, listKind, [target], true);
      if (offers(fresh)) return { target, name };
      // The target could not be listed: route anyway, so the client learns which dependency failed.
      if (!fresh.some((l) => l.target === target)) return { target, name };
    }
  }
  const lists = await listing(ctx, listKind);
  const entries: NamedEntry[] = lists.flatMap(({ target, items }) =>
    (items as Array<Tool | Prompt>).map((item) => ({ target, name: item.name })),
  );
  const resolution = resolveName(called, entries, targetNames, kind);
  if (!resolution.ok)
    throw new GatewayError(RpcCode.InvalidParams, resolution.message, { candidates: resolution.candidates });
  return { target: resolution.target, name: resolution.name };
}

/** The target of a resource URI: an exact listed resource, then a matching template. */
export async function resolveResource(ctx: ListContext, uri: unknown): Promise<string> {
  if (typeof uri !== 'string' || uri.length === 0)
    throw new GatewayError(RpcCode.InvalidParams, 'Invalid params: uri must be a non-empty string');
  const resources = await listing(ctx, 'resources');
  const exact = resources.find(({ items }) => (items as Resource[]).some((r) => r.uri === uri));
  if (exact) return exact.target;
  const templates = await listing(ctx, 'resourceTemplates');
  const templated = templates.find(({ items }) =>
    (items as ResourceTemplate[]).some((t) => matchesTemplate(t.uriTemplate, uri)),
  );
  if (templated) return templated.target;
  if (ctx.deps.config.targets.length === 1) return ctx.deps.config.targets[0].name;
  // 2026-07-28: resource not found is -32602 (the 2025 code -32002 is not used).
  throw new GatewayError(RpcCode.InvalidParams, `Resource not found: ${uri}`, { uri });
}

/** The target owning a resource template (completion/complete with ref/resource). */
export async function resolveTemplate(ctx: ListContext, uriTemplate: unknown): Promise<string> {
  const templates = await listing(ctx, 'resourceTemplates');
  const owner = templates.find(({ items }) => (items as ResourceTemplate[]).some((t) => t.uriTemplate === uriTemplate));
  if (owner) return owner.target;
  return resolveResource(ctx, uriTemplate);
}
