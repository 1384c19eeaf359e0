import { admitSession, releaseSession } from '../../../lambda/legacy/admission';
import { GatewayError } from '../../../lambda/protocol/errors';
import type { SessionRecord } from '../../../lambda/state/store';
import { legacyDeps } from '../../support/legacy-deps';

/**
 * Whether a principal may open one more 2025 session (legacy/admission.ts): at most
 * `initializeRatePerMinute` initializes a minute and `maxSessionsPerPrincipal` live sessions, counted
 * in the store so every instance sees the same numbers; refused with 429 and a Retry-After that says
 * when a retry can succeed.
 */

// A fixed minute, 20 s into it: the rate window's end is 40 s away.
const MINUTE = 1_800_000_000 - (1_800_000_000 % 60);
const now = MINUTE + 20;

const session = (principal = 'alice', id = 's'): SessionRecord => ({
  id,
  principal,
  protocolVersion: '2025-11-25',
  clientCapabilities: {},
  createdAt: now,
  expiresAt: now + 3600,
});

async function refusal(promise: Promise<void>): Promise<GatewayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof GatewayError)) throw new Error(`not refused: ${String(error)}`);
  return error;
}

describe('admitting a session', () => {
  it('admits up to initializeRatePerMinute initializes of a principal in a minute, then 429 until the minute ends', async () => {
    const { deps } = legacyDeps({ initializeRatePerMinute: 2 });
    await admitSession(deps, session());
    await admitSession(deps, session());
    const error = await refusal(admitSession(deps, session()));
    expect(error.kind).toBe('InitializeRateExceeded');
    expect(error.spec.status).toBe(429);
    expect(error.retryAfterSeconds).toBe(40);
    expect(error.data).toEqual({ limit: 2 });
  });

  it('counts each principal on its own', async () => {
    const { deps } = legacyDeps({ initializeRatePerMinute: 1 });
    await admitSession(deps, session('alice'));
    await expect(admitSession(deps, session('bob'))).resolves.toBeUndefined();
    expect((await refusal(admitSession(deps, session('alice')))).kind).toBe('InitializeRateExceeded');
  });

  it('admits up to maxSessionsPerPrincipal live sessions; a released one makes room again', async () => {
    const { deps } = legacyDeps({ maxSessionsPerPrincipal: 2 });
    const first = session('alice', 'one');
    await admitSession(deps, first);
    await admitSession(deps, session('alice', 'two'));
    const error = await refusal(admitSession(deps, session('alice', 'three')));
    expect(error.kind).toBe('TooManySessions');
    expect(error.spec.status).toBe(429);
    expect(error.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    await releaseSession(deps, first);
    await expect(admitSession(deps, session('alice', 'three'))).resolves.toBeUndefined();
  });

  it('checks the rate before the live count: a refused rate takes no session slot', async () => {
    const { deps, store } = legacyDeps({ initializeRatePerMinute: 1, maxSessionsPerPrincipal: 5 });
    const admits = jest.spyOn(store, 'admitSession');
    await admitSession(deps, session());
    await refusal(admitSession(deps, session()));
    expect(admits).toHaveBeenCalledTimes(1);
  });

  it('lets a store failure through as it is (the usual 503): the session could not have been stored either', async () => {
    const { deps, store } = legacyDeps();
    store.down = true;
    expect((await refusal(admitSession(deps, session()))).kind).toBe('StoreUnavailable');
  });

  it('releasing a session is best effort: a store failure is warned, never thrown', async () => {
    const { deps, store, logger } = legacyDeps();
    store.down = true;
    await expect(releaseSession(deps, session())).resolves.toBeUndefined();
    expect(logger.messages('warn')).toEqual(['the session count of a principal was not decreased']);
  });
});
