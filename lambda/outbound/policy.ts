import ipaddr from 'ipaddr.js';

/**
 * The one outbound policy for every URL the gateway did not choose itself: what a target's 401 or
 * protected-resource metadata names, what an authorization server's metadata names (its token,
 * registration, revocation and key-set endpoints), where a consent sends the browser. Such a URL is
 * attacker-influenced (a hostile target, a compromised authorization server), and the gateway holds
 * users' tokens and runs next to the Lambda Runtime API, so:
 *
 * - `https` only; `http` only to an origin the operator named (a configured target's, an allowed one);
 * - after name resolution, only global unicast addresses: no loopback, private (RFC 1918), link-local
 *   (169.254/16, fe80::/10: instance metadata lives there), CGNAT (100.64/10), unique-local (fc00::/7),
 *   unspecified, multicast, reserved or translated ranges — unless the origin is one the operator named;
 * - never the host and port of `AWS_LAMBDA_RUNTIME_API`, named or not (a request there consumes or
 *   answers invocations).
 *
 * Address classes come from ipaddr.js (its special-purpose ranges), not from hand-written ranges. The
 * address checked is the address connected (./policed-fetch.ts resolves once and pins it).
 */

/** A URL or an address the policy refuses; the message names the origin and why, never a path or query. */
export class OutboundRefusedError extends Error {
  constructor(
    readonly origin: string,
    readonly reason: string,
  ) {
    super(`refused to reach ${origin}: ${reason}`);
    this.name = 'OutboundRefusedError';
  }
}

export interface OutboundPolicySettings {
  /**
   * Origins (`scheme://host[:port]`) the operator named: configured targets, authorization servers
   * and identity providers, `outbound.allowedOrigins`. They may be `http` and resolve to any address
   * but the Runtime API's.
   */
  allowedOrigins: Iterable<string>;
  /** `AWS_LAMBDA_RUNTIME_API` (`host:port`), where the gateway runs in Lambda. */
  runtimeApi?: string;
}

export class OutboundPolicy {
  private readonly allowed: Set<string>;
  private readonly runtimeApi?: { address?: ipaddr.IPv4 | ipaddr.IPv6; host: string; port: number };

  constructor(settings: OutboundPolicySettings) {
    this.allowed = new Set([...settings.allowedOrigins].map(normalOrigin).filter((o): o is string => !!o));
    this.runtimeApi = parseHostPort(settings.runtimeApi);
  }

  /** Whether the operator named this URL's origin. */
  named(url: URL): boolean {
    return this.allowed.has(url.origin.toLowerCase());
  }

  /** Before any connection: the scheme, and an address written in the URL itself. Throws OutboundRefusedError. */
  checkUrl(url: URL): void {
    const origin = url.origin;
    if (url.username || url.password) throw new OutboundRefusedError(origin, 'credentials in a URL are not sent');
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new OutboundRefusedError(`${url.protocol}//`, 'only https is reached');
    }
    if (url.protocol === 'http:' && !this.named(url)) {
      throw new OutboundRefusedError(origin, 'plain http is reached only at an origin the operator named');
    }
    const literal = hostAddress(url.hostname);
    if (literal) this.checkAddress(url, literal.toString(), portOf(url));
    else if (this.runtimeApi && !this.runtimeApi.address && url.hostname.toLowerCase() === this.runtimeApi.host) {
      if (portOf(url) === this.runtimeApi.port) throw new OutboundRefusedError(origin, 'the Lambda Runtime API');
    }
  }

  /** The address a connection to `url` would go to (after resolution). Throws OutboundRefusedError. */
  checkAddress(url: URL, address: string, port: number): void {
    const origin = url.origin;
    let parsed: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      // An IPv4-mapped IPv6 address is judged as the IPv4 address it is.
      parsed = ipaddr.process(address);
    } catch {
      throw new OutboundRefusedError(origin, 'the name resolved to no valid address');
    }
    if (this.isRuntimeApi(parsed, port)) throw new OutboundRefusedError(origin, 'the Lambda Runtime API');
    if (this.named(url)) return;
    const range = parsed.range();
    if (range !== 'unicast') {
      throw new OutboundRefusedError(
        origin,
        `${address} is ${RANGE_WORDS[range] ?? `a special-purpose (${range}) address`}; list the origin in outbound.allowedOrigins to reach it`,
      );
    }
  }

  /**
   * Where a consent may send the person's browser: `https`, or `http` on a loopback host (a local
   * authorization server). Never another scheme (`javascript:`, `file:`, `ms-msdt:`, an app's own).
   */
  allowsBrowserRedirect(url: URL): boolean {
    if (url.username || url.password) return false;
    if (url.protocol === 'https:') return true;
    if (url.protocol !== 'http:') return false;
    const literal = hostAddress(url.hostname);
    return url.hostname.toLowerCase() === 'localhost' || literal?.range() === 'loopback';
  }

  private isRuntimeApi(address: ipaddr.IPv4 | ipaddr.IPv6, port: number): boolean {
    const api = this.runtimeApi;
    if (!api || port !== api.port) return false;
    if (api.address && address.kind() === api.address.kind() && address.toString() === api.address.toString())
      return true;
    // A Runtime API on loopback is reached through any loopback or unspecified address on its port.
    const local = (a: ipaddr.IPv4 | ipaddr.IPv6) => a.range() === 'loopback' || a.range() === 'unspecified';
    return (api.address === undefined || local(api.address)) && local(address);
  }
}

const RANGE_WORDS: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  linkLocal: 'a link-local address',
  carrierGradeNat: 'a carrier-grade NAT address',
  uniqueLocal: 'a unique-local address',
  unspecified: 'an unspecified address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
  reserved: 'a reserved address',
  // Translated ranges carry an IPv4 address inside: judged refused, not by their public-looking prefix.
  rfc6052: 'a NAT64 address',
  '6to4': 'a 6to4 address',
  teredo: 'a Teredo address',
};

/** The address a URL's host is written as (IPv6 in brackets), or undefined for a name. */
function hostAddress(hostname: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return undefined;
  // ipaddr.js accepts IPv4 shorthands (`127.1`) that the URL parser has already normalized.
  try {
    return ipaddr.process(bare);
  } catch {
    return undefined;
  }
}

export function portOf(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

function normalOrigin(value: string): string | undefined {
  try {
    const origin = new URL(value).origin;
    return origin === 'null' ? undefined : origin.toLowerCase();
  } catch {
    return undefined;
  }
}

function parseHostPort(value: string | undefined): OutboundPolicy['runtimeApi'] {
  if (!value) return undefined;
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(value.trim());
  if (!match?.[1] || !match[2]) return undefined;
  const host = match[1].toLowerCase();
  const address = ipaddr.isValid(host) ? ipaddr.process(host) : undefined;
  return { host, port: Number(match[2]), ...(address ? { address } : {}) };
}
