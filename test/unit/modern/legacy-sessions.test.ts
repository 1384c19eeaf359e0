import { LegacySessionPool } from '../../../lambda/modern/legacy-sessions';
import { systemClock } from '../../../lambda/scheduling/clock';
import type { LegacySession } from '../../../lambda/targets/legacy-client';
import type { StoredTargetSession } from '../../../lambda/targets/target-link';
import type { Targets } from '../../../lambda/targets/targets';
import { QUIET } from '../../support/modern-deps';

/**
 * The 2025 target sessions of 2026-07-28 callers, in an instance's memory (modern/legacy-sessions.ts):
 * one pool key per (target, principal, declared capabilities); shared by requests that cannot be asked,
 * held alone by a call that listens on the session's GET stream; bounded (idle per key, entries in all,
 * idle time), the least recently used ended first and never one a call holds. The pool reads the time
 * from Node's clock here (the gateway's, in these tests): jest's fake timers move it.
 */

const FORM = { elicitation: { form: {} } };

function pool(options: ConstructorParameters<typeof LegacySessionPool>[3] = {}) {
  const ended: Array<{ target: string; session: LegacySession }> = [];
  const targets = {
    terminate: async (target: string, session: LegacySession) => {
      ended.push({ target, session });
    },
  } as unknown as Targets; // the pool only ends sessions
  return { pool: new LegacySessionPool(targets, QUIET, systemClock, options), ended };
}

let next = 0;
const session = (withId = true): StoredTargetSession => ({
  ...(withId ? { targetSessionId: `ts-${++next}` } : {}),
  protocolVersion: '2025-11-25',
  declaredCapabilities: {},
});

beforeEach(() => jest.useFakeTimers({ now: Date.UTC(2026, 7, 1) }));
afterEach(() => jest.useRealTimers());

describe("a modern caller's 2025 target sessions", () => {
  it('are shared by requests of the same principal, capabilities and target, and by no one else', async () => {
    const { pool: p } = pool();
    const alice = p.slotsFor('alice', FORM);
    const kept = await alice.save('legacy', session());
    expect(p.slotsFor('alice', FORM).get('legacy')).toBe(kept);
    expect(p.slotsFor('bob', FORM).get('legacy')).toBeUndefined();
    expect(p.slotsFor('alice', {}).get('legacy')).toBeUndefined();
    expect(alice.get('other')).toBeUndefined();
  });

  it('key the capabilities canonically: the same declaration in another key order is the same caller', async () => {
    const { pool: p } = pool();
    const caps = { elicitation: { form: {} }, roots: {} };
    const kept = await p.slotsFor('alice', caps).save('legacy', session());
    expect(p.slotsFor('alice', { roots: {}, elicitation: { form: {} } }).get('legacy')).toBe(kept);
    expect(p.slotsFor('alice', caps).scope).toBe(p.slotsFor('alice', { roots: {}, elicitation: { form: {} } }).scope);
  });

  it('are scoped per pool and caller, so two gateways in one process never share an initialize', () => {
    const one = pool().pool;
    const two = pool().pool;
    expect(one.slotsFor('alice', FORM).scope).not.toBe(two.slotsFor('alice', FORM).scope);
    expect(one.slotsFor('alice', FORM).scope).not.toBe(one.slotsFor('bob', FORM).scope);
  });

  it('count every session opened', async () => {
    const { pool: p } = pool();
    await p.slotsFor('alice', FORM).save('legacy', session());
    await p.slotsFor('bob', FORM).save('legacy', session());
    expect([p.initializations, p.size]).toEqual([2, 2]);
  });
});

describe('a call that listens on the GET stream', () => {
  it('holds its session alone: a concurrent listening call finds none (it opens its own), a plain request still shares it', async () => {
    const { pool: p } = pool();
    const slots = p.slotsFor('alice', FORM);
    const kept = await slots.save('legacy', session());
    expect(slots.checkout?.('legacy')).toBe(kept);
    expect(slots.checkout?.('legacy')).toBeUndefined();
    expect(slots.get('legacy')).toBe(kept);
    slots.checkin?.('legacy', kept);
    expect(slots.checkout?.('legacy')).toBe(kept);
  });

  it('keeps a session it opened itself checked out', async () => {
    const { pool: p } = pool();
    const slots = p.slotsFor('alice', FORM);
    await slots.save('legacy', session(), { checkedOut: true });
    expect(slots.checkout?.('legacy')).toBeUndefined();
  });

  it('needs nothing kept apart at a target without sessions (no GET stream): its session is never held', async () => {
    const { pool: p } = pool();
    const slots = p.slotsFor('alice', FORM);
    const kept = await slots.save('legacy', session(false));
    expect(slots.checkout?.('legacy')).toBe(kept);
    expect(slots.checkout?.('legacy')).toBe(kept);
  });

  it('on return, leaves at most maxIdlePerKey idle sessions, ending the least recently used', async () => {
    const { pool: p, ended } = pool({ maxIdlePerKey: 1 });
    const slots = p.slotsFor('alice', FORM);
    const first = await slots.save('legacy', session(), { checkedOut: true });
    const second = await slots.save('legacy', session(), { checkedOut: true });
    slots.checkin?.('legacy', first);
    expect(ended).toEqual([]);
    jest.advanceTimersByTime(1);
    slots.checkin?.('legacy', second);
    expect(ended).toEqual([{ target: 'legacy', session: first }]);
    expect(p.size).toBe(1);
    expect(slots.get('legacy')).toBe(second);
  });
  it('on return, never ends a session another listening call still holds', async () => {
    const { pool: p, ended } = pool({ maxIdlePerKey: 0 });
    const slots = p.slotsFor('alice', FORM);
    const held = await slots.save('legacy', session(), { checkedOut: true });
    const returned = await slots.save('legacy', session(), { checkedOut: true });
    slots.checkin?.('legacy', returned);
    expect(ended).toEqual([]);
    expect(slots.checkout?.('legacy')).toBe(returned);
    expect(p.size).toBe(2);
    slots.checkin?.('legacy', held);
    expect(ended.map((e) => e.session)).toEqual([]);
  });
});

describe('the bounds of the pool', () => {
  it('end the least recently used sessions beyond maxEntries, never one a call holds', async () => {
    const { pool: p, ended } = pool({ maxEntries: 2 });
    const held = await p.slotsFor('alice', FORM).save('legacy', session(), { checkedOut: true });
    const bob = await p.slotsFor('bob', FORM).save('legacy', session());
    await p.slotsFor('carol', FORM).save('legacy', session());
    expect(ended.map((e) => e.session)).toEqual([bob]);
    expect(p.slotsFor('alice', FORM).get('legacy')).toBe(held);
    expect(p.size).toBe(2);
  });

  it('count a session used as recently used: the other one is ended first', async () => {
    const { pool: p, ended } = pool({ maxEntries: 2 });
    const alice = await p.slotsFor('alice', FORM).save('legacy', session());
    const bob = await p.slotsFor('bob', FORM).save('legacy', session());
    expect(p.slotsFor('alice', FORM).get('legacy')).toBe(alice);
    await p.slotsFor('carol', FORM).save('legacy', session());
    expect(ended.map((e) => e.session)).toEqual([bob]);
  });

  it('end a session idle for idleMs when next looked for, and hand it out no more', async () => {
    const { pool: p, ended } = pool({ idleMs: 60_000 });
    const slots = p.slotsFor('alice', FORM);
    const kept = await slots.save('legacy', session());
    jest.advanceTimersByTime(59_999);
    expect(slots.get('legacy')).toBe(kept);
    jest.advanceTimersByTime(60_000);
    expect(slots.get('legacy')).toBeUndefined();
    expect(ended).toEqual([{ target: 'legacy', session: kept }]);
  });

  it('never end a session a call holds for being idle', async () => {
    const { pool: p, ended } = pool({ idleMs: 60_000 });
    const slots = p.slotsFor('alice', FORM);
    const kept = await slots.save('legacy', session(), { checkedOut: true });
    jest.advanceTimersByTime(120_000);
    expect(slots.get('legacy')).toBe(kept);
    expect(ended).toEqual([]);
  });
});

describe('a session the target forgot', () => {
  it('is dropped without ending it (there is nothing to end), and the next request opens a new one', async () => {
    const { pool: p, ended } = pool();
    const slots = p.slotsFor('alice', FORM);
    const kept = await slots.save('legacy', session());
    slots.forget('legacy', kept);
    expect(slots.get('legacy')).toBeUndefined();
    expect([p.size, ended]).toEqual([0, []]);
  });
});
