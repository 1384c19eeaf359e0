import { RequestScope } from '../../../lambda/modern/request-scope';
import { systemClock } from '../../../lambda/scheduling/clock';

/**
 * The one abort signal of a 2026-07-28 request (modern/request-scope.ts): aborted at the invocation's
 * deadline or when the client goes away — unless the request stopped following the client — and
 * nothing left behind once done. The deadline runs on jest's fake timers.
 */

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

function scope(deadlineMs = 10_000) {
  const client = new AbortController();
  const s = new RequestScope({ signal: client.signal, deadline: Date.now() + deadlineMs }, systemClock);
  return { s, client };
}

describe('the scope of a request', () => {
  it('aborts at the deadline with a TimeoutError, not before', () => {
    const { s } = scope();
    jest.advanceTimersByTime(9_999);
    expect(s.signal.aborted).toBe(false);
    jest.advanceTimersByTime(1);
    expect(s.signal.aborted).toBe(true);
    expect((s.signal.reason as DOMException).name).toBe('TimeoutError');
    expect(s.clientGone).toBe(false);
  });

  it('aborts at once for a deadline already past', () => {
    const { s } = scope(-5);
    jest.advanceTimersByTime(0);
    expect(s.signal.aborted).toBe(true);
  });

  it('aborts when the client goes away, and says so', () => {
    const { s, client } = scope();
    client.abort();
    expect([s.signal.aborted, s.clientGone]).toEqual([true, true]);
  });

  it('is aborted from the start when the client went away before the request reached it', () => {
    const client = new AbortController();
    client.abort();
    const s = new RequestScope({ signal: client.signal, deadline: Date.now() + 10_000 }, systemClock);
    expect([s.signal.aborted, s.clientGone]).toEqual([true, true]);
    s.done();
  });

  it('no longer follows the client once detached (a bridged call holds its target call), but still ends at the deadline', () => {
    const { s, client } = scope();
    s.detachFromClient();
    client.abort();
    expect([s.signal.aborted, s.clientGone]).toEqual([false, false]);
    jest.advanceTimersByTime(10_000);
    expect(s.signal.aborted).toBe(true);
  });

  it('does not count the client going away after the deadline as the client gone', () => {
    const { s, client } = scope();
    jest.advanceTimersByTime(10_000);
    client.abort();
    expect(s.clientGone).toBe(false);
  });

  it('leaves no timer and no listener once done', () => {
    const { s, client } = scope();
    s.done();
    expect(jest.getTimerCount()).toBe(0);
    client.abort();
    jest.advanceTimersByTime(20_000);
    expect(s.signal.aborted).toBe(false);
  });
});
