import { SessionCache } from '../../../lambda/legacy/session-cache';
import type { LoadedSession } from '../../../lambda/state/store';
import { clockAt } from '../../support/fake-clock';

const NOW = 1_800_000_000_000;

function loaded(id: string, principal = 'alice', expiresAt = NOW / 1000 + 3600): LoadedSession {
  return {
    session: {
      id,
      principal,
      protocolVersion: '2025-11-25',
      clientCapabilities: {},
      createdAt: NOW / 1000,
      expiresAt,
    },
    targets: new Map(),
  };
}

describe('the session cache (what a relayed call may start with before its read returns)', () => {
  let now = NOW;
  const clock = clockAt(() => now);
  beforeEach(() => {
    now = NOW;
  });

  it('gives a session only to the principal that owns it', () => {
    const cache = new SessionCache(clock, 10, 60_000);
    cache.put(loaded('s1', 'alice'));
    expect(cache.get('s1', 'alice')?.session.id).toBe('s1');
    expect(cache.get('s1', 'bob')).toBeUndefined();
    expect(cache.get('s2', 'alice')).toBeUndefined();
  });

  it('keeps nothing past the session’s expiry or past its age bound', () => {
    const cache = new SessionCache(clock, 10, 60_000);
    cache.put(loaded('expiring', 'alice', NOW / 1000 + 30));
    cache.put(loaded('long', 'alice'));
    now += 30_000;
    expect(cache.get('expiring', 'alice')).toBeUndefined();
    expect(cache.get('long', 'alice')).toBeDefined();
    now += 30_001;
    expect(cache.get('long', 'alice')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('a fresh read starts the age bound again', () => {
    const cache = new SessionCache(clock, 10, 60_000);
    cache.put(loaded('s1'));
    now += 50_000;
    cache.put(loaded('s1'));
    now += 50_000;
    expect(cache.get('s1', 'alice')).toBeDefined();
  });

  it('drops the least recently read session past its size, and what it is told to forget', () => {
    const cache = new SessionCache(clock, 2, 60_000);
    cache.put(loaded('a'));
    cache.put(loaded('b'));
    cache.put(loaded('a')); // read again: now the most recent
    cache.put(loaded('c'));
    expect(cache.get('b', 'alice')).toBeUndefined();
    expect(cache.get('a', 'alice')).toBeDefined();
    cache.forget('a');
    expect(cache.get('a', 'alice')).toBeUndefined();
    expect(cache.get('c', 'alice')).toBeDefined();
  });
});
