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
 * The body field `Mcp-Name` mirrors for `method`, if any: a 2026-07-28 method's name source when it is
 * a `name` or a `uri` (protocol/methods.ts; a completion's `ref` is not mirrored).
 */
export function nameSourceOf(method: string): 'name' | 'uri' | undefined {
  if (!MODERN_METHODS.has(method)) return undefined;
  const source = factsOf(method)?.nameSource;
  return source === 'name' || source === 'uri' ? source : undefined;
}
