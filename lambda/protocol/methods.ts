/** Method names the gateway routes, by what it does with them. */

/** Methods served to 2026-07-28 clients. */
export const MODERN_METHODS: ReadonlySet<string> = new Set([
  'server/discover',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
]);

/**
 * Calls relayed to a target on a client's behalf: they may run long and ask the user for input, so
 * their timeout is the target's silence, not the whole answer (config `callIdleTimeoutMs`).
 */
export const RELAYED_CALL_METHODS: ReadonlySet<string> = new Set([
  'tools/call',
  'prompts/get',
  'resources/read',
  'completion/complete',
]);

/** What a target may ask of the user during a call (2025: server requests; 2026: `inputRequests`). */
export const INPUT_METHODS: ReadonlySet<string> = new Set([
  'elicitation/create',
  'sampling/createMessage',
  'roots/list',
]);

export type ListingKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';

/** The list methods and the result field each one fills. */
export const LIST_METHODS: Readonly<Record<ListingKind, { method: string; field: string }>> = {
  tools: { method: 'tools/list', field: 'tools' },
  prompts: { method: 'prompts/list', field: 'prompts' },
  resources: { method: 'resources/list', field: 'resources' },
  resourceTemplates: { method: 'resources/templates/list', field: 'resourceTemplates' },
};

export function listingKindOf(method: string): ListingKind | undefined {
  return (Object.keys(LIST_METHODS) as ListingKind[]).find((kind) => LIST_METHODS[kind].method === method);
}
