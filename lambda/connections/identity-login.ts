import { exchangeAuthorization, startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  AuthorizationServerMetadata,
  OAuthClientInformationMixed,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { createRemoteJWKSet, customFetch, jwtVerify } from 'jose';
import type { Clock } from '../scheduling/clock';

/**
 * The proof that whoever opened a consent link is the link's principal, with inbound JWT auth: the
 * browser signs in at the same identity provider (OpenID Connect, authorization code + PKCE, a nonce),
 * and the ID token's `<iss>#<sub>` must be the principal the link was made for — the principal inbound
 * auth derives from the same issuer's access tokens (auth/jwt.ts). Someone sent a link that is not
 * theirs signs in as themselves, and is refused before any token is stored.
 */

interface Discovery {
  issuer: string;
  metadata: AuthorizationServerMetadata;
  jwks: ReturnType<typeof createRemoteJWKSet>;
}

export class IdentityLogin {
  private discovery?: Promise<Discovery>;

  constructor(
    private readonly discoveryUrl: string,
    /** The outbound policy's fetch: the provider's metadata names the endpoints it is asked at. */
    private readonly fetchFn: typeof fetch,
    private readonly client: () => Promise<OAuthClientInformationMixed>,
    /** The gateway's clock: the ID token's `exp` and `nbf` are checked on it, not on Node's. */
    private readonly clock: Clock,
  ) {}

  /** The identity provider's login URL for this state, and the PKCE verifier its callback needs. */
  async loginUrl(redirectUri: string, state: string, nonce: string): Promise<{ url: string; codeVerifier: string }> {
    const { issuer, metadata } = await this.discovered();
    const { authorizationUrl, codeVerifier } = await startAuthorization(issuer, {
      metadata,
      clientInformation: await this.client(),
      redirectUrl: redirectUri,
      scope: 'openid',
      state,
    });
    authorizationUrl.searchParams.set('nonce', nonce);
    return { url: authorizationUrl.toString(), codeVerifier };
  }

  /** The principal the browser signed in as (`<iss>#<sub>`), from a verified ID token. */
  async principalOf(code: string, codeVerifier: string, redirectUri: string, nonce: string): Promise<string> {
    const { issuer, metadata, jwks } = await this.discovered();
    const client = await this.client();
    const tokens = await exchangeAuthorization(issuer, {
      metadata,
      clientInformation: client,
      authorizationCode: code,
      codeVerifier,
      redirectUri,
      fetchFn: this.fetchFn,
    });
    if (!tokens.id_token) throw new Error('the identity provider returned no ID token');
    const { payload } = await jwtVerify(tokens.id_token, jwks, {
      issuer,
      audience: client.client_id,
      currentDate: new Date(this.clock.now()),
    });
    if (payload.nonce !== nonce) throw new Error('the ID token is not for this sign-in (nonce)');
    if (typeof payload.sub !== 'string' || payload.sub === '') throw new Error('the ID token has no subject');
    return `${payload.iss}#${payload.sub}`;
  }

  private discovered(): Promise<Discovery> {
    this.discovery ??= (async () => {
      const res = await this.fetchFn(this.discoveryUrl, { headers: { accept: 'application/json' } });
      if (!res.ok) throw new Error(`identity provider discovery answered HTTP ${res.status}`);
      const metadata = (await res.json()) as AuthorizationServerMetadata & { jwks_uri?: string };
      if (!metadata.issuer || !metadata.authorization_endpoint || !metadata.token_endpoint || !metadata.jwks_uri) {
        throw new Error('identity provider discovery lacks issuer, endpoints or jwks_uri');
      }
      const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri), {
        [customFetch]: (url, options) => this.fetchFn(url, options as RequestInit),
      });
      return { issuer: metadata.issuer, metadata, jwks };
    })().catch((error: unknown) => {
      this.discovery = undefined;
      throw error;
    });
    return this.discovery;
  }
}
