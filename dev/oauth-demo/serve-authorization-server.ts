/**
 * A real OAuth 2.1 authorization server on loopback, for `npm run oauth:demo` and the per-user OAuth
 * tests: `oidc-provider` (ESM only, so run as a process of its own: ./authorization-server.ts starts it).
 * - the authorization-code grant with PKCE (S256, required) and refresh tokens;
 * - resource indicators (RFC 8707): a token is issued for the resource asked for, as a JWT whose
 *   audience is that resource, which the protected target verifies;
 * - one pre-registered confidential client, and dynamic registration (RFC 7591);
 * - token revocation (RFC 7009);
 * - with CLIENT_ID_METADATA_DOCUMENTS=1, Client ID Metadata Documents (an https client id whose
 *   document it fetches; NODE_EXTRA_CA_CERTS names a test certificate it should trust);
 * - the library's development login and consent pages (any login name, no password check): the
 *   browser tests sign in as a named user there.
 * - with ROTATE_REFRESH_TOKENS=1, a new refresh token on every refresh (`rotateRefreshToken: true`; by
 *   default oidc-provider rotates only a public client's): the one used is spent, and using it again is
 *   refused (`invalid_grant`) and taken as theft — oidc-provider revokes the whole grant, the tokens
 *   issued since included (OAuth 2.1 §4.3.1, RFC 9700 §4.14.2).
 * Two test-only endpoints stand in for what a test cannot see or do through OAuth itself:
 * `GET /test/stats` (the clients registered, by name; refresh grants served and refused; grants revoked) and
 * `POST /test/revoke-grants?account=<sub>` (what a user does at the server's own account page:
 * withdraw every grant of that account, so its refresh tokens are refused from then on).
 * Settings from the environment: PORT, CLIENT_ID, CLIENT_SECRET, REDIRECT_URIS (JSON), ACCESS_TOKEN_TTL (s),
 * ROTATE_REFRESH_TOKENS (1: rotate).
 * Prints `ready <issuer>` once it listens.
 */
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const redirectUris = JSON.parse(process.env.REDIRECT_URIS ?? '[]') as string[];
const accessTokenTtl = Number(process.env.ACCESS_TOKEN_TTL ?? 3600);

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: process.env.CLIENT_ID ?? 'gateway',
      client_secret: process.env.CLIENT_SECRET ?? 'gateway-secret',
      redirect_uris: redirectUris,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  pkce: { required: () => true },
  scopes: ['openid', 'offline_access', 'mcp:tools'],
  claims: { openid: ['sub'] },
  cookies: { keys: ['oauth-test-cookie-key'] },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  // Refresh tokens for every client allowed the grant (without asking for offline_access).
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: { AccessToken: accessTokenTtl },
  ...(process.env.ROTATE_REFRESH_TOKENS === '1' ? { rotateRefreshToken: true } : {}),
  // Its outgoing requests (a client's metadata document) may go to loopback, where this server's clients
  // live: oidc-provider refuses special-use addresses by default (SSRF protection), as a real one should.
  ...(process.env.CLIENT_ID_METADATA_DOCUMENTS === '1'
    ? {
        fetch: (url: URL | string | Request, options?: RequestInit) => {
          const { dispatcher: _checked, ...rest } = (options ?? {}) as RequestInit & { dispatcher?: unknown };
          return fetch(url, rest);
        },
      }
    : {}),
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    revocation: { enabled: true },
    // Client ID Metadata Documents (an https URL as client id, its document fetched), when asked for.
    ...(process.env.CLIENT_ID_METADATA_DOCUMENTS === '1'
      ? { clientIdMetadataDocument: { enabled: true, ack: 'draft-02' } }
      : {}),
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => undefined,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => ({
        scope: 'mcp:tools',
        audience: resource,
        accessTokenFormat: 'jwt',
        accessTokenTTL: accessTokenTtl,
      }),
    },
  },
});
provider.on('server_error', (_ctx, error) => console.error('server_error', error));

/** What the tests read at /test/stats: names and counts only, never a token or a secret. */
const stats = { registrations: [] as string[], refreshes: 0, refreshesRefused: 0, revokedGrants: 0 };
/** Grant ids by account, for /test/revoke-grants. */
const grants = new Map<string, Set<string>>();
provider.on('registration_create.success', (_ctx, client) => {
  stats.registrations.push(client.clientName ?? '');
});
provider.on('grant.success', (ctx) => {
  if (ctx.oidc.params?.grant_type === 'refresh_token') stats.refreshes++;
});
provider.on('grant.error', (ctx) => {
  if (ctx.oidc?.params?.grant_type === 'refresh_token') stats.refreshesRefused++;
});
provider.on('grant.saved', (grant) => {
  if (!grant.accountId) return;
  const ids = grants.get(grant.accountId) ?? new Set<string>();
  grants.set(grant.accountId, ids.add(grant.jti));
});
provider.on('grant.revoked', () => {
  stats.revokedGrants++;
});

async function revokeGrantsOf(account: string): Promise<number> {
  const ids = [...(grants.get(account) ?? [])];
  grants.delete(account);
  for (const id of ids) {
    // As the revocation endpoint revokes a grant (oidc-provider's helpers/revoke.js): its tokens, then the grant.
    await provider.AccessToken.revokeByGrantId(id);
    await provider.RefreshToken.revokeByGrantId(id);
    await provider.AuthorizationCode.revokeByGrantId(id);
    await provider.Grant.adapter.destroy(id);
  }
  stats.revokedGrants += ids.length;
  return ids.length;
}

const oidc = provider.callback();
const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', issuer);
  if (url.pathname === '/test/stats' && req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
    return;
  }
  if (url.pathname === '/test/revoke-grants' && req.method === 'POST') {
    revokeGrantsOf(url.searchParams.get('account') ?? '').then(
      (revoked) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ revoked })),
      (error: unknown) => res.writeHead(500).end(String(error)),
    );
    return;
  }
  oidc(req, res);
});
server.listen(port, '127.0.0.1', () => console.log(`ready ${issuer}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
