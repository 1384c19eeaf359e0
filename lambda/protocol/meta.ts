import { factsOf, MODERN_METHODS } from './methods';

/** `_meta` keys of 2026-07-28 requests and results (spec basic/index.mdx, "Request metadata"). */
export const META_KEYS = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
} as const;

/**
 * The Tasks extension's identifier (https://github.com/modelcontextprotocol/ext-tasks/blob/main/specification/draft/tasks.md): a
 * key of `capabilities.extensions`, declared by a client per request and by a server in `server/discover`.
 */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** Whether capabilities (a client's per request, a server's in discover) declare the Tasks extension. */
export function declaresTasks(capabilities: unknown): boolean {
  const extensions = (capabilities as { extensions?: unknown } | undefined)?.extensions;
  return typeof extensions === 'object' && extensions !== null && TASKS_EXTENSION in extensions;
}

/**
 * The body field `Mcp-Name` mirrors for `method`, if any: a 2026-07-28 method's name source when it is
 * a `name`, a `uri` or a task's `taskId` (protocol/methods.ts; a completion's `ref` is not mirrored).
 */
export function nameSourceOf(method: string): 'name' | 'uri' | 'taskId' | undefined {
  if (!MODERN_METHODS.has(method)) return undefined;
  const source = factsOf(method)?.nameSource;
  return source === 'name' || source === 'uri' || source === 'taskId' ? source : undefined;
}
