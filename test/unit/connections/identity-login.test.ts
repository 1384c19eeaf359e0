import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { IdentityLogin } from '../../../lambda/connections/identity-login';
import { clockAt } from '../../support/fake-clock';

/**
 * The identity check of a consent (connections/identity-login.ts) verifies the ID token on the
 * gateway's clock: a token expired by that clock is refused, one valid by it is accepted. The
 * identity provider is a fetch function (no socket); the gateway's clock stands years away from
 * Node's, so a check made on Node's clock instead shows.
 */

const ISSUER = 'https://idp.example.com';
const CLIENT_ID = 'gateway';
const REDIRECT = 'https://gateway.example.com/connections/identity';
const NONCE = 'nonce-1';

/** The gateway's clock (epoch ms). */
const now = Date.UTC(2031, 0, 1);

async function provider(idToken: (key: { privateKey: CryptoKey; kid: string }) => Promise<string>) {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  const token = await idToken({ privateKey, kid: 'k1' });
  return (async (input: string | URL | Request) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url === `${ISSUER}/.well-known/openid-configuration`) {
      return Response.json({
        issuer: ISSUER,
        authorization_endpoint: `${ISSUER}/authorize`,
        token_endpoint: `${ISSUER}/token`,
        jwks_uri: `${ISSUER}/jwks`,
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
      });
    }
    if (url === `${ISSUER}/jwks`) return Response.json({ keys: [publicJwk] });
    if (url === `${ISSUER}/token`) {
      return Response.json({ access_token: 'at', token_type: 'Bearer', id_token: token, expires_in: 3600 });
    }
    return new Response('', { status: 404 });
  }) as typeof fetch;
}

/** An ID token for alice, issued at `issuedAtMs` and expiring `lifetimeS` seconds later. */
function idTokenAt(issuedAtMs: number, lifetimeS: number) {
  const iat = Math.floor(issuedAtMs / 1000);
  return ({ privateKey, kid }: { privateKey: CryptoKey; kid: string }) =>
    new SignJWT({ sub: 'alice', nonce: NONCE })
      .setProtectedHeader({ alg: 'ES256', kid })
      .setIssuer(ISSUER)
      .setAudience(CLIENT_ID)
      .setIssuedAt(iat)
      .setNotBefore(iat)
      .setExpirationTime(iat + lifetimeS)
      .sign(privateKey);
}

function login(fetchFn: typeof fetch) {
  return new IdentityLogin(
    `${ISSUER}/.well-known/openid-configuration`,
    fetchFn,
    async () => ({ client_id: CLIENT_ID }),
    clockAt(() => now),
  );
}

it('an ID token valid by the gateway’s clock gives the principal it signed in as', async () => {
  const identity = login(await provider(idTokenAt(now - 60_000, 3600)));
  await expect(identity.principalOf('code', 'verifier', REDIRECT, NONCE)).resolves.toBe(`${ISSUER}#alice`);
});

it('an ID token expired by the gateway’s clock is refused', async () => {
  const identity = login(await provider(idTokenAt(now - 7_200_000, 3600)));
  await expect(identity.principalOf('code', 'verifier', REDIRECT, NONCE)).rejects.toThrow(/exp/);
});
