import { SingleFlight } from '../../../lambda/scheduling/single-flight';

/**
 * Single-flight (scheduling/single-flight.ts): callers of one key that arrive while its work runs share
 * that run; a caller that goes away (its signal) stops waiting without ending the run for the others;
 * once the run settled, success or failure, the next caller starts a new one.
 */

function gate<T>() {
  let open!: (value: T) => void;
  let fail!: (error: Error) => void;
  const opened = new Promise<T>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { open, fail, opened };
}

describe('SingleFlight', () => {
  it('runs the work once for every caller of a key that arrives while it runs; another key runs its own', async () => {
    const flights = new SingleFlight<string>();
    const work = gate<string>();
    let runs = 0;
    const run = () => {
      runs++;
      return work.opened;
    };
    const waiting = [flights.run('a', run), flights.run('a', run), flights.run('a', run)];
    const other = flights.run('b', async () => 'b');
    work.open('listed');
    expect(await Promise.all(waiting)).toEqual(['listed', 'listed', 'listed']);
    expect(await other).toBe('b');
    expect(runs).toBe(1);
    expect(flights.started).toBe(2);
  });

  it('a caller whose signal aborts stops waiting; the others still get the result', async () => {
    const flights = new SingleFlight<string>();
    const work = gate<string>();
    const leaving = new AbortController();
    const first = flights.run('a', () => work.opened, leaving.signal);
    const second = flights.run('a', () => work.opened);
    leaving.abort(new Error('client gone'));
    await expect(first).rejects.toThrow('client gone');
    work.open('listed');
    expect(await second).toBe('listed');
  });

  it('after the run settled, the next caller starts a new one, also after a failure (shared by its waiters)', async () => {
    const flights = new SingleFlight<string>();
    const failing = gate<string>();
    const both = [flights.run('a', () => failing.opened), flights.run('a', () => failing.opened)];
    failing.fail(new Error('unreachable'));
    for (const waiting of both) await expect(waiting).rejects.toThrow('unreachable');
    expect(await flights.run('a', async () => 'again')).toBe('again');
    expect(flights.started).toBe(2);
  });
});
