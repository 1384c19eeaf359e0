import { MCP_HEADERS } from '../protocol/headers';
import type { ClientMessage } from '../protocol/jsonrpc';
import { META_KEYS } from '../protocol/meta';
import { type Era, isModernVersion } from '../protocol/versions';

/**
 * The era of a client's request, decided here and only here (spec basic/versioning.mdx, dual-era
 * servers). A POST whose `_meta` claims a protocol version is served statelessly, and so is one whose
 * `MCP-Protocol-Version` header names 2026-07-28 or later (it is then validated, not silently treated
 * as 2025). An `initialize` stays on the legacy path unless its `_meta` claims a 2026 version; posted
 * responses (answers to relayed requests) are 2025 traffic. A GET has no body: its header alone
 * decides (a `Last-Event-ID` resumption exists only in the legacy era).
 */
export function clientEraOf(headers: Headers, message?: ClientMessage): Era {
  const header = headers.get(MCP_HEADERS.protocolVersion)?.trim();
  const byHeader: Era = header !== undefined && header !== '' && isModernVersion(header) ? 'modern' : 'legacy';
  if (!message) return byHeader;
  if (message.kind === 'response') return 'legacy';
  const meta = (message.message.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const claim = typeof meta === 'object' && meta !== null ? meta[META_KEYS.protocolVersion] : undefined;
  if (message.kind === 'request' && message.message.method === 'initialize' && claim !== undefined) {
    return typeof claim === 'string' && isModernVersion(claim) ? 'modern' : 'legacy';
  }
  if (claim !== undefined) return 'modern';
  return byHeader;
}
