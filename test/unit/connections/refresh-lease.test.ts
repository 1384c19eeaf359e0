import {
  AuthorizationServerError,
  type GrantedTokens,
  type TargetAuthorizationServer,
} from '../../../lambda/connections/authorization-server';
import { ConsentLinks } from '../../../lambda/connections/consent-links';
import { Envelope, LocalKeySource } from '../../../lambda/connections/envelope';
import {
  ConnectionRequiredError,
  REFRESH_LEASE_MS,
  UserConnections,
} from '../../../lambda/connections/user-connections';
import { type Connection, ConnectionVault } from '../../../lambda/connections/vault';
import { SealedBox } from '../../../lambda/crypto/sealed-box';
import { createLogger } from '../../../lambda/observability/logger';
import { type RequestContext, runInRequest } from '../../../lambda/observability/request-context';
import { FakeClock } from '../../support/fake-clock';
import { MemoryConnectionTable } from '../../support/memory-connection-table';

/**
 * One refresh of a connection at a time across instances, on a fake clock: two instances (each its own
 * vault and connections, as two processes have) on one table. The instance that takes the item's
 * refresh lease refreshes; the other reads the item until it changes (and uses the new connection) or
 * the lease lapses (and takes it over). An `invalid_grant` removes the connection only while it is
 * still the write whose refresh token failed. The end-to-end test (test/oauth/refresh-across-instances)
 * runs the same with two gateway processes and oidc-provider.
 */

const HOUR = 3600_000;
const KEY = 'a-local-key-of-at-least-32-characters';
const START = 1_000_000;

/** The token endpoint: every refresh waits for the test to answer it. */
class TokenEndpoint {
  readonly calls: Array<{ refreshToken: string; at: number; answer(result: GrantedTokens | Error): void }> = [];

  constructor(private readonly clock: FakeClock) {}

  refresh(refreshToken: string): Promise<GrantedTokens> {
    return new Promise((resolve, reject) => {
      this.calls.push({
        refreshToken,
        at: this.clock.now(),
        answer: (result) => (result instanceof Error ? reject(result) : resolve(result)),
      });
    });
  }
}

const refused = () =>
  new AuthorizationServerError('docs', 'the refresh failed (invalid_grant)', { oauthError: 'invalid_grant' });

/** Lets what the calls started settle (the memory table and the envelope are async, the clock does not move). */
async function settled(check: () => boolean): Promise<void> {
  for (let i = 0; i < 50 && !check(); i++) await new Promise((resolve) => setImmediate(resolve));
  if (!check()) throw new Error('condition not reached');
}

function setUp() {
  const clock = new FakeClock(START);
  const table = new MemoryConnectionTable();
  const endpoint = new TokenEndpoint(clock);
  const server = {
    name: 'docs',
    server: async () => ({}),
    refresh: (token: string) => endpoint.refresh(token),
  } as unknown as TargetAuthorizationServer;
  const instance = () => {
    const vault = new ConnectionVault(table, new Envelope(new LocalKeySource(KEY)), {
      idleDays: 90,
      clock,
    });
    const connections = new UserConnections({
      vault,
      servers: new Map([['docs', server]]),
      links: new ConsentLinks(
        SealedBox.fromSecrets({ current: 'links-key-of-at-least-32-characters-long' }),
        600_000,
        clock,
      ),
      publicUrl: 'https://gateway.example',
      logger: createLogger('SILENT'),
      clock,
    });
    const headers = () =>
      runInRequest(
        {
          requestId: 'r',
          trace: { traceId: 'a'.repeat(32) } as RequestContext['trace'],
          startedAt: 0,
          facts: { principal: 'alice', inputRounds: 0 },
        },
        () => connections.credentialsFor('docs').headers(),
      );
    return { vault, headers };
  };
  const a = instance();
  const b = instance();
  return {
    clock,
    table,
    endpoint,
    a,
    b,
    /** alice's connection, stored as a consent stores it. */
    connect: (connection: Omit<Connection, 'connectedAt'>) =>
      a.vault.put('alice', 'docs', { connectedAt: clock.now(), ...connection }),
    stored: () => a.vault.get('alice', 'docs'),
    tokens: (n: number): GrantedTokens => ({
      accessToken: `alice-${n}`,
      refreshToken: `r-${n}`,
      expiresAt: clock.now() + HOUR,
    }),
  };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('the refresh lease of a connection, across instances', () => {
  it('while one instance holds the lease the other waits, reading the item, and uses the connection it stores', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', refreshToken: 'r-1', expiresAt: START + 1000 });
    await t.clock.advance(2000); // expired on both instances

    const first = t.a.headers();
    await settled(() => t.endpoint.calls.length === 1);
    expect(t.table.items.get('alice docs')?.lease?.until).toBe(t.clock.now() + REFRESH_LEASE_MS);
    const second = t.b.headers();
    const readsBefore = t.table.reads;
    await t.clock.advance(2000);
    // Still one refresh: the second instance reads the item while the lease holds, and asks nobody.
    expect(t.endpoint.calls).toHaveLength(1);
    expect(t.table.reads).toBeGreaterThan(readsBefore + 2);

    t.endpoint.calls[0]!.answer(t.tokens(2));
    await t.clock.advance(1000); // the waiting instance's next read
    await expect(first).resolves.toEqual(bearer('alice-2'));
    await expect(second).resolves.toEqual(bearer('alice-2'));
    expect(t.endpoint.calls.map((call) => call.refreshToken)).toEqual(['r-1']);
    // The write replaced the item: the new refresh token, and no lease left on it.
    expect((await t.stored())?.refreshToken).toBe('r-2');
    expect(t.table.items.get('alice docs')?.lease).toBeUndefined();
  });

  it('a lease whose holder is gone is taken over once it lapses, not before', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', refreshToken: 'r-1', expiresAt: START + 1000 });
    await t.clock.advance(2000);
    // An instance took the lease and died (its function timed out) before it stored anything.
    const version = (await t.a.vault.read('alice', 'docs'))!.version;
    const until = t.clock.now() + REFRESH_LEASE_MS;
    expect(await t.table.takeLease('alice', 'docs', version, { holder: 'gone', until }, t.clock.now())).toBe(true);

    const call = t.b.headers();
    await t.clock.advance(REFRESH_LEASE_MS - 1000);
    expect(t.endpoint.calls).toHaveLength(0);
    await t.clock.advance(2000); // lapsed, and read again (a read at most every second)
    await settled(() => t.endpoint.calls.length === 1);
    expect(t.endpoint.calls[0]!.at).toBeGreaterThanOrEqual(until);
    expect(t.table.items.get('alice docs')?.lease?.holder).not.toBe('gone');

    t.endpoint.calls[0]!.answer(t.tokens(2));
    await expect(call).resolves.toEqual(bearer('alice-2'));
    expect((await t.stored())?.refreshToken).toBe('r-2');
  });

  it('invalid_grant after the item changed (stored anew meanwhile): that connection is used, not removed', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', refreshToken: 'r-1', expiresAt: START + 1000 });
    await t.clock.advance(2000);

    const call = t.b.headers();
    await settled(() => t.endpoint.calls.length === 1);
    // Meanwhile the connection is written anew on the other instance (the user consented there again).
    await t.connect({ accessToken: 'alice-new', refreshToken: 'r-new', expiresAt: t.clock.now() + HOUR });
    t.endpoint.calls[0]!.answer(refused());

    await expect(call).resolves.toEqual(bearer('alice-new'));
    expect(t.table.items.size).toBe(1);
    expect((await t.stored())?.refreshToken).toBe('r-new');
  });

  it('invalid_grant on the item as read: it is removed, and the waiting instance asks for consent without a refresh of its own', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', refreshToken: 'r-1', expiresAt: START + 1000 });
    await t.clock.advance(2000);

    const first = t.a.headers();
    await settled(() => t.endpoint.calls.length === 1);
    const second = t.b.headers();
    const firstAsked = expect(first).rejects.toBeInstanceOf(ConnectionRequiredError);
    const secondAsked = expect(second).rejects.toBeInstanceOf(ConnectionRequiredError);
    await t.clock.advance(500);
    t.endpoint.calls[0]!.answer(refused());

    await firstAsked;
    await t.clock.advance(1000);
    await secondAsked;
    expect(t.table.items.size).toBe(0);
    expect(t.endpoint.calls).toHaveLength(1);
  });

  it('a refresh that outlasted its lease does not overwrite the one that took the lease over', async () => {
    const t = setUp();
    await t.connect({ accessToken: 'alice-1', refreshToken: 'r-1', expiresAt: START + 1000 });
    await t.clock.advance(2000);

    const slow = t.a.headers();
    await settled(() => t.endpoint.calls.length === 1);
    const other = t.b.headers();
    await t.clock.advance(REFRESH_LEASE_MS + 1000); // the slow refresh's lease lapsed: taken over
    await settled(() => t.endpoint.calls.length === 2);
    t.endpoint.calls[1]!.answer(t.tokens(3));
    await expect(other).resolves.toEqual(bearer('alice-3'));

    t.endpoint.calls[0]!.answer(t.tokens(2)); // the slow one answers last: its write is refused
    await expect(slow).resolves.toEqual(bearer('alice-3'));
    expect((await t.stored())?.refreshToken).toBe('r-3');
  });
});
