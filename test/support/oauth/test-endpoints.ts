/**
 * The support authorization server's test-only endpoints (dev/oauth-demo/serve-authorization-server.ts): what a
 * test cannot see or do through OAuth itself. Read with the issuer's URL.
 */

export interface AuthorizationServerStats {
  /** The `client_name` of each client registered dynamically (RFC 7591), in order. */
  registrations: string[];
  /** Refresh-token grants served. */
  refreshes: number;
  /** Refresh-token grants refused (a spent, revoked or unknown refresh token: `invalid_grant`). */
  refreshesRefused: number;
  /** Grants revoked: by the revocation endpoint (RFC 7009) and by revokeGrantsOf. */
  revokedGrants: number;
}

export async function authorizationServerStats(issuer: string): Promise<AuthorizationServerStats> {
  const res = await fetch(`${issuer}/test/stats`, { signal: AbortSignal.timeout(5_000) });
  if (!res.ok) throw new Error(`${issuer}/test/stats answered ${res.status}`);
  return (await res.json()) as AuthorizationServerStats;
}

/**
 * Withdraws every grant of `account`, as its user would at the server's own account page: that
 * account's refresh tokens are refused (`invalid_grant`) from then on. Returns how many grants.
 */
export async function revokeGrantsOf(issuer: string, account: string): Promise<number> {
  const res = await fetch(`${issuer}/test/revoke-grants?account=${encodeURIComponent(account)}`, {
    method: 'POST',
    signal: AbortSignal.timeout(5_000),
  });
  if (!res.ok) throw new Error(`${issuer}/test/revoke-grants answered ${res.status}`);
  return ((await res.json()) as { revoked: number }).revoked;
}
