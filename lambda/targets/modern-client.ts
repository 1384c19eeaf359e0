import { randomUUID } from 'node:crypto';
import { encodeMirrored, MCP_HEADERS } from '../protocol/headers';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import { META_KEYS, nameSourceOf } from '../protocol/meta';
import type { Implementation, JSONRPCNotification, JSONRPCRequest, ModernClientCapabilities } from '../protocol/types';
import { type TargetEndpoint, traceHeaders } from './endpoint';

/**
 * The gateway's HTTP client for a 2026-07-28 ("modern") target: no session, every request stamped
 * with its own `_meta` (protocol version, the capabilities declared for this call, the gateway's
 * identity) and the mirrored headers `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`. The response
 * is one JSON body or an SSE stream whose last message is the response; notifications before it
 * (progress, log messages) go to the caller. Closing the request is the cancellation on this
 * protocol, so aborting `signal` is all a caller does to cancel.
 */

export interface ModernMeta {
  protocolVersion: string;
  clientCapabilities: ModernClientCapabilities;
  logLevel?: string;
  progressToken?: string | number;
}

export interface ModernCallOptions {
  signal?: AbortSignal;
  onNotification?(notification: JSONRPCNotification): void;
  backpressure?(): Promise<void> | undefined;
  /** Extra headers for this request (the client's `Mcp-Param-*`, forwarded untouched). */
  headers?: Record<string, string>;
}

export class ModernTargetClient {
  constructor(
    readonly endpoint: TargetEndpoint,
    private readonly clientInfo: Implementation,
  ) {}

  get name(): string {
    return this.endpoint.name;
  }

  async request(
    method: string,
    params: Record<string, unknown>,
    meta: ModernMeta,
    options: ModernCallOptions = {},
  ): Promise<{ response: JSONRPCResponse; httpStatus: number }> {
    const _meta: Record<string, unknown> = {
      ...(params._meta as Record<string, unknown> | undefined),
      [META_KEYS.protocolVersion]: meta.protocolVersion,
      [META_KEYS.clientCapabilities]: meta.clientCapabilities,
      [META_KEYS.clientInfo]: this.clientInfo,
    };
    if (meta.logLevel !== undefined) _meta[META_KEYS.logLevel] = meta.logLevel;
    if (meta.progressToken !== undefined) _meta.progressToken = meta.progressToken;
    // SEP-414: the unprefixed `_meta` keys `traceparent`/`tracestate` carry W3C trace context in the
    // body too, for servers whose instrumentation reads the message rather than the HTTP headers.
    Object.assign(_meta, traceHeaders());
    const request: JSONRPCRequest = { jsonrpc: '2.0', id: `gw-${randomUUID()}`, method, params: { ...params, _meta } };
    const protocol: Record<string, string> = {
      ...options.headers,
      [MCP_HEADERS.protocolVersion]: meta.protocolVersion,
      [MCP_HEADERS.method]: method,
    };
    const source = nameSourceOf(method);
    const nameValue = source ? params[source] : undefined;
    if (typeof nameValue === 'string') protocol[MCP_HEADERS.name] = encodeMirrored(nameValue);
    // A server request on a 2026-07-28 stream is a protocol violation: no listener, so it is ignored.
    const { response, status } = await this.endpoint.request(request, await this.endpoint.headers(protocol), {
      signal: options.signal,
      listeners: { onNotification: options.onNotification, backpressure: options.backpressure },
    });
    return { response, httpStatus: status };
  }
}
