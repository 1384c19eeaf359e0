import type { ListingKind } from '../protocol/methods';
import type { Prompt, Resource, ResourceTemplate, Tool } from '../protocol/types';
import type { Clock } from '../scheduling/clock';

/**
 * What each target offered when it was last listed, per instance. Only used to route bare names and
 * resource URIs; every list the client asks for is fetched live. Bounded: one entry per configured target.
 */
export interface TargetListing {
  tools?: Tool[];
  prompts?: Prompt[];
  resources?: Resource[];
  resourceTemplates?: ResourceTemplate[];
}

export type { ListingKind };

export class CatalogCache {
  private readonly entries = new Map<string, { listing: TargetListing; at: Record<string, number> }>();

  constructor(
    /** The gateway's clock: listings are aged by it. */
    readonly clock: Clock,
    private readonly maxAgeMs = 60_000,
  ) {}

  put<K extends ListingKind>(target: string, kind: K, items: NonNullable<TargetListing[K]>): void {
    const entry = this.entries.get(target) ?? { listing: {}, at: {} };
    entry.listing[kind] = items;
    entry.at[kind] = this.clock.now();
    this.entries.set(target, entry);
  }

  /** A target said its listing changed (`notifications/…/list_changed`): the next lookup lists it again. */
  forget(target: string, kinds: readonly ListingKind[]): void {
    const entry = this.entries.get(target);
    for (const kind of kinds) delete entry?.at[kind];
  }

  get<K extends ListingKind>(target: string, kind: K): TargetListing[K] | undefined {
    const entry = this.entries.get(target);
    if (!entry || entry.at[kind] === undefined || this.clock.now() - entry.at[kind] > this.maxAgeMs) return undefined;
    return entry.listing[kind];
  }
}
