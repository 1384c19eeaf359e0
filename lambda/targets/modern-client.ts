import { randomUUID } from 'node:crypto';
import type { Implementation, JSONRPCNotification, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ClientCapabilities } from '@modelcontextprotocol/server';
import type { TargetConfig } from '../config/schema';
import { recordTargetLatency } from '../observability/metrics';
import { NO_CREDENTIALS, type TargetCredentials } from './credentials';
import { isResponse, readResponseStream } from './response-stream';
import { credentialHeaders, DependencyFailedError, type JSONRPCResponse } from './upstream-client';

/**
 * The gateway's HTTP client to a 2026-07-28 ("modern") target: no session, every request stamped
 * with its own `_meta` (protocol version, the capabilities the gateway may declare for this call,
 * the gateway's identity) and the mirrored headers `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`.
 * The response is one JSON body or an SSE stream whose last message is the response; notifications
 * before it (progress, log messages) are handed to the caller. Closing the request is the
 * cancellation on this protocol, so aborting `signal` is all a caller does to cancel.
 */

export const MODERN_PROTOCOL_VERSION = '2026-07-28';

export const META_KEYS = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
} as const;

/** Methods whose `Mcp-Name` header mirrors a body field. */
export const NAME_SOURCE: Record<string, 'name' | 'uri'> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
};

export interface ModernRequestMeta {
  protocolVersion?: string;
  clientCapabilities: ClientCapabilities;
  logLevel?: string;
  progressToken?: string | number;
}

export interface ModernCallOptions {
  signal?: AbortSignal;
  onNotification?(notification: JSONRPCNotification): void;
  /** Extra headers for this request (e.g. the client's `Mcp-Param-*`, forwarded untouched). */
  headers?: Record<string, string>;
}

export interface ModernResponse {
  response: JSONRPCResponse;
  httpStatus: number;
}

export class ModernTargetClient {
  constructor(
    readonly config: TargetConfig,
    private readonly clientInfo: Implementation,
    /** The gateway's own credentials for this target (lambda/targets/credentials.ts); never the client's. */
    private readonly credentials: TargetCredentials = NO_CREDENTIALS,
  ) {}

  get name(): string {
    return this.config.name;
  }

  async request(
    method: string,
    params: Record<string, unknown>,
    meta: ModernRequestMeta,
    options: ModernCallOptions = {},
  ): Promise<ModernResponse> {
    const version = meta.protocolVersion ?? MODERN_PROTOCOL_VERSION;
    const _meta: Record<string, unknown> = {
      ...(params._meta as Record<string, unknown> | undefined),
      [META_KEYS.protocolVersion]: version,
      [META_KEYS.clientCapabilities]: meta.clientCapabilities,
      [META_KEYS.clientInfo]: this.clientInfo,
    };
    if (meta.logLevel !== undefined) _meta[META_KEYS.logLevel] = meta.logLevel;
    if (meta.progressToken !== undefined) _meta.progressToken = meta.progressToken;
    const request: JSONRPCRequest = { jsonrpc: '2.0', id: `gw-${randomUUID()}`, method, params: { ...params, _meta } };
    const headers: Record<string, string> = {
      ...options.headers,
      ...(await credentialHeaders(this.name, this.credentials)),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': version,
      'mcp-method': method,
    };
    const source = NAME_SOURCE[method];
    const nameValue = source ? params[source] : undefined;
    if (typeof nameValue === 'string') headers['mcp-name'] = encodeMirrored(nameValue);

    let res: Response;
    try {
      const started = performance.now();
      res = await fetch(this.config.url, {
        method: 'POST',
        headers,
        body: JSON.stringify(request),
        signal: options.signal,
      });
      // Time to the target's response headers: its responsiveness, not a person's time to answer.
      recordTargetLatency(this.name, performance.now() - started);
    } catch (error) {
      throw this.failure(error, 'unreachable');
    }
    if (res.status === 401) this.credentials.rejected();
    const contentType = res.headers.get('content-type') ?? '';
    if (res.ok && contentType.includes('text/event-stream')) {
      return { response: await this.readStream(res, request.id, options), httpStatus: res.status };
    }
    let body: unknown;
    try {
      if (contentType.includes('json')) body = await res.json();
      else await res.body?.cancel();
    } catch (error) {
      throw this.failure(error, `HTTP ${res.status} with an unreadable body`);
    }
    if (isResponse(body) && (res.ok || 'error' in body))
      return { response: { ...body, id: request.id }, httpStatus: res.status };
    throw new DependencyFailedError(this.name, res.ok ? 'answered without a JSON-RPC response' : `HTTP ${res.status}`);
  }

  private failure(error: unknown, reason: string): Error {
    if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return error;
    return new DependencyFailedError(this.name, reason, { cause: error });
  }

  private async readStream(
    res: Response,
    id: JSONRPCRequest['id'],
    options: ModernCallOptions,
  ): Promise<JSONRPCResponse> {
    let response: JSONRPCResponse | undefined;
    try {
      // A server request on a 2026-07-28 stream is a protocol violation: no listener, so ignored.
      response = await readResponseStream(res, id, { onNotification: options.onNotification });
    } catch (error) {
      throw this.failure(error, 'the stream broke before the response');
    }
    if (!response) throw new DependencyFailedError(this.name, 'the stream ended before the response');
    return response;
  }
}

/** `Mcp-Name` value: plain when header-safe, else the `=?base64?…?=` form the spec defines. */
export function encodeMirrored(value: string): string {
  const plain =
    /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !(value.startsWith('=?base64?') && value.endsWith('?='));
  return plain ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}
