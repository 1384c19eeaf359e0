/** `_meta` keys of 2026-07-28 requests and results (spec basic/index.mdx, "Request metadata"). */
export const META_KEYS = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
} as const;

/** Methods whose `Mcp-Name` header mirrors a body field. */
export const NAME_SOURCE: Readonly<Record<string, 'name' | 'uri'>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
};

/** The body field `Mcp-Name` mirrors for `method`, if any. */
export function nameSourceOf(method: string): 'name' | 'uri' | undefined {
  return Object.hasOwn(NAME_SOURCE, method) ? NAME_SOURCE[method] : undefined;
}
