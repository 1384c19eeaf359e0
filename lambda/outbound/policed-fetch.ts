import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { type OutboundPolicy, OutboundRefusedError, portOf } from './policy';

/**
 * A `fetch` for URLs that others chose (./policy.ts says which and why), with the SDK's `fetchFn`
 * signature so the MCP SDK's OAuth client functions can use it:
 *
 * - the URL is checked first (scheme, an address written in it);
 * - the name is resolved once, every address it resolves to is checked, and the connection goes to
 *   the first of them through a lookup that answers only that address: what was checked is what is
 *   connected to, so a name that resolves elsewhere a moment later (DNS rebinding) changes nothing;
 *   TLS still verifies the certificate for the name;
 * - a redirect is never followed (an error: metadata and tokens come from the URL asked, RFC 8414 §3.3);
 * - the whole exchange is bounded in time, and the response body in size (read as it arrives).
 *
 * One connection per request (no pool): these requests are few (a discovery, a token request) and
 * pooling would reuse a socket across names.
 */

/** Name resolution: every address a name has. */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export interface PolicedFetchOptions {
  /** Bound of one request, connection to last byte. Default 10 s. */
  timeoutMs?: number;
  /** The largest response body read; a larger one fails the request. Default 1 MiB. */
  maxResponseBytes?: number;
  /** Name resolution (tests resolve a name to where they want); default the system resolver. */
  resolve?: Resolver;
}

export const DEFAULT_OUTBOUND_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

/** A response larger than the policy reads. */
export class ResponseTooLargeError extends Error {
  constructor(
    readonly origin: string,
    readonly limitBytes: number,
  ) {
    super(`the response of ${origin} is larger than ${limitBytes} bytes`);
    this.name = 'ResponseTooLargeError';
  }
}

const systemResolve: Resolver = (hostname) =>
  new Promise<LookupAddress[]>((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  );

export function policedFetch(policy: OutboundPolicy, options: PolicedFetchOptions = {}): typeof fetch {
  const timeoutMs = options.timeoutMs ?? DEFAULT_OUTBOUND_TIMEOUT_MS;
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const resolve = options.resolve ?? systemResolve;

  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // One shape for whatever the caller passed (a string, a URL, a Request; a body of any BodyInit).
    const request = new Request(input, init);
    const url = new URL(request.url);
    policy.checkUrl(url);
    const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(init?.signal ? [init.signal] : [])]);
    const pinned = await pinnedAddress(policy, url, resolve);
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    if (body) headers['content-length'] = String(body.length);

    const res = await new Promise<IncomingMessage>((resolveResponse, reject) => {
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(url, { method: request.method, headers, signal, agent: false, lookup: pinned });
      req.once('response', resolveResponse);
      req.once('error', reject);
      req.end(body);
    });
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400) {
      res.destroy();
      throw new OutboundRefusedError(url.origin, `a redirect (HTTP ${status}) is not followed`);
    }
    return new Response(NULL_BODY.has(status) ? null : bounded(res, url.origin, maxBytes), {
      status: status < 200 || status > 599 ? 502 : status,
      statusText: res.statusMessage ?? '',
      headers: responseHeaders(res),
    });
  };
}

const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * Resolves the URL's host once and checks every address; the lookup handed to the connection answers
 * only the first (an address written in the URL is not looked up: checkUrl judged it).
 */
async function pinnedAddress(policy: OutboundPolicy, url: URL, resolve: Resolver): Promise<LookupFunction | undefined> {
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  if (/^[\d.]+$/.test(hostname) || hostname.includes(':')) return undefined;
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(hostname);
  } catch (error) {
    throw new OutboundRefusedError(
      url.origin,
      `the name did not resolve (${(error as { code?: string }).code ?? 'error'})`,
    );
  }
  if (addresses.length === 0) throw new OutboundRefusedError(url.origin, 'the name resolved to no address');
  // Every address the name has must pass: a name that mixes a public and a private one is refused.
  for (const { address } of addresses) policy.checkAddress(url, address, portOf(url));
  const chosen = addresses[0] as LookupAddress;
  return (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, [chosen]);
    else callback(null, chosen.address, chosen.family);
  };
}

function bounded(res: IncomingMessage, origin: string, maxBytes: number): ReadableStream<Uint8Array> {
  const declared = Number(res.headers['content-length']);
  let read = 0;
  const limited = new Readable({ read() {} });
  const fail = () => {
    res.destroy();
    limited.destroy(new ResponseTooLargeError(origin, maxBytes));
  };
  if (Number.isFinite(declared) && declared > maxBytes) {
    queueMicrotask(fail);
  } else {
    res.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read > maxBytes) fail();
      else limited.push(chunk);
    });
    res.once('end', () => limited.push(null));
    res.once('error', (error) => limited.destroy(error));
  }
  return Readable.toWeb(limited) as ReadableStream<Uint8Array>;
}

function responseHeaders(res: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
}
