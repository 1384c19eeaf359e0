import {
  bindingCookieFor,
  bindingDigest,
  bindingOf,
  newBinding,
  sameBrowser,
  setBindingCookie,
} from '../../../lambda/connections/browser-binding';

/** The consent's binding to its browser: what the cookie is, where it can be kept, and how it is compared. */

describe('the binding cookie', () => {
  it('on an https origin: __Host- prefixed, Secure, HttpOnly, SameSite=Lax, the whole host', () => {
    const cookie = bindingCookieFor(new URL('https://mcp.example.com/stage/'))!;
    expect(setBindingCookie(cookie, 'v'.repeat(43), 660)).toBe(
      `__Host-mcp-gateway-consent=${'v'.repeat(43)}; Path=/; Max-Age=660; HttpOnly; SameSite=Lax; Secure`,
    );
  });

  it('on loopback http (npm start): a plain name without Secure; elsewhere on plain http: none at all', () => {
    expect(bindingCookieFor(new URL('http://127.0.0.1:8080'))).toEqual({ name: 'mcp-gateway-consent', secure: false });
    expect(bindingCookieFor(new URL('http://localhost:8080'))).toEqual({ name: 'mcp-gateway-consent', secure: false });
    expect(bindingCookieFor(new URL('http://gateway.internal'))).toBeUndefined();
  });

  it('is read among other cookies; a malformed value counts as none', () => {
    const cookie = bindingCookieFor(new URL('https://mcp.example.com'))!;
    const value = newBinding();
    expect(bindingOf(`a=1; __Host-mcp-gateway-consent=${value}; b=2`, cookie)).toBe(value);
    expect(bindingOf('__Host-mcp-gateway-consent=short', cookie)).toBeUndefined();
    // The unprefixed name (settable by any subdomain or a plain-http page) is not the secure one.
    expect(bindingOf(`mcp-gateway-consent=${value}`, cookie)).toBeUndefined();
    expect(bindingOf(null, cookie)).toBeUndefined();
  });
});

describe('the state carries a digest, compared with what the browser sends', () => {
  it('the same browser matches; another binding or none does not; the digest is not the value', () => {
    const value = newBinding();
    const digest = bindingDigest(value);
    expect(digest).not.toContain(value);
    expect(sameBrowser(value, digest)).toBe(true);
    expect(sameBrowser(newBinding(), digest)).toBe(false);
    expect(sameBrowser(undefined, digest)).toBe(false);
  });
});
