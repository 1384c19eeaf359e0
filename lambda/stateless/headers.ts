/**
 * The 2026-07-28 request-metadata headers (spec basic/transports/streamable-http.mdx): `Mcp-Method`,
 * `Mcp-Name` and `Mcp-Param-*` mirror the body so intermediaries can route without parsing it.
 * A value that is not plain header-safe ASCII travels as `=?base64?<base64 of UTF-8>?=`; servers
 * and intermediaries decode it before comparing.
 */

export const MODERN_HEADERS = {
  protocolVersion: 'mcp-protocol-version',
  method: 'mcp-method',
  name: 'mcp-name',
  paramPrefix: 'mcp-param-',
} as const;

const PREFIX = '=?base64?';
const SUFFIX = '?=';
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decodes a mirrored header value; undefined when a sentinel's payload is not canonical Base64 of UTF-8. */
export function decodeHeaderValue(value: string): string | undefined {
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

/** Encoding is the upstream client's job (it builds the headers it sends). */
export { encodeMirrored as encodeHeaderValue } from '../targets/modern-client';

/** Strips the optional whitespace HTTP allows around a field value. */
export function trimHeader(value: string | null): string | undefined {
  if (value === null) return undefined;
  return value.replace(/^[ \t]+|[ \t]+$/g, '');
}

/** Characters a received header value may contain at all (before decoding). */
export function hasValidHeaderCharacters(value: string): boolean {
  return /^[\x20-\x7e]*$/.test(value);
}
