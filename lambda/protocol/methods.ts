/** Method names the gateway routes, by what it does with them, and the shape of each era's routing table. */

/** Where a request names what it calls: the `params` field the gateway resolves to a target. */
export type NameSource = 'name' | 'uri' | 'ref' | 'taskId';

/** What is true of a client request method whichever era carries it. */
export interface MethodFacts {
  /**
   * The `params` field naming what is called (a tool or prompt `name`, a resource `uri`, a completion's
   * `ref`), resolved through the catalog to one target; absent when the method names nothing (answered
   * by the gateway, or by every target). In 2026-07-28 `Mcp-Name` mirrors `name` and `uri`.
   */
  readonly nameSource?: NameSource;
  /**
   * Sending it twice does nothing sending it once does not: no side effect at a target (the handshake,
   * `ping`, discovery, lists; a duplicate `initialize` only leaves an idle target session). The gateway
   * resends these on a pooled connection that turned out dead; anything else may have run (a tool, a
   * prompt or resource a server computes, a subscription, a log level) and is never sent twice.
   */
  readonly safeToResend: boolean;
}

/** Every request method a client may send the gateway, in either era, with its facts (one place). */
export const REQUEST_METHODS = {
  initialize: { safeToResend: true },
  ping: { safeToResend: true },
  'server/discover': { safeToResend: true },
  'tools/list': { safeToResend: true },
  'prompts/list': { safeToResend: true },
  'resources/list': { safeToResend: true },
  'resources/templates/list': { safeToResend: true },
  'tools/call': { nameSource: 'name', safeToResend: false },
  'prompts/get': { nameSource: 'name', safeToResend: false },
  'resources/read': { nameSource: 'uri', safeToResend: false },
  'resources/subscribe': { nameSource: 'uri', safeToResend: false },
  'resources/unsubscribe': { nameSource: 'uri', safeToResend: false },
  'completion/complete': { nameSource: 'ref', safeToResend: false },
  'logging/setLevel': { safeToResend: false },
  // The Tasks extension (io.modelcontextprotocol/tasks, 2026-07-28): a task is named by its id, which
  // `Mcp-Name` mirrors so intermediaries can route by it; polling has no side effect.
  'tasks/get': { nameSource: 'taskId', safeToResend: true },
  'tasks/update': { nameSource: 'taskId', safeToResend: false },
  'tasks/cancel': { nameSource: 'taskId', safeToResend: false },
  // Tasks of 2025-11-25 (experimental, core): `tasks/get` and `tasks/cancel` above, and these two. The
  // result of a task blocks until it ends and hands over what the task queued (a question), so it is
  // never sent twice; listing has no side effect.
  'tasks/result': { nameSource: 'taskId', safeToResend: false },
  'tasks/list': { safeToResend: true },
  // 2026-07-28's one long-lived request: the stream of what changes (SEP-2575).
  'subscriptions/listen': { safeToResend: false },
} as const satisfies Record<string, MethodFacts>;

export type RequestMethod = keyof typeof REQUEST_METHODS;

/** The facts of `method`, when it is a request method the gateway knows (own keys only: never `toString`). */
export function factsOf(method: string): MethodFacts | undefined {
  return Object.hasOwn(REQUEST_METHODS, method) ? REQUEST_METHODS[method as RequestMethod] : undefined;
}

/** Requests sent again on a pooled connection that turned out dead (the `safeToResend` column). */
export const SAFE_TO_RESEND_METHODS: ReadonlySet<string> = new Set(
  (Object.keys(REQUEST_METHODS) as RequestMethod[]).filter((method) => REQUEST_METHODS[method].safeToResend),
);

/** The methods of protocol 2026-07-28 (a request for any other is refused before routing: 404, -32601). */
export const MODERN_METHOD_LIST = [
  'server/discover',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
  'tasks/get',
  'tasks/update',
  'tasks/cancel',
  'subscriptions/listen',
] as const satisfies readonly RequestMethod[];

/** The methods of the Tasks extension (each names a task by `params.taskId`). */
export const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

/**
 * The task methods of 2025-11-25 (experimental, in the core protocol): a 2025 session's (legacy/tasks.ts).
 * `tasks/get` and `tasks/cancel` share their names with the extension's; `tasks/update` is the extension's only.
 */
export const LEGACY_TASK_METHODS: ReadonlySet<string> = new Set([
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
]);

export type ModernMethod = (typeof MODERN_METHOD_LIST)[number];

/** Methods served to 2026-07-28 clients. */
export const MODERN_METHODS: ReadonlySet<string> = new Set(MODERN_METHOD_LIST);

/** One row of an era's routing table: a method, its facts, and the era path's handler. */
export interface Route<H> extends MethodFacts {
  readonly method: RequestMethod;
  readonly handler: H;
}

/**
 * An era's routing table. Each era path writes its own (`legacy/routes.ts`, `modern/routes.ts`): the
 * methods it serves and their handlers, joined here with the methods' facts. A method not in it is
 * that era's unknown method.
 */
export type RoutingTable<H> = ReadonlyMap<string, Route<H>>;

export function routingTable<M extends RequestMethod, H>(handlers: { readonly [K in M]: H }): RoutingTable<H> {
  const rows = (Object.entries(handlers) as Array<[M, H]>).map(([method, handler]): [string, Route<H>] => {
    const facts: MethodFacts = REQUEST_METHODS[method];
    return [method, { method, ...facts, handler }];
  });
  return new Map(rows);
}

/**
 * Calls relayed to a target on a client's behalf: they may run long and ask the user for input, so
 * their timeout is the target's silence, not the whole answer (config `callIdleTimeoutMs`).
 */
export const RELAYED_CALL_METHODS: ReadonlySet<string> = new Set([
  'tools/call',
  'prompts/get',
  'resources/read',
  'completion/complete',
  // A 2025-11-25 task's result: it waits for the task, and hands over the task's questions meanwhile.
  'tasks/result',
]);

/**
 * Requests timed by the target's silence rather than by the whole answer (`callIdleTimeoutMs`): the
 * relayed calls, and a listen, which answers only when it ends (its keep-alives show it is there).
 */
export const SILENCE_TIMED_METHODS: ReadonlySet<string> = new Set([...RELAYED_CALL_METHODS, 'subscriptions/listen']);

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
