import type { GatewayDeps } from '../core/deps';
import type { ExchangeContext } from '../core/exchange';
import { MCP_HEADERS, errorResponse, type AcceptPreference } from '../core/http';
import { RpcCode, type ClientMessage } from '../core/jsonrpc';

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';

export interface StatelessInput {
  deps: Omit<GatewayDeps, 'store'>;
  message: ClientMessage;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  principal: string;
  headers: Headers;
}

/**
 * 2026-07-28 requests carry their version in the header and in `_meta`; an `initialize` is
 * always legacy (dual-era detection, spec versioning.mdx).
 */
export function isModernRequest(headers: Headers, message: ClientMessage): boolean {
  if (message.kind === 'request' && message.message.method === 'initialize') return false;
  const header = headers.get(MCP_HEADERS.protocolVersion);
  if (header !== null && header >= '2026-01-01') return true;
  if (message.kind === 'response') return false;
  const meta = (message.message.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  return meta !== undefined && META_PROTOCOL_VERSION in meta;
}

export async function handleStatelessPost(input: StatelessInput): Promise<Response> {
  const id = input.message.kind === 'notification' ? null : (input.message.message.id ?? null);
  const requested = input.headers.get(MCP_HEADERS.protocolVersion);
  return errorResponse(400, id, RpcCode.UnsupportedProtocolVersion, 'Unsupported protocol version: the stateless path is not available yet', {
    supported: input.deps.config.supportedVersions.filter((v) => v < '2026-01-01'),
    requested,
  });
}
