import { stringifyMessage } from '../protocol/request-id';
import type { JSONRPCMessage } from '../protocol/types';
import { observeClientMessage } from './client-messages';
import type { ExchangeRequest } from './exchange';
import { SseStream } from './sse';

/** Small builders for the responses every path sends. Protocol decisions live in the callers. */

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  observeClientMessage(body); // the access log's facts, and GatewayErrors for the gateway's own errors
  return new Response(stringifyMessage(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

export function accepted(headers: Record<string, string> = {}): Response {
  return new Response(null, { status: 202, headers });
}

/** How the client wants its answer: `Accept` MUST list both, but the reference page's sample sends only SSE. */
export interface AcceptPreference {
  json: boolean;
  sse: boolean;
}

export function parseAccept(header: string | null): AcceptPreference {
  if (!header) return { json: true, sse: true };
  const types = header.split(',').map((part) => (part.split(';')[0] ?? '').trim().toLowerCase());
  const any = types.includes('*/*');
  const json = any || types.includes('application/json') || types.includes('application/*');
  const sse = any || types.includes('text/event-stream') || types.includes('text/*');
  return { json, sse };
}

/** A single JSON-RPC message as JSON, or as one SSE event when the client accepts only SSE. */
export function messageResponse(
  message: JSONRPCMessage,
  accept: AcceptPreference,
  headers: Record<string, string> = {},
  status = 200,
): Response {
  if (accept.json || !accept.sse) return jsonResponse(status, message, headers);
  const stream = new SseStream();
  stream.send(message);
  stream.close();
  return stream.response(headers, status);
}

/**
 * Reads a request body up to `limit` bytes; undefined when it is larger. The adapters buffer at most
 * what a function URL accepts (6 MB), so the whole body is read before it is measured.
 */
export async function readBodyLimited(request: ExchangeRequest, limit: number): Promise<string | undefined> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit) return undefined;
  const text = await request.text();
  return Buffer.byteLength(text) > limit ? undefined : text;
}
