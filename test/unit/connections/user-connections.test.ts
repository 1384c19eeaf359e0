import {
  AuthorizationServerError,
  type GrantedTokens,
  type TargetAuthorizationServer,
} from '../../../lambda/connections/authorization-server';
import { ConsentLinks } from '../../../lambda/connections/consent-links';
import { Envelope, LocalKeySource } from '../../../lambda/connections/envelope';
import { ConnectionRequiredError, UserConnections } from '../../../lambda/connections/user-connections';
import { ConnectionVault } from '../../../lambda/connections/vault';
import { SealedBox } from '../../../lambda/crypto/sealed-box';
import { createLogger } from '../../../lambda/observability/logger';
import { type RequestContext, runInRequest } from '../../../lambda/observability/request-context';
import { clockAt } from '../../support/fake-clock';
import { MemoryConnectionTable } from '../../support/memory-connection-table';

/**
 * A principal's connection as the target clients use it, on a fake clock: refreshed shortly before it
 * expires (once, however many calls wait), given up for a new consent when the authorization server
 * refuses the grant, kept while the server is down and the token still lasts. The end-to-end tests
 * (test/oauth/) run the same with a real authorization server; these pin the timing.
 */

const HOUR = 3600_000;

/** The authorization server's token endpoint as the connection sees it: refresh answers in order. */
class TokenEndpoint {
  refreshes = 0;
  answers: Array<GrantedTokens | Error> = [];
  async refresh(refreshToken: string): Promise<GrantedTokens> {
    this.refreshes++;
    const next = this.answers.shift();
    if (!next) throw new Error(`unexpected refresh with ${refreshToken}`);
    if (next instanceof Error) throw next;
    return next;
  }
}

function setUp() {
  let now = 1_000_000;
  const table = new MemoryConnectionTable();
  const vault = new ConnectionVault(table, new Envelope(new LocalKeySource('a-local-key-of-at-least-32-characters')), {
    idleDays: 90,
    clock: clockAt(() => now),
  });
  const endpoint = new TokenEndpoint();
  const server = {
    name: 'docs',
    server: async () => ({}),
    refresh: (token: string) => endpoint.refresh(token),
  } as unknown as TargetAuthorizationServer;
  const connections = new UserConnections({
    vault,
    servers: new Map([['docs', server]]),
    links: new ConsentLinks(
      SealedBox.fromSecrets({ current: 'links-key-of-at-least-32-characters-long' }),
      600_000,
      clockAt(() => now),
    ),
    publicUrl: 'https://gateway.example',
    logger: createLogger('SILENT'),
    clock: clockAt(() => now),
  });
  const as = (principal: string, fn: () => Promise<unknown>) =>
    runInRequest(
      {
        requestId: 'r',
        trace: { traceId: 'a'.repeat(32) } as RequestContext['trace'],
        startedAt: 0,
        facts: { principal, inputRounds: 0 },
      },
      fn,
    );
  const headers = (principal = 'alice') => as(principal, () => connections.credentialsFor('docs').headers());
  return {
    table,
    vault,
    endpoint,
    connections,
    headers,
    as,
    advance: (ms: number) => {
      now += ms;
    },
    connect: (tokens: Partial<GrantedTokens> & { accessToken: string }) =>
      vault.put('alice', 'docs', { connectedAt: now, ...tokens }),
  };
}

describe('a per-user connection', () => {
  it("without one, a call needs the connection (and never uses another principal's)", async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', expiresAt: 1_000_000 + HOUR });
    await expect(t.headers('bob')).rejects.toBeInstanceOf(ConnectionRequiredError);
    await expect(t.headers('alice')).resolves.toEqual({ authorization: 'Bearer alice-1' });
  });

  it('a refreshed token is refreshed again a quarter of its own lifetime before it expires, not of the time since consent', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', refreshToken: 'r-1', expiresAt: 1_000_000 + 40_000 });
    t.advance(31_000); // within the last quarter of 40 s
    t.endpoint.answers.push({ accessToken: 'alice-2', refreshToken: 'r-2', expiresAt: 1_000_000 + 31_000 + 40_000 });
    await expect(t.headers()).resolves.toEqual({ authorization: 'Bearer alice-2' });
    t.advance(25_000); // 25 s into the new token's 40 s: not due (it would be, measured from the consent 56 s ago)
    await expect(t.headers()).resolves.toEqual({ authorization: 'Bearer alice-2' });
    expect(t.endpoint.refreshes).toBe(1);
  });

  it('is used as stored until shortly before it expires, then refreshed once for all waiting calls', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', refreshToken: 'r-1', expiresAt: 1_000_000 + HOUR });
    t.advance(HOUR - 61_000);
    await expect(t.headers()).resolves.toEqual({ authorization: 'Bearer alice-1' });
    expect(t.endpoint.refreshes).toBe(0);
    t.advance(2000); // inside the last minute
    t.endpoint.answers.push({ accessToken: 'alice-2', refreshToken: 'r-2', expiresAt: 1_000_000 + 2 * HOUR });
    const all = await Promise.all([t.headers(), t.headers(), t.headers()]);
    expect(all).toEqual(Array(3).fill({ authorization: 'Bearer alice-2' }));
    expect(t.endpoint.refreshes).toBe(1);
    // Stored: another instance (a new vault on the same table) reads the refreshed one.
    expect((await t.vault.get('alice', 'docs'))?.refreshToken).toBe('r-2');
  });

  it('a refused grant (invalid_grant) removes it: the next call asks for a new consent', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', refreshToken: 'r-1', expiresAt: 1_000_000 + 1000 });
    t.advance(2000);
    t.endpoint.answers.push(
      new AuthorizationServerError('docs', 'the refresh failed (invalid_grant)', { oauthError: 'invalid_grant' }),
    );
    await expect(t.headers()).rejects.toBeInstanceOf(ConnectionRequiredError);
    expect(t.table.items.size).toBe(0);
  });

  it('an authorization server that cannot be reached leaves a token that still lasts in use, and removes nothing', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', refreshToken: 'r-1', expiresAt: 1_000_000 + 100_000 });
    t.advance(90_000); // due (within a quarter of its life), not expired
    t.endpoint.answers.push(new AuthorizationServerError('docs', 'the refresh failed (unreachable or refused)'));
    await expect(t.headers()).resolves.toEqual({ authorization: 'Bearer alice-1' });
    t.advance(20_000); // expired now
    t.endpoint.answers.push(new AuthorizationServerError('docs', 'the refresh failed (unreachable or refused)'));
    await expect(t.headers()).rejects.toBeInstanceOf(AuthorizationServerError);
    expect(t.table.items.size).toBe(1);
  });

  it('without a refresh token it is used while it lasts, then the user consents again', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', expiresAt: 1_000_000 + 100_000 });
    t.advance(99_000);
    await expect(t.headers()).resolves.toEqual({ authorization: 'Bearer alice-1' });
    t.advance(2000);
    await expect(t.headers()).rejects.toBeInstanceOf(ConnectionRequiredError);
    expect(t.endpoint.refreshes).toBe(0);
  });

  it('a token the target refused (401) is refreshed before it is used again', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', refreshToken: 'r-1', expiresAt: 1_000_000 + HOUR });
    await t.as('alice', async () => t.connections.credentialsFor('docs').rejected());
    t.endpoint.answers.push({ accessToken: 'alice-2', expiresAt: 1_000_000 + HOUR });
    await expect(t.headers()).resolves.toEqual({ authorization: 'Bearer alice-2' });
    expect(t.endpoint.refreshes).toBe(1);
  });

  it('a stored connection moved under another principal does not open', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1' });
    t.table.items.set('mallory docs', t.table.items.get('alice docs')!);
    await expect(t.headers('mallory')).rejects.toBeInstanceOf(ConnectionRequiredError);
  });

  it('outside a request nobody is calling: no token is handed out', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1' });
    await expect(t.connections.credentialsFor('docs').headers()).rejects.toThrow(/no principal/);
  });
});
