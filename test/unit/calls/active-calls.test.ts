import { ActiveCalls, type CancellableCall } from '../../../lambda/calls/active-calls';

/**
 * The calls an instance holds (calls/active-calls.ts): found by session and target call id, forgotten by
 * their own registration only, and all ended by a shutdown bounded in time.
 */

function call(shutdown: () => Promise<void> = async () => undefined) {
  const cancelled: Array<string | undefined> = [];
  const held: CancellableCall = { cancelByClient: (reason) => cancelled.push(reason), shutdown: jest.fn(shutdown) };
  return { held, cancelled };
}

describe('the calls an instance holds', () => {
  it('finds a call by its session and target call id, and no other', () => {
    const calls = new ActiveCalls();
    const { held } = call();
    calls.register('session-1', 'call-1', held);
    expect(calls.get('session-1', 'call-1')).toBe(held);
    expect(calls.get('session-1', 'call-2')).toBeUndefined();
    expect(calls.get('session-2', 'call-1')).toBeUndefined();
    expect(calls.size).toBe(1);
  });

  it('does not mix up keys that only concatenate alike', () => {
    const calls = new ActiveCalls();
    calls.register('a', 'bc', call().held);
    expect(calls.get('ab', 'c')).toBeUndefined();
  });

  it('forgets a call when its own registration ends, but not a newer call registered under the same key', () => {
    const calls = new ActiveCalls();
    const first = call().held;
    const second = call().held;
    const unregisterFirst = calls.register('s', 'c', first);
    calls.register('s', 'c', second);
    unregisterFirst();
    expect(calls.get('s', 'c')).toBe(second);
    const unregisterSecond = calls.register('s', 'c', second);
    unregisterSecond();
    expect(calls.size).toBe(0);
  });

  it('shuts every call down, and resolves once all of them are done', async () => {
    const calls = new ActiveCalls();
    let finish!: () => void;
    const slow = call(() => new Promise<void>((resolve) => (finish = resolve)));
    const quick = call();
    calls.register('s', '1', slow.held);
    calls.register('s', '2', quick.held);
    let done = false;
    const shutdown = calls.shutdown(60_000).then(() => {
      done = true;
    });
    await Promise.resolve();
    expect(slow.held.shutdown).toHaveBeenCalledTimes(1);
    expect(quick.held.shutdown).toHaveBeenCalledTimes(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false);
    finish();
    await shutdown;
    expect(done).toBe(true);
  });

  it('stops waiting for calls that do not end once the bound has passed', async () => {
    jest.useFakeTimers();
    try {
      const calls = new ActiveCalls();
      calls.register('s', '1', call(() => new Promise<void>(() => undefined)).held);
      let done = false;
      const shutdown = calls.shutdown(2000).then(() => {
        done = true;
      });
      await jest.advanceTimersByTimeAsync(1999);
      expect(done).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      await shutdown;
      expect(done).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });
});
