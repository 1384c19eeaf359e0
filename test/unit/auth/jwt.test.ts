import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { JwtAuthenticator } from '../../../lambda/auth/jwt';
import { type AuthConfig, parseConfig } from '../../../lambda/config/schema';
import { clockAt } from '../../support/fake-clock';

/**
 * Inbound JWT auth reads every time on the gateway's clock: a token's expiry, the age of the key set
 * it fetched (`jwksMaxAgeMs`), the pause between refetches for an unknown kid (`jwksCooldownMs`) and
 * how long the last good key set serves while the issuer is down (`jwksStaleMs`). The issuer here is a
 * fetch function (no socket); the clock starts years away from Node's, so a time read on Node's clock
 * instead shows.
 */

const ISSUER = 'https://idp.example.com';
const DISCOVERY = `${ISSUER}/.well-known/openid-configuration`;
const COOLDOWN_MS = 1_000;
const MAX_AGE_MS = 60_000;
const STALE_MS = 300_000;

/** The gateway's clock (epoch ms), moved by the tests. */
let now = Date.UTC(2031, 0, 1);

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function makeKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

/** An issuer answering through a fetch function: its discovery document and the keys it publishes. */
async function fakeIssuer() {
  const keys = [await makeKey('key-1')];
  const issuer = {
    jwksRequests: 0,
    down: false,
    fetch: (async (input: string | URL | Request) => {
      const url = input instanceof Request ? input.url : String(input);
      if (issuer.down) return new Response('down', { status: 500 });
      if (url === DISCOVERY) return Response.json({ issuer: ISSUER, jwks_uri: `${ISSUER}/jwks` });
      if (url === `${ISSUER}/jwks`) {
        issuer.jwksRequests++;
        return Response.json({ keys: keys.map((key) => key.publicJwk) });
      }
      return new Response('', { status: 404 });
    }) as typeof fetch,
    /** Publishes a new key; its kid. */
    rotate: async () => {
      const key = await makeKey(`key-${keys.length + 1}`);
      keys.push(key);
      return key.kid;
    },
    /** A token valid for an hour from the gateway's now, signed with `kid` (default the first key). */
    sign: (kid = 'key-1') => {
      const key = keys.find((k) => k.kid === kid) ?? keys[0]!;
      const issuedAt = Math.floor(now / 1000);
      return new SignJWT({ sub: 'alice' })
        .setProtectedHeader({ alg: 'ES256', kid })
        .setIssuer(ISSUER)
        .setIssuedAt(issuedAt)
        .setExpirationTime(issuedAt + 3600)
        .sign(key.privateKey);
    },
  };
  return issuer;
}

function authenticatorFor(issuer: Awaited<ReturnType<typeof fakeIssuer>>): JwtAuthenticator {
  const auth = parseConfig({ auth: { type: 'jwt', discoveryUrl: DISCOVERY } }).auth as Extract<
    AuthConfig,
    { type: 'jwt' }
  >;
  return new JwtAuthenticator(
    auth,
    clockAt(() => now),
    {
      fetch: issuer.fetch,
      jwksCooldownMs: COOLDOWN_MS,
      jwksMaxAgeMs: MAX_AGE_MS,
      jwksStaleMs: STALE_MS,
      clockToleranceSeconds: 30,
    },
  );
}

/** The status the authenticator answers a request bearing `token` with (200: accepted). */
async function statusFor(authenticator: JwtAuthenticator, token: string): Promise<number> {
  const request = new Request('https://gateway.example/mcp', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  const outcome = await authenticator.authenticate(request);
  return outcome.ok ? 200 : outcome.response.status;
}

describe('inbound JWT auth on the gateway clock', () => {
  it("a token expired on the gateway clock is refused (401), whatever the time on Node's clock", async () => {
    const issuer = await fakeIssuer();
    const authenticator = authenticatorFor(issuer);
    const token = await issuer.sign();
    expect(await statusFor(authenticator, token)).toBe(200);
    now += 3600_000 + 31_000; // past its exp and the 30 s tolerance
    expect(await statusFor(authenticator, token)).toBe(401);
  });

  it('an unknown kid fetches the key set again only once the cooldown has passed on the gateway clock', async () => {
    const issuer = await fakeIssuer();
    const authenticator = authenticatorFor(issuer);
    expect(await statusFor(authenticator, await issuer.sign())).toBe(200);
    expect(issuer.jwksRequests).toBe(1);
    const kid = await issuer.rotate();
    // Right after a fetch: the set is trusted, the unknown kid refused without a refetch.
    expect(await statusFor(authenticator, await issuer.sign(kid))).toBe(401);
    expect(issuer.jwksRequests).toBe(1);
    now += COOLDOWN_MS;
    expect(await statusFor(authenticator, await issuer.sign(kid))).toBe(200);
    expect(issuer.jwksRequests).toBe(2);
  });

  it('the key set is read again once it is older than jwksMaxAgeMs on the gateway clock', async () => {
    const issuer = await fakeIssuer();
    const authenticator = authenticatorFor(issuer);
    const token = await issuer.sign();
    expect(await statusFor(authenticator, token)).toBe(200);
    now += MAX_AGE_MS - 1;
    expect(await statusFor(authenticator, token)).toBe(200);
    expect(issuer.jwksRequests).toBe(1);
    now += 1;
    expect(await statusFor(authenticator, token)).toBe(200);
    expect(issuer.jwksRequests).toBe(2);
  });

  it('while the issuer is down, the last good key set serves for jwksStaleMs on the gateway clock, then 503', async () => {
    const issuer = await fakeIssuer();
    const authenticator = authenticatorFor(issuer);
    const token = await issuer.sign();
    expect(await statusFor(authenticator, token)).toBe(200);
    issuer.down = true;
    now += MAX_AGE_MS; // the set is due to be read again: the read fails, the last good set verifies
    expect(await statusFor(authenticator, token)).toBe(200);
    now += STALE_MS - MAX_AGE_MS + 1; // past jwksStaleMs since it was last good
    expect(await statusFor(authenticator, token)).toBe(503);
    issuer.down = false;
    expect(await statusFor(authenticator, token)).toBe(200);
  });
});
