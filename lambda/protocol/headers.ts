/**
 * HTTP headers of MCP's Streamable HTTP transport (both eras), and the 2026-07-28 mirrored-value
 * encoding: `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` mirror the body so intermediaries can route
 * without parsing it; a value that is not plain header-safe ASCII travels as `=?base64?<UTF-8>?=`.
 */

export const MCP_HEADERS = {
  sessionId: 'mcp-session-id',
  protocolVersion: 'mcp-protocol-version',
  method: 'mcp-method',
  name: 'mcp-name',
  paramPrefix: 'mcp-param-',
  lastEventId: 'last-event-id',
} as const;

const PREFIX = '=?base64?';
const SUFFIX = '?=';
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A mirrored header value: plain when header-safe, else the `=?base64?…?=` form the spec defines. */
export function encodeMirrored(value: string): string {
  const plain =
    /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !(value.startsWith(PREFIX) && value.endsWith(SUFFIX));
  return plain ? value : `${PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SUFFIX}`;
}

/** Decodes a mirrored header value; undefined when a sentinel's payload is not canonical Base64 of UTF-8. */
export function decodeMirrored(value: string): string | undefined {
  if (!(value.startsWith(PREFIX) && value.endsWith(SUFFIX) && value.length >= PREFIX.length + SUFFIX.length))
    return value;
  const payload = value.slice(PREFIX.length, value.length - SUFFIX.length);
  if (!CANONICAL_BASE64.test(payload)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(payload, 'base64'));
  } catch {
    return undefined;
  }
}

/** Strips the optional whitespace HTTP allows around a field value. */
export function trimHeader(value: string | null): string | undefined {
  if (value === null) return undefined;
  return value.replace(/^[ \t]+|[ \t]+$/g, '');
}

/** Characters a received header value may contain at all (before decoding). */
export function hasValidHeaderCharacters(value: string): boolean {
  return /^[\x20-\x7e]*$/.test(value);
}

/** A session id is visible ASCII (the transport's rule); longer than 256 is not one of ours. */
export function isWellFormedSessionId(value: string): boolean {
  return /^[\x21-\x7e]{1,256}$/.test(value);
}
