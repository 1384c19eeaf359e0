import { type BridgedPlaces, takeBridgedPlace } from '../../../lambda/modern/bridged-calls';
import { errorHeaders, httpStatusOf } from '../../../lambda/protocol/errors';
import { MemorySessionStore } from '../../support/memory-store';
import { QUIET, refusal } from '../../support/modern-deps';

/**
 * The places of a principal's bridged calls waiting for input (modern/bridged-calls.ts), counted in the
 * store so the bound holds across instances: taken up to maxBridgedCallsPerPrincipal, 429 with a
 * Retry-After beyond, given back once.
 */

const deadline = () => Date.now() + 60_000;

function places(store = new MemorySessionStore(), max = 2): BridgedPlaces & { store: MemorySessionStore } {
  return { store, logger: QUIET, max, pendingTimeoutSeconds: 300 };
}

describe("a principal's bridged-call places", () => {
  it('are taken up to the maximum, and the next is refused with TooManyBridgedCalls (429, Retry-After)', async () => {
    const p = places();
    await takeBridgedPlace(p, 'alice', deadline());
    await takeBridgedPlace(p, 'alice', deadline());
    const error = await refusal(takeBridgedPlace(p, 'alice', deadline()));
    expect([error.kind, httpStatusOf(error), error.data]).toEqual(['TooManyBridgedCalls', 429, { limit: 2 }]);
    expect(Number(errorHeaders(error)['retry-after'])).toBeGreaterThan(0);
    expect(error.message).toContain('maxBridgedCallsPerPrincipal');
  });

  it('are counted per principal', async () => {
    const p = places(undefined, 1);
    await takeBridgedPlace(p, 'alice', deadline());
    await expect(takeBridgedPlace(p, 'bob', deadline())).resolves.toBeInstanceOf(Function);
  });

  it('are shared by every instance on the same store', async () => {
    const store = new MemorySessionStore();
    await takeBridgedPlace(places(store, 1), 'alice', deadline());
    expect((await refusal(takeBridgedPlace(places(store, 1), 'alice', deadline()))).kind).toBe('TooManyBridgedCalls');
  });

  it('come back when given back, once however often the release is called', async () => {
    const p = places(undefined, 1);
    const release = await takeBridgedPlace(p, 'alice', deadline());
    const releases = jest.spyOn(p.store, 'releaseBridgedCall');
    await release();
    await release();
    expect(releases).toHaveBeenCalledTimes(1);
    const again = await takeBridgedPlace(p, 'alice', deadline());
    expect(again).toBeInstanceOf(Function);
  });

  it("bound the Retry-After by pendingRequestTimeoutSeconds (a live call's place comes back by then)", async () => {
    const p = { ...places(undefined, 1), pendingTimeoutSeconds: 2 };
    await takeBridgedPlace(p, 'alice', Date.now() + 3_600_000);
    const error = await refusal(takeBridgedPlace(p, 'alice', deadline()));
    expect(error.retryAfterSeconds).toBeLessThanOrEqual(2);
  });

  it('are refused with the store’s failure when it is down (nothing taken)', async () => {
    const p = places();
    p.store.down = true;
    expect((await refusal(takeBridgedPlace(p, 'alice', deadline()))).kind).toBe('StoreUnavailable');
  });

  it('survive a release that fails: logged, never thrown', async () => {
    const p = places();
    const release = await takeBridgedPlace(p, 'alice', deadline());
    p.store.down = true;
    await expect(release()).resolves.toBeUndefined();
  });
});
