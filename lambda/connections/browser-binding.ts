import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isLoopbackHost } from '../config/schema';

/**
 * The consent's binding to the browser that started it (RFC 9700 §4.7, login CSRF): when the browser
 * leaves for the identity provider or the authorization server, it gets a cookie only it holds, and the
 * sealed `state` carries that cookie's digest; the callback is honoured only from a browser that sends
 * the cookie again. Someone who starts a consent and forwards the authorization server's page to another
 * person (so that person's account lands under the sender's principal) fails at the callback: the other
 * browser has no such cookie. A sealed state alone is not bound to anyone.
 *
 * The cookie is `__Host-` prefixed, `Secure`, `HttpOnly`, `SameSite=Lax` (sent on the authorization
 * server's top-level redirect back, never on a cross-site subrequest), `Path=/`; on a loopback `http`
 * origin (`npm start`), where a `Secure` cookie cannot be set, the same without the prefix and `Secure`.
 * A browser that already holds one keeps it, so two consents in two tabs do not undo each other.
 */

const SECURE_NAME = '__Host-mcp-gateway-consent';
const LOOPBACK_NAME = 'mcp-gateway-consent';
const VALUE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** How the browser's binding is named and written at one public origin. */
export interface BindingCookie {
  name: string;
  secure: boolean;
}

/**
 * The cookie for the gateway's public base URL; undefined where no binding can be kept safely (plain
 * `http` on a host other than loopback: a consent needs https there).
 */
export function bindingCookieFor(publicBase: URL): BindingCookie | undefined {
  if (publicBase.protocol === 'https:') return { name: SECURE_NAME, secure: true };
  if (publicBase.protocol === 'http:' && isLoopbackHost(publicBase.hostname))
    return { name: LOOPBACK_NAME, secure: false };
  return undefined;
}

/** The binding this browser sent, if it sent a well-formed one. */
export function bindingOf(cookieHeader: string | null, cookie: BindingCookie): string | undefined {
  for (const part of (cookieHeader ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at < 0 || part.slice(0, at).trim() !== cookie.name) continue;
    const value = part.slice(at + 1).trim();
    if (VALUE_PATTERN.test(value)) return value;
  }
  return undefined;
}

/** A new binding value (256 bits). */
export function newBinding(): string {
  return randomBytes(32).toString('base64url');
}

/** What the sealed state carries: the digest, never the value itself. */
export function bindingDigest(value: string): string {
  return createHash('sha256').update(`mcp-gateway/consent-browser:${value}`).digest('base64url');
}

/** Whether the browser's binding is the one the state was sealed with. */
export function sameBrowser(value: string | undefined, digest: string): boolean {
  if (!value) return false;
  const a = Buffer.from(bindingDigest(value));
  const b = Buffer.from(digest);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The `Set-Cookie` value that gives (or renews) the browser its binding for `maxAgeSeconds`. */
export function setBindingCookie(cookie: BindingCookie, value: string, maxAgeSeconds: number): string {
  return [
    `${cookie.name}=${value}`,
    'Path=/',
    `Max-Age=${Math.max(60, Math.ceil(maxAgeSeconds))}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(cookie.secure ? ['Secure'] : []),
  ].join('; ');
}
