import { CallTimers, type Scheduler } from '../../../lambda/scheduling/call-timers';

/**
 * The timer registry (scheduling/call-timers.ts) on a scheduler the test drives: named timers, a name set
 * again replaces its timer, clear/clearAll/close, and nothing scheduled after close.
 */

function manualScheduler() {
  let now = 0;
  let next = 0;
  const due = new Map<number, { at: number; fn: () => void }>();
  const scheduler: Scheduler = {
    setTimeout: (fn, ms) => {
      const handle = ++next;
      due.set(handle, { at: now + ms, fn });
      return handle;
    },
    clearTimeout: (handle) => void due.delete(handle as number),
  };
  /** Moves the clock, firing what falls due in order. */
  const advance = (ms: number) => {
    const until = now + ms;
    for (;;) {
      const first = [...due.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (!first) break;
      due.delete(first[0]);
      now = first[1].at;
      first[1].fn();
    }
    now = until;
  };
  return { scheduler, advance, scheduled: () => due.size };
}

describe('CallTimers', () => {
  it('fires a named timer once, after its time', () => {
    const { scheduler, advance } = manualScheduler();
    const timers = new CallTimers(scheduler);
    const fired: string[] = [];
    timers.set('a', 100, () => fired.push('a'));
    advance(99);
    expect(fired).toEqual([]);
    expect(timers.has('a')).toBe(true);
    advance(1);
    expect(fired).toEqual(['a']);
    expect(timers.has('a')).toBe(false);
    advance(1000);
    expect(fired).toEqual(['a']);
  });

  it('replaces a timer set again under the same name', () => {
    const { scheduler, advance, scheduled } = manualScheduler();
    const timers = new CallTimers(scheduler);
    const fired: string[] = [];
    timers.set('release', 100, () => fired.push('first'));
    timers.set('release', 300, () => fired.push('second'));
    expect(scheduled()).toBe(1);
    advance(200);
    expect(fired).toEqual([]);
    advance(100);
    expect(fired).toEqual(['second']);
  });

  it('lets a timer set its own name again (a poll)', () => {
    const { scheduler, advance } = manualScheduler();
    const timers = new CallTimers(scheduler);
    let looks = 0;
    const look = () => {
      looks++;
      if (looks < 3) timers.set('poll', 10, look);
    };
    timers.set('poll', 10, look);
    advance(100);
    expect(looks).toBe(3);
    expect(timers.size).toBe(0);
  });

  it('clears one, a family, or all', () => {
    const { scheduler, advance, scheduled } = manualScheduler();
    const timers = new CallTimers(scheduler);
    const fired: string[] = [];
    for (const name of ['deadline', 'pending:a', 'pending:b', 'release']) timers.set(name, 10, () => fired.push(name));
    timers.clear('deadline');
    timers.clear('unknown');
    timers.clearPrefixed('pending:');
    expect(timers.size).toBe(1);
    expect(scheduled()).toBe(1);
    advance(10);
    expect(fired).toEqual(['release']);
    timers.set('x', 10, () => fired.push('x'));
    timers.clearAll();
    advance(10);
    expect(fired).toEqual(['release']);
    timers.set('y', 0, () => fired.push('y'));
    advance(0);
    expect(fired).toEqual(['release', 'y']);
  });

  it('schedules nothing after close', () => {
    const { scheduler, advance, scheduled } = manualScheduler();
    const timers = new CallTimers(scheduler);
    const fired: string[] = [];
    timers.set('a', 10, () => fired.push('a'));
    timers.close();
    timers.set('b', 10, () => fired.push('b'));
    expect(scheduled()).toBe(0);
    advance(100);
    expect(fired).toEqual([]);
  });

  it('runs a negative delay at once (a deadline already past)', () => {
    const { scheduler, advance } = manualScheduler();
    const timers = new CallTimers(scheduler);
    const fired: string[] = [];
    timers.set('deadline', -50, () => fired.push('deadline'));
    advance(0);
    expect(fired).toEqual(['deadline']);
  });
});
