import { ConnectionRequiredError, connectTool } from '../connections/user-connections';
import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { recordTargetListFailure } from '../observability/metrics';
import { noteRequest } from '../observability/request-context';
import { type AccessPolicy, type AccessRequest, OPEN_ACCESS } from '../policy/access-policy';
import { ToolFilters } from '../policy/tool-filter';
import { DependencyFailedError, GatewayError } from '../protocol/errors';
import { LIST_METHODS, type ListingKind } from '../protocol/methods';
import type { Prompt, Resource, ResourceTemplate, Tool } from '../protocol/types';
import type { Era } from '../protocol/versions';
import { SingleFlight, untilAborted } from '../scheduling/single-flight';
import type { Caller } from '../targets/target-link';
import type { Targets } from '../targets/targets';
import type { CatalogCache, TargetListing } from './cache';
import {
  exposedName,
  NAME_SEPARATOR,
  type NamedEntry,
  overlongNames,
  type PrefixMode,
  resolveName,
  shouldPrefix,
} from './naming';
import { matchesTemplate } from './uri-template';

/**
 * One catalog for both eras: list every target (in parallel, following cursors up to a page cap,
 * a failing target left out and logged), expose the items under their public names (one duplicate
 * rule), and resolve what a client calls to a target and the target's own name (one not-found rule
 * per the caller's era). Listings are cached per instance for routing only; every list a client asks
 * for is fetched live. Tool filters (`targets[].tools`, lambda/policy/tool-filter.ts) apply to every
 * listing before anything else sees it, and again to whatever a call resolves to.
 */

/** Bounds a misbehaving target's pagination. */
const MAX_PAGES = 50;

/** What a request needs to reach the targets. */
export interface CatalogScope {
  caller: Caller;
  signal: AbortSignal;
}

export interface TargetList<K extends ListingKind> {
  target: string;
  /** The era the target was spoken to. */
  era: Era;
  items: NonNullable<TargetListing[K]>;
  /** Cacheability as 2026-07-28 results declare it (0 / private for legacy targets). */
  ttlMs: number;
  cacheScope: 'public' | 'private';
  /** A per-user target the principal has not connected to: only its connect tool is listed, nothing cached. */
  unconnected?: boolean;
}

export interface AggregatedList {
  items: unknown[];
  ttlMs: number;
  cacheScope: 'public' | 'private';
}

export interface CatalogSettings {
  toolNamePrefix: PrefixMode;
}

/** The kinds of listing each list-change notification invalidates in the routing cache. */
const LIST_CHANGES: Record<string, readonly ListingKind[]> = {
  'notifications/tools/list_changed': ['tools'],
  'notifications/prompts/list_changed': ['prompts'],
  'notifications/resources/list_changed': ['resources', 'resourceTemplates'],
};

/** The last time a target could not be listed on this instance (for `GET /health?targets=1`). */
export interface ListFailure {
  message: string;
  at: string;
}

function accessRequestOf(caller: Caller): AccessRequest {
  return { identity: caller.identity, era: caller.era, protocolVersion: caller.protocolVersion };
}

export class Catalog {
  private reportedLongNames = false;
  private readonly filters: ToolFilters;
  private readonly failures = new Map<string, ListFailure>();
  /** The routing listings being fetched live: one per (kind, target, caller) at a time. */
  private readonly listings = new SingleFlight<TargetList<ListingKind> | undefined>();

  constructor(
    private readonly targets: Targets,
    private readonly settings: CatalogSettings,
    private readonly logger: GatewayLogger,
    /** The listings cache (its clock is the gateway's). */
    private readonly cache: CatalogCache,
    /** Who may list and call which tool (the configured policies; everything without). */
    private readonly access: AccessPolicy = OPEN_ACCESS,
  ) {
    this.filters = new ToolFilters(targets.configs);
  }

  /**
   * A target announced a change (`notifications/tools/list_changed` and the like): its cached
   * listing of those kinds is dropped, so names route against what it offers now.
   */
  listingChanged(target: string, kinds: readonly ListingKind[]): void {
    this.cache.forget(target, kinds);
  }

  /** A notification `target` sent, on whatever stream: a list change drops its cached listing of that kind. */
  noticed(target: string, notification: { method: string }): void {
    const kinds = LIST_CHANGES[notification.method];
    if (kinds) this.listingChanged(target, kinds);
  }

  /** The last listing failure of `target` on this instance, if any. */
  lastFailure(target: string): ListFailure | undefined {
    return this.failures.get(target);
  }

  private get prefixed(): boolean {
    return shouldPrefix(this.settings.toolNamePrefix, this.targets.names.length);
  }

  /** One kind from the given targets (default: all), in parallel; a failing target is left out (logged). */
  async list<K extends ListingKind>(kind: K, scope: CatalogScope, only?: string[]): Promise<Array<TargetList<K>>> {
    const names = this.targets.names.filter((name) => !only || only.includes(name));
    const lists = await Promise.all(names.map((target) => this.listTarget(kind, target, scope)));
    return lists.filter((list): list is TargetList<K> => list !== undefined);
  }

  /** One target's listing of one kind, live (every page), cached for routing; undefined when it failed (logged). */
  private async listTarget<K extends ListingKind>(
    kind: K,
    target: string,
    scope: CatalogScope,
  ): Promise<TargetList<K> | undefined> {
    const { method, field } = LIST_METHODS[kind];
    // One budget for the whole listing (era probe, session, every page): a late target is left out
    // well inside the client's and the function's deadline, as a failing one is.
    const limits = this.targets.limits(target);
    const budget = AbortSignal.timeout(limits.requestTimeoutMs);
    const signal = AbortSignal.any([scope.signal, budget]);
    try {
      const targetLink = await this.targets.open(target, scope.caller, signal);
      const items: unknown[] = [];
      let bytes = 0;
      let ttlMs = Number.POSITIVE_INFINITY;
      let cacheScope: 'public' | 'private' = 'public';
      let cursor: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const response = await targetLink.call({ method, params: cursor ? { cursor } : {} }, { signal });
        if ('error' in response) {
          this.logger.debug('target did not list', { target, method, code: response.error.code });
          break;
        }
        const result = response.result as Record<string, unknown>;
        const page = Array.isArray(result[field]) ? (result[field] as unknown[]) : [];
        // Every list a client asks for is fetched live and held while it is aggregated: bounded per target.
        bytes += JSON.stringify(page).length;
        if (items.length + page.length > limits.maxListItems)
          throw new DependencyFailedError(target, `listed over ${limits.maxListItems} items (limits.maxListItems)`);
        if (bytes > limits.maxListBytes)
          throw new DependencyFailedError(target, `listed over ${limits.maxListBytes} bytes (limits.maxListBytes)`);
        items.push(...page);
        const modern = targetLink.era === 'modern';
        ttlMs = Math.min(ttlMs, modern && typeof result.ttlMs === 'number' && result.ttlMs >= 0 ? result.ttlMs : 0);
        if (!(modern && result.cacheScope === 'public')) cacheScope = 'private';
        cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
        if (!cursor) break;
      }
      // Filtered tools never enter the cache, so no name (prefixed or bare) routes to them.
      const listed = (kind === 'tools' ? this.filters.keep(target, items as Tool[]) : items) as NonNullable<
        TargetListing[K]
      >;
      this.cache.put(target, kind, listed);
      const era = targetLink.era;
      return { target, era, items: listed, ttlMs: Number.isFinite(ttlMs) ? ttlMs : 0, cacheScope };
    } catch (caught) {
      if (scope.signal.aborted) throw caught;
      // A per-user target this principal has not connected to: its connect tool (not a failure).
      if (caught instanceof ConnectionRequiredError) {
        this.logger.debug('per-user target not connected: its connect tool listed', { target, method });
        const items = (kind === 'tools' ? [connectTool(target)] : []) as NonNullable<TargetListing[K]>;
        return { target, era: 'legacy', items, ttlMs: 0, cacheScope: 'private', unconnected: true };
      }
      const error = budget.aborted
        ? new DependencyFailedError(target, `did not list ${method} within ${limits.requestTimeoutMs} ms`, {
            cause: caught,
          })
        : caught;
      const { name, message } = describeError(error);
      this.failures.set(target, { message, at: new Date(this.cache.clock.now()).toISOString() });
      recordTargetListFailure(target);
      this.logger.warn('target skipped in an aggregated list', { target, method, error: { name, message } });
      return undefined;
    }
  }

  /** The aggregated list a client gets: items under their public names, and the combined cacheability. */
  async aggregate(kind: ListingKind, scope: CatalogScope): Promise<AggregatedList> {
    const listed = await this.list(kind, scope);
    const lists = kind === 'tools' ? this.permitted(listed as Array<TargetList<'tools'>>, scope.caller) : listed;
    const ttlMs = lists.length ? Math.min(...lists.map((l) => l.ttlMs)) : 0;
    // What policy shows differs by caller: such a list is never shared between callers.
    const shared = this.access.mode === 'none' || kind !== 'tools';
    const cacheScope = shared && lists.length && lists.every((l) => l.cacheScope === 'public') ? 'public' : 'private';
    const items =
      kind === 'tools' || kind === 'prompts'
        ? this.exposeNamed(lists as Array<TargetList<'tools' | 'prompts'>>)
        : this.exposeByUri(lists as Array<TargetList<'resources' | 'resourceTemplates'>>);
    return { items, ttlMs, cacheScope };
  }

  /** Each target's tools this caller may see: those some call of which policy could permit. */
  private permitted(lists: Array<TargetList<'tools'>>, caller: Caller): Array<TargetList<'tools'>> {
    if (this.access.mode === 'none') return lists;
    const request = accessRequestOf(caller);
    return lists.map((list) => ({
      ...list,
      items: list.items.filter((tool) =>
        this.access.mayList(request, { target: list.target, tool: tool.name, annotations: tool.annotations }),
      ),
    }));
  }

  /**
   * A resolved tool call, decided by the configured policies with its arguments (the annotations the
   * target listed for it, when this instance has its listing): refused with no word of which policy.
   */
  authorizeCall(called: unknown, resolved: { target: string; name: string }, args: unknown, scope: CatalogScope): void {
    if (this.access.mode === 'none') return;
    const listed = this.cache.get(resolved.target, 'tools') as Tool[] | undefined;
    const annotations = listed?.find((tool) => tool.name === resolved.name)?.annotations;
    const given =
      typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
    const tool = { target: resolved.target, tool: resolved.name, annotations };
    if (!this.access.mayCall(accessRequestOf(scope.caller), tool, given)) {
      throw new GatewayError('PolicyDenied', `Access denied: you may not call tool "${String(called)}"`, {
        tool: String(called),
      });
    }
  }

  /** Tools or prompts under their exposed names; with prefixes off, a name two targets share is withheld. */
  private exposeNamed(lists: Array<{ target: string; items: Array<Tool | Prompt> }>): Array<Tool | Prompt> {
    const prefixed = this.prefixed;
    const entries: NamedEntry[] = lists.flatMap(({ target, items }) =>
      items.map((item) => ({ target, name: item.name })),
    );
    if (!this.reportedLongNames) {
      this.reportedLongNames = true;
      const long = overlongNames(entries, prefixed);
      if (long.length)
        this.logger.warn('exposed names longer than 64 characters; some clients refuse them', { names: long });
    }
    const counts = new Map<string, number>();
    for (const entry of entries) counts.set(entry.name, (counts.get(entry.name) ?? 0) + 1);
    const exposed: Array<Tool | Prompt> = [];
    for (const { target, items } of lists) {
      for (const item of items) {
        if (!prefixed && (counts.get(item.name) ?? 0) > 1) {
          this.logger.warn('duplicate name withheld: prefixes are off and several targets offer it', {
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
  private exposeByUri(lists: Array<{ target: string; items: Array<Resource | ResourceTemplate> }>): unknown[] {
    const seen = new Map<string, string>();
    const exposed: unknown[] = [];
    for (const { target, items } of lists) {
      for (const item of items) {
        const uri = 'uriTemplate' in item ? item.uriTemplate : (item as Resource).uri;
        const owner = seen.get(uri);
        if (owner) {
          this.logger.warn('duplicate resource URI: the first target wins', { uri, target, winner: owner });
          continue;
        }
        seen.set(uri, target);
        exposed.push(item);
      }
    }
    return exposed;
  }

  /**
   * Listings of one kind for routing: this instance's recent one of each target, or live. A live one is
   * shared by every lookup of the same caller that misses meanwhile (a listen naming N resources, N
   * parallel calls): N misses cost one listing of each target, not N. Shared, it follows no lookup's
   * signal, only its budget (`requestTimeoutMs`); a lookup that goes away stops waiting for it.
   */
  private async listing<K extends ListingKind>(kind: K, scope: CatalogScope, targets?: string[], refresh = false) {
    const names = targets ?? this.targets.names;
    const shared = { caller: scope.caller, signal: new AbortController().signal };
    const lists = await untilAborted(
      Promise.all(
        names.map((target) => {
          const items = refresh ? undefined : this.cache.get(target, kind);
          if (items !== undefined) return { target, items, unconnected: false };
          // Keyed by the caller too: a listing is fetched as its caller (its session, its own credentials).
          const key = `${kind}\u0000${target}\u0000${scope.caller.sessions.scope}`;
          return this.listings.run(key, () => this.listTarget(kind, target, shared)) as Promise<
            TargetList<K> | undefined
          >;
        }),
      ),
      scope.signal,
    );
    return lists.filter((list) => list !== undefined);
  }

  /**
   * The target of a called tool or prompt name, and the target's own name for it. A filtered tool
   * is unknown, however it was named (routing a prefixed name of an unlisted target included).
   */
  async resolveNamed(
    called: unknown,
    kind: 'tool' | 'prompt',
    scope: CatalogScope,
  ): Promise<{ target: string; name: string }> {
    const resolved = await this.resolveAnyNamed(called, kind, scope);
    if (kind === 'tool' && !this.filters.allows(resolved.target, resolved.name)) {
      throw new GatewayError('InvalidParams', `Unknown tool "${String(called)}"`, { candidates: [] });
    }
    noteRequest({ target: resolved.target, ...(kind === 'tool' ? { tool: resolved.name } : {}) });
    return resolved;
  }

  private async resolveAnyNamed(
    called: unknown,
    kind: 'tool' | 'prompt',
    scope: CatalogScope,
  ): Promise<{ target: string; name: string }> {
    if (typeof called !== 'string' || called.length === 0) {
      throw new GatewayError('InvalidParams', `Invalid params: ${kind} name must be a non-empty string`);
    }
    const listKind = kind === 'tool' ? 'tools' : 'prompts';
    const offers = (lists: Array<{ target: string; items: Array<Tool | Prompt> }>, target: string, name: string) =>
      lists.some((l) => l.target === target && l.items.some((item) => item.name === name));
    // A prefixed name needs only its own target's listing (cached per instance, refreshed on a miss).
    const separator = called.indexOf(NAME_SEPARATOR);
    if (separator > 0) {
      const target = called.slice(0, separator);
      const name = called.slice(separator + NAME_SEPARATOR.length);
      if (this.targets.has(target)) {
        if (offers(await this.listing(listKind, scope, [target]), target, name)) return { target, name };
        const fresh = await this.listing(listKind, scope, [target], true);
        if (offers(fresh, target, name)) return { target, name };
        // The target could not be listed: route anyway, so the client learns which dependency failed
        // (or, a per-user target not connected to, is asked to connect).
        if (!fresh.some((l) => l.target === target && !l.unconnected)) return { target, name };
      }
    }
    const lists = await this.listing(listKind, scope);
    const entries = lists.flatMap(({ target, items }) => items.map((item) => ({ target, name: item.name })));
    const resolution = resolveName(called, entries, this.targets.names, kind);
    if (!resolution.ok) {
      // A name no listed target offers may be one of the one per-user target the principal has not
      // connected to (its tools are unknown until then): the call goes there and asks to connect.
      const unconnected = lists.filter((l) => l.unconnected);
      if (unconnected.length === 1) return { target: unconnected[0]!.target, name: called };
      throw new GatewayError('InvalidParams', resolution.message, { candidates: resolution.candidates });
    }
    return { target: resolution.target, name: resolution.name };
  }

  /** The target of a resource URI: an exact listed resource first, then a matching template. */
  async resolveResource(uri: unknown, scope: CatalogScope): Promise<string> {
    if (typeof uri !== 'string' || uri.length === 0) {
      throw new GatewayError('InvalidParams', 'Invalid params: uri must be a non-empty string');
    }
    const target = (await this.placeResources([uri], scope)).get(uri);
    if (target !== undefined) return this.routed(target);
    // Each era's own code: 2025 has -32002; 2026-07-28 reports a missing resource as invalid params.
    throw new GatewayError(
      scope.caller.era === 'legacy' ? 'ResourceNotFound' : 'InvalidParams',
      `Resource not found: ${uri}`,
      {
        uri,
      },
    );
  }

  /**
   * The targets of many resource URIs at once (a listen's), each placed as resolveResource places one:
   * an exact listed resource first (the first target in configuration order), then the first target
   * with a matching template, else the only target if there is one. One listing of each kind per
   * target, however many URIs; templates only for URIs no target lists. A URI placed nowhere is absent.
   */
  async placeResources(uris: readonly string[], scope: CatalogScope): Promise<Map<string, string>> {
    const placed = new Map<string, string>();
    const wanted = uris.filter((uri) => uri.length > 0);
    if (wanted.length === 0) return placed;
    const owners = new Map<string, string>();
    for (const { target, items } of await this.listing('resources', scope)) {
      for (const resource of items) if (!owners.has(resource.uri)) owners.set(resource.uri, target);
    }
    const rest: string[] = [];
    for (const uri of wanted) {
      const owner = owners.get(uri);
      if (owner !== undefined) placed.set(uri, owner);
      else rest.push(uri);
    }
    if (rest.length === 0) return placed;
    const templates = await this.listing('resourceTemplates', scope);
    const [only, ...others] = this.targets.names;
    for (const uri of rest) {
      const owner = templates.find(({ items }) => items.some((t) => matchesTemplate(t.uriTemplate, uri)))?.target;
      if (owner !== undefined) placed.set(uri, owner);
      else if (only !== undefined && others.length === 0) placed.set(uri, only);
    }
    return placed;
  }

  /** The target that owns a resource template (completion/complete with ref/resource). */
  async resolveTemplate(uriTemplate: unknown, scope: CatalogScope): Promise<string> {
    const templates = await this.listing('resourceTemplates', scope);
    const owner = templates.find(({ items }) => items.some((t) => t.uriTemplate === uriTemplate));
    if (owner) return this.routed(owner.target);
    return this.resolveResource(uriTemplate, scope);
  }

  /** The target a request goes to, noted for its access log line. */
  private routed(target: string): string {
    noteRequest({ target });
    return target;
  }
}
