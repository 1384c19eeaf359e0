import type { CallerIdentity } from '../../../lambda/auth/identity';
import { CatalogCache } from '../../../lambda/catalog/cache';
import { Catalog, type CatalogScope } from '../../../lambda/catalog/catalog';
import { DEFAULT_TARGET_LIMITS, type TargetConfig } from '../../../lambda/config/schema';
import { createLogger } from '../../../lambda/observability/logger';
import { accessPolicyOf } from '../../../lambda/policy/access-policy';
import { DependencyFailedError, GatewayError } from '../../../lambda/protocol/errors';
import { LIST_METHODS, type ListingKind } from '../../../lambda/protocol/methods';
import type { Era } from '../../../lambda/protocol/versions';
import type { Caller, TargetLink } from '../../../lambda/targets/target-link';
import type { Targets } from '../../../lambda/targets/targets';
import { clockAt } from '../../support/fake-clock';

/**
 * What a called name or URI resolves to (catalog/catalog.ts), against fake targets whose listings a
 * test sets and whose list requests it counts: prefixed and bare names, the per-instance routing
 * cache (aged by an injected clock) and its refresh on a miss, tool filters, resources before
 * templates, each era's not-found error, and a target that cannot be listed.
 */

type Listings = Partial<Record<ListingKind, unknown[]>>;

interface FakeTargets {
  catalog: Catalog;
  /** What each target lists now (tests change it to model a target that changed). */
  listings: Record<string, Listings>;
  /** Targets that fail to be listed. */
  failing: Set<string>;
  /** List requests per target. */
  listed: Record<string, number>;
  advance(ms: number): void;
}

const CACHE_AGE_MS = 60_000;
const tool = (name: string) => ({ name, inputSchema: { type: 'object' as const } });

function fakeTargets(
  listings: Record<string, Listings>,
  options: {
    configs?: Partial<TargetConfig>[];
    prefix?: 'always' | 'conditional' | 'never';
    /** Cedar policies (enforced) and the arguments they read. */
    policies?: { text: string; argumentTypes?: Record<string, 'Long' | 'String'> };
  } = {},
): FakeTargets {
  let now = 1_000_000;
  const names = Object.keys(listings);
  const configs = names.map(
    (name) =>
      ({ name, url: `http://127.0.0.1:9/${name}`, ...options.configs?.find((c) => c.name === name) }) as TargetConfig,
  );
  const state: Omit<FakeTargets, 'catalog'> = {
    listings,
    failing: new Set(),
    listed: Object.fromEntries(names.map((n) => [n, 0])),
    advance: (ms) => {
      now += ms;
    },
  };
  const targetLink = (target: string): TargetLink =>
    ({
      target,
      era: 'legacy' as Era,
      call: async (request: { method: string }) => {
        state.listed[target] = (state.listed[target] ?? 0) + 1;
        if (state.failing.has(target)) throw new DependencyFailedError(target, 'unreachable');
        const kind = (Object.keys(LIST_METHODS) as ListingKind[]).find(
          (k) => LIST_METHODS[k].method === request.method,
        );
        if (!kind) throw new Error(`unexpected ${request.method}`);
        return { jsonrpc: '2.0', id: 1, result: { [LIST_METHODS[kind].field]: state.listings[target]?.[kind] ?? [] } };
      },
    }) as unknown as TargetLink; // only target, era and call are used by the catalog
  const targets = {
    configs,
    names,
    has: (name: string) => names.includes(name),
    limits: () => DEFAULT_TARGET_LIMITS,
    open: async (name: string) => targetLink(name),
  } as unknown as Targets; // the part of Targets the catalog uses
  const catalog = new Catalog(
    targets,
    { toolNamePrefix: options.prefix ?? 'always' },
    createLogger('SILENT'),
    new CatalogCache(
      clockAt(() => now),
      CACHE_AGE_MS,
    ),
    accessPolicyOf(
      options.policies && {
        mode: 'enforce',
        policies: options.policies.text,
        argumentTypes: options.policies.argumentTypes ?? {},
      },
      clockAt(() => now),
      createLogger('SILENT'),
    ),
  );
  return { ...state, catalog };
}

/** A caller's scope; `who` names the caller (its target sessions), whose live listings are shared. */
function scope(
  era: Era = 'legacy',
  who = 'client',
  signal = new AbortController().signal,
  identity: CallerIdentity = { kind: 'anonymous' },
): CatalogScope {
  const protocolVersion = era === 'legacy' ? '2025-11-25' : '2026-07-28';
  return { caller: { identity, era, protocolVersion, sessions: { scope: who } } as Caller, signal };
}

/** The GatewayError a promise rejects with. */
async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof GatewayError)) throw new Error(`expected a GatewayError, got ${String(error)}`);
  return error;
}

describe('resolving a tool name', () => {
  it("a prefixed name goes to its target under the target's own name, listing only that target", async () => {
    const f = fakeTargets({ notes: { tools: [tool('add')] }, mail: { tools: [tool('send')] } });
    expect(await f.catalog.resolveNamed('notes___add', 'tool', scope())).toEqual({ target: 'notes', name: 'add' });
    expect(f.listed).toEqual({ notes: 1, mail: 0 });
  });

  it('routes from the cache within its age, and lists again after it', async () => {
    const f = fakeTargets({ notes: { tools: [tool('add')] } });
    await f.catalog.resolveNamed('notes___add', 'tool', scope());
    f.advance(CACHE_AGE_MS);
    await f.catalog.resolveNamed('notes___add', 'tool', scope());
    expect(f.listed.notes).toBe(1);
    f.advance(1);
    await f.catalog.resolveNamed('notes___add', 'tool', scope());
    expect(f.listed.notes).toBe(2);
  });

  it('a name the cached listing lacks is looked up once more, live (the target added a tool)', async () => {
    const f = fakeTargets({ notes: { tools: [tool('add')] } });
    await f.catalog.resolveNamed('notes___add', 'tool', scope());
    f.listings.notes = { tools: [tool('add'), tool('remove')] };
    expect(await f.catalog.resolveNamed('notes___remove', 'tool', scope())).toEqual({
      target: 'notes',
      name: 'remove',
    });
    expect(f.listed.notes).toBe(2);
  });

  it("a target's list_changed drops its cached listing: the next call lists it again", async () => {
    const f = fakeTargets({ notes: { tools: [tool('add')] } });
    await f.catalog.resolveNamed('add', 'tool', scope());
    f.catalog.listingChanged('notes', ['tools']);
    await f.catalog.resolveNamed('add', 'tool', scope());
    expect(f.listed.notes).toBe(2);
  });

  it('a bare name resolves when exactly one target offers it', async () => {
    const f = fakeTargets({ notes: { tools: [tool('add')] }, mail: { tools: [tool('send')] } });
    expect(await f.catalog.resolveNamed('send', 'tool', scope())).toEqual({ target: 'mail', name: 'send' });
  });

  it('a bare name two targets offer is InvalidParams naming both prefixed names', async () => {
    const f = fakeTargets({ a: { tools: [tool('search')] }, b: { tools: [tool('search')] } });
    const error = await refusal(f.catalog.resolveNamed('search', 'tool', scope()));
    expect(error.kind).toBe('InvalidParams');
    expect(error.data).toMatchObject({ candidates: ['a___search', 'b___search'] });
  });

  it('an unknown name is InvalidParams with close candidates', async () => {
    const f = fakeTargets({ notes: { tools: [tool('add_note')] } });
    const error = await refusal(f.catalog.resolveNamed('note', 'tool', scope()));
    expect(error.kind).toBe('InvalidParams');
    expect(error.message).toMatch(/Unknown tool "note"/);
    expect(error.data).toMatchObject({ candidates: ['notes___add_note'] });
  });

  it('a prefixed name of a target that cannot be listed is routed anyway (the client learns which target failed)', async () => {
    const f = fakeTargets({ notes: { tools: [tool('add')] }, mail: { tools: [] } });
    f.failing.add('notes');
    expect(await f.catalog.resolveNamed('notes___add', 'tool', scope())).toEqual({ target: 'notes', name: 'add' });
    expect(f.catalog.lastFailure('notes')?.message).toMatch(/unreachable/);
  });

  it('a filtered tool is unknown however it is named, and never routed', async () => {
    const f = fakeTargets(
      { notes: { tools: [tool('read'), tool('delete')] } },
      { configs: [{ name: 'notes', tools: { exclude: ['delete'] } }] },
    );
    expect((await refusal(f.catalog.resolveNamed('notes___delete', 'tool', scope()))).kind).toBe('InvalidParams');
    expect((await refusal(f.catalog.resolveNamed('delete', 'tool', scope()))).kind).toBe('InvalidParams');
    expect(await f.catalog.resolveNamed('read', 'tool', scope())).toEqual({ target: 'notes', name: 'read' });
    // Not even when the target cannot be listed (where a prefixed name is otherwise routed unconfirmed).
    f.failing.add('notes');
    f.advance(CACHE_AGE_MS + 1);
    expect((await refusal(f.catalog.resolveNamed('notes___delete', 'tool', scope()))).kind).toBe('InvalidParams');
  });

  it('a name that is not a non-empty string is InvalidParams without listing anything', async () => {
    const f = fakeTargets({ notes: { tools: [tool('add')] } });
    expect((await refusal(f.catalog.resolveNamed(42, 'tool', scope()))).kind).toBe('InvalidParams');
    expect((await refusal(f.catalog.resolveNamed('', 'prompt', scope()))).kind).toBe('InvalidParams');
    expect(f.listed.notes).toBe(0);
  });
});

describe('resolving a resource URI', () => {
  const listings = (): Record<string, Listings> => ({
    files: {
      resources: [{ uri: 'file:///a.txt', name: 'a' }],
      resourceTemplates: [{ uriTemplate: 'db://{table}/{id}', name: 'row' }],
    },
    db: {
      resources: [{ uri: 'db://users/1', name: 'exact' }],
      resourceTemplates: [{ uriTemplate: 'file:///{path}', name: 'any file' }],
    },
  });

  it('an exact listed resource wins over a matching template of another target', async () => {
    const f = fakeTargets(listings());
    expect(await f.catalog.resolveResource('db://users/1', scope())).toBe('db');
    expect(await f.catalog.resolveResource('file:///a.txt', scope())).toBe('files');
  });

  it('otherwise the target whose template matches', async () => {
    const f = fakeTargets(listings());
    expect(await f.catalog.resolveResource('db://orders/7', scope())).toBe('files');
    expect(await f.catalog.resolveResource('file:///b.txt', scope())).toBe('db');
  });

  it("a URI nobody offers is not found in each era's own code: -32002 for 2025, invalid params for 2026-07-28", async () => {
    const f = fakeTargets(listings());
    expect((await refusal(f.catalog.resolveResource('https://x/y', scope('legacy')))).kind).toBe('ResourceNotFound');
    expect((await refusal(f.catalog.resolveResource('https://x/y', scope('modern')))).kind).toBe('InvalidParams');
  });

  it('with one target, any URI goes to it (it answers for itself)', async () => {
    const f = fakeTargets({ only: { resources: [] } });
    expect(await f.catalog.resolveResource('https://x/y', scope())).toBe('only');
  });

  it('a template named exactly (completion/complete) goes to the target that owns it', async () => {
    const f = fakeTargets(listings());
    expect(await f.catalog.resolveTemplate('file:///{path}', scope())).toBe('db');
  });
});

describe('placing many resource URIs at once (a listen)', () => {
  const listings = (): Record<string, Listings> => ({
    files: {
      resources: Array.from({ length: 50 }, (_, i) => ({ uri: `file:///${i}.txt`, name: `f${i}` })),
      resourceTemplates: [{ uriTemplate: 'db://{table}/{id}', name: 'row' }],
    },
    db: {
      resources: [
        { uri: 'db://users/1', name: 'exact' },
        { uri: 'file:///0.txt', name: 'second owner' },
      ],
      resourceTemplates: [{ uriTemplate: 'file:///{path}', name: 'any file' }],
    },
  });

  it('places each as resolveResource would, with one listing of each kind per target however many URIs', async () => {
    const f = fakeTargets(listings());
    const uris = [...Array.from({ length: 50 }, (_, i) => `file:///${i}.txt`), 'db://users/1', 'db://orders/7'];
    const placed = await f.catalog.placeResources([...uris, 'https://x/y', ''], scope('modern'));
    expect(placed.get('file:///0.txt')).toBe('files'); // the first target in configuration order
    expect(placed.get('file:///49.txt')).toBe('files');
    expect(placed.get('db://users/1')).toBe('db'); // exact, before files' matching template
    expect(placed.get('db://orders/7')).toBe('files'); // by template
    expect(placed.has('https://x/y')).toBe(false);
    expect(placed.has('')).toBe(false);
    expect(placed.size).toBe(52);
    // resources once per target, templates once per target (for the URIs no target lists).
    expect(f.listed).toEqual({ files: 2, db: 2 });
  });

  it('lists no templates when every URI is listed', async () => {
    const f = fakeTargets(listings());
    await f.catalog.placeResources(['file:///1.txt', 'db://users/1'], scope());
    expect(f.listed).toEqual({ files: 1, db: 1 });
  });

  it('with one target, every URI is placed there', async () => {
    const f = fakeTargets({ only: { resources: [] } });
    expect([...(await f.catalog.placeResources(['a://1', 'b://2'], scope())).values()]).toEqual(['only', 'only']);
  });
});

describe('live listings for routing, one per target at a time', () => {
  const listings = (): Record<string, Listings> => ({
    notes: { tools: [tool('add')], resources: [{ uri: 'note://1', name: 'one' }] },
    mail: { tools: [tool('send')], resources: [] },
  });

  it('concurrent lookups of one caller on a cold cache share one listing of each target', async () => {
    const f = fakeTargets(listings());
    // Each lookup is a request of its own (its own signal), of the same caller.
    await Promise.all([
      ...Array.from({ length: 100 }, () => f.catalog.resolveResource('note://1', scope('modern'))),
      ...Array.from({ length: 100 }, () => f.catalog.resolveNamed('notes___add', 'tool', scope('modern'))),
    ]);
    // One resources listing of each target, one tools listing of notes (a prefixed name lists its target only).
    expect(f.listed).toEqual({ notes: 2, mail: 1 });
  });

  it('another caller lists for itself (a listing is fetched as its caller)', async () => {
    const f = fakeTargets(listings());
    await Promise.all([
      f.catalog.resolveResource('note://1', scope('modern', 'alice')),
      f.catalog.resolveResource('note://1', scope('modern', 'bob')),
    ]);
    expect(f.listed).toEqual({ notes: 2, mail: 2 });
  });

  it('a lookup whose request ends stops waiting; the others sharing the listing are answered', async () => {
    const f = fakeTargets(listings());
    const leaving = new AbortController();
    const gone = f.catalog.resolveResource('note://1', scope('modern', 'client', leaving.signal));
    const staying = f.catalog.resolveResource('note://1', scope('modern', 'client'));
    leaving.abort(new Error('client gone'));
    await expect(gone).rejects.toThrow('client gone');
    expect(await staying).toBe('notes');
    expect(f.listed).toEqual({ notes: 1, mail: 1 });
  });

  it('a cached target is not listed again when another one misses', async () => {
    const f = fakeTargets(listings());
    await f.catalog.resolveResource('note://1', scope());
    f.catalog.listingChanged('mail', ['resources']);
    await f.catalog.resolveResource('note://1', scope());
    expect(f.listed).toEqual({ notes: 1, mail: 2 });
  });
});

describe('the aggregated list', () => {
  it('prefixes names; with prefixes off a name two targets share is withheld, the rest stay bare', async () => {
    const both = { a: { tools: [tool('search'), tool('a_only')] }, b: { tools: [tool('search')] } };
    const prefixed = await fakeTargets(both).catalog.aggregate('tools', scope());
    expect((prefixed.items as Array<{ name: string }>).map((t) => t.name)).toEqual([
      'a___search',
      'a___a_only',
      'b___search',
    ]);
    const bare = await fakeTargets(both, { prefix: 'never' }).catalog.aggregate('tools', scope());
    expect((bare.items as Array<{ name: string }>).map((t) => t.name)).toEqual(['a_only']);
  });

  it('leaves out a target that fails and keeps the others', async () => {
    const f = fakeTargets({ a: { tools: [tool('x')] }, b: { tools: [tool('y')] } });
    f.failing.add('a');
    const { items } = await f.catalog.aggregate('tools', scope());
    expect((items as Array<{ name: string }>).map((t) => t.name)).toEqual(['b___y']);
    expect(f.catalog.lastFailure('a')).toBeDefined();
    expect(f.catalog.lastFailure('b')).toBeUndefined();
  });
});

describe('with policies', () => {
  const POLICIES = {
    text: `@id("finance") permit (principal is McpGateway::User, action, resource == McpGateway::Tool::"payments___refund")
           when { principal.groups.contains("finance") && context.arguments has amount && context.arguments.amount <= 500 };
           @id("read-only") permit (principal, action, resource is McpGateway::Tool)
           when { resource has readOnlyHint && resource.readOnlyHint };`,
    argumentTypes: { amount: 'Long' as const },
  };
  const finance: CallerIdentity = {
    kind: 'user',
    sub: 'alice',
    issuer: 'https://idp',
    claims: { groups: ['finance'] },
  };
  const other: CallerIdentity = { kind: 'user', sub: 'bob', issuer: 'https://idp', claims: { groups: [] } };
  const listings = {
    payments: {
      tools: [tool('refund'), { ...tool('balance'), annotations: { readOnlyHint: true } }],
    },
  };
  const as = (identity: CallerIdentity, era: Era = 'legacy') => scope(era, identity.kind, undefined, identity);

  it('lists each caller only the tools some call of which policy could permit, in either era, never shared between callers', async () => {
    const f = fakeTargets(listings, { policies: POLICIES });
    const names = async (identity: CallerIdentity, era: Era) =>
      ((await f.catalog.aggregate('tools', as(identity, era))).items as Array<{ name: string }>).map((t) => t.name);
    expect(await names(finance, 'legacy')).toEqual(['payments___refund', 'payments___balance']);
    expect(await names(other, 'legacy')).toEqual(['payments___balance']);
    expect(await names(other, 'modern')).toEqual(['payments___balance']);
    expect((await f.catalog.aggregate('tools', as(finance, 'modern'))).cacheScope).toBe('private');
  });

  it('a call is decided with its arguments; a refusal names the tool the client called, never a policy', async () => {
    const f = fakeTargets(listings, { policies: POLICIES });
    const resolved = await f.catalog.resolveNamed('payments___refund', 'tool', as(finance));
    expect(() => f.catalog.authorizeCall('payments___refund', resolved, { amount: 100 }, as(finance))).not.toThrow();
    for (const [identity, args] of [
      [finance, { amount: 900 }],
      [other, { amount: 100 }],
      [finance, 'not an object'],
    ] as const) {
      let refused: unknown;
      try {
        f.catalog.authorizeCall('payments___refund', resolved, args, as(identity));
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(GatewayError);
      expect(refused).toMatchObject({
        kind: 'PolicyDenied',
        message: 'Access denied: you may not call tool "payments___refund"',
        data: { tool: 'payments___refund' },
      });
    }
  });

  it('the annotations a call is decided with are those the target listed for it', async () => {
    const f = fakeTargets(listings, { policies: POLICIES });
    const balance = await f.catalog.resolveNamed('payments___balance', 'tool', as(other));
    expect(() => f.catalog.authorizeCall('payments___balance', balance, {}, as(other))).not.toThrow();
    f.listings.payments!.tools = [tool('refund'), tool('balance')]; // no longer says read-only
    f.catalog.listingChanged('payments', ['tools']);
    const relisted = await f.catalog.resolveNamed('payments___balance', 'tool', as(other));
    expect(() => f.catalog.authorizeCall('payments___balance', relisted, {}, as(other))).toThrow(/Access denied/);
  });
});
