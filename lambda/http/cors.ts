import { ENV } from '../config/environment';
import type { ExchangeRequest } from './exchange';
/**
 * CORS for browser-based MCP clients (the MCP Inspector's web UI, web apps), from the configuration's
 * `cors.allowedOrigins`. One definition of what is allowed, used by the gateway core (locally) and by
 * the CDK construct for the function URL's own CORS setting (lib/mcp-gateway.ts), so both say the same.
 *
 * - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an allowed origin
 *   is answered 204 with the allowed methods and headers, before authentication: browsers never send
 *   credentials on a preflight.
 * - Every other response to an allowed origin carries `Access-Control-Allow-Origin` (the origin
 *   itself, or `*` when `*` is configured) and exposes `Mcp-Session-Id`, which a client must read.
 * - A request from an origin not in the list gets no CORS headers: the browser then withholds the
 *   response from the page.
 *
 * Deployed, the function URL applies the same setting itself (it answers preflights without invoking
 * the function, and its headers take precedence over the function's), so the Lambda sets no CORS
 * headers at all: one source, no duplicated or disagreeing values (lambda/README.md, "CORS").
 */

/** Set to `function-url` by the CDK stack: the function URL's own CORS setting answers CORS, not the function. */
export const CORS_BY_ENV = ENV.cors;

/** Request headers a browser-based MCP client sends (Streamable HTTP, both eras, resumption, tracing). */
export const CORS_ALLOWED_HEADERS = [
  'content-type',
  'authorization',
  'mcp-session-id',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'last-event-id',
  'traceparent',
  'tracestate',
] as const;

/** Response headers a browser script may read: the session id it must send back. */
export const CORS_EXPOSED_HEADERS = ['mcp-session-id'] as const;

/** The methods of the MCP endpoint. */
export const CORS_ALLOWED_METHODS = ['POST', 'GET', 'DELETE'] as const;

/** How long a browser may cache a preflight answer. */
export const CORS_MAX_AGE_SECONDS = 3600;

export class CorsPolicy {
  private readonly origins: ReadonlySet<string>;
  private readonly any: boolean;

  constructor(allowedOrigins: readonly string[]) {
    // Origins compare case-insensitively in scheme and host; the configured form has no path.
    this.origins = new Set(allowedOrigins.filter((o) => o !== '*').map((o) => o.toLowerCase()));
    this.any = allowedOrigins.includes('*');
  }

  get enabled(): boolean {
    return this.any || this.origins.size > 0;
  }

  /** Whether a browser page of `origin` may call the gateway. */
  allows(origin: string | null | undefined): boolean {
    if (!origin) return false;
    return this.any || this.origins.has(origin.toLowerCase());
  }

  /** The preflight answer, when `request` is a preflight from an allowed origin; else undefined. */
  preflight(request: ExchangeRequest): Response | undefined {
    const origin = request.headers.get('origin');
    if (request.method !== 'OPTIONS' || !request.headers.has('access-control-request-method')) return undefined;
    if (!this.allows(origin)) return undefined;
    return new Response(null, {
      status: 204,
      headers: {
        ...this.originHeaders(origin as string),
        'access-control-allow-methods': CORS_ALLOWED_METHODS.join(', '),
        'access-control-allow-headers': CORS_ALLOWED_HEADERS.join(', '),
        'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
      },
    });
  }

  /** `response` with the CORS headers for the request's origin, when it is allowed. */
  apply(request: ExchangeRequest, response: Response): Response {
    const origin = request.headers.get('origin');
    if (!this.allows(origin)) return response;
    const headers = new Headers(response.headers);
    for (const [name, value] of Object.entries(this.originHeaders(origin as string))) {
      if (name === 'vary') headers.append(name, value);
      else headers.set(name, value);
    }
    headers.set('access-control-expose-headers', CORS_EXPOSED_HEADERS.join(', '));
    // A new Response keeps the (possibly streaming) body; the original's headers may be immutable.
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }

  private originHeaders(origin: string): Record<string, string> {
    // `Vary: Origin` so a cache never serves one origin's answer to another.
    return this.any
      ? { 'access-control-allow-origin': '*' }
      : { 'access-control-allow-origin': origin, vary: 'origin' };
  }
}
