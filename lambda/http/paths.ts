/**
 * The gateway's two URL paths, one place for the router (app/gateway.ts) and for the OAuth
 * protected-resource metadata, whose `resource` names the MCP endpoint (auth/jwt.ts).
 */

/** The MCP endpoint (Streamable HTTP: POST, GET and DELETE). */
export const MCP_PATH = '/mcp';

/** OAuth 2.0 Protected Resource Metadata (RFC 9728), also served with the MCP path as suffix. */
export const METADATA_PATH = '/.well-known/oauth-protected-resource';
