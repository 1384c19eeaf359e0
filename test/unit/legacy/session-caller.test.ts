import { ANONYMOUS_IDENTITY } from '../../../lambda/auth/identity';
import { sessionCaller } from '../../../lambda/legacy/session-caller';
import { systemClock } from '../../../lambda/scheduling/clock';
import type { StoredTargetSession } from '../../../lambda/targets/target-link';
import { storedSession, targetSession } from '../../support/legacy-deps';
import { MemorySessionStore } from '../../support/memory-store';

/**
 * A 2025 session as the targets see it (legacy/session-caller.ts): its version, capabilities and log
 * level, and its target sessions kept in the session's own partition, so any instance reuses them.
 */

const opened = (id: string): StoredTargetSession => ({
  targetSessionId: id,
  protocolVersion: '2025-11-25',
  declaredCapabilities: {},
});

describe("a session's caller", () => {
  it("speaks the session's version, with what its client declared, its log level and whether it can be asked", async () => {
    const store = new MemorySessionStore();
    const loaded = await storedSession(store, { logLevel: 'warning', clientCapabilities: { roots: {} } });
    const caller = sessionCaller({ store: store, clock: systemClock }, loaded, ANONYMOUS_IDENTITY, true);
    expect(caller).toMatchObject({
      era: 'legacy',
      protocolVersion: '2025-11-25',
      capabilities: { roots: {} },
      inputCapable: true,
      logLevel: 'warning',
    });
    expect(sessionCaller({ store: store, clock: systemClock }, loaded, ANONYMOUS_IDENTITY, false).inputCapable).toBe(
      false,
    );
  });

  it('finds the target sessions its partition held when it was read, as a target link needs them', async () => {
    const store = new MemorySessionStore();
    const loaded = await storedSession(store, {}, [targetSession('demo', { serverCapabilities: { logging: {} } })]);
    const slots = sessionCaller({ store: store, clock: systemClock }, loaded, ANONYMOUS_IDENTITY, true).sessions;
    expect(slots.get('demo')).toEqual({
      targetSessionId: 'demo-session',
      protocolVersion: '2025-11-25',
      declaredCapabilities: {},
      serverCapabilities: { logging: {} },
    });
    expect(slots.get('other')).toBeUndefined();
  });

  it('keeps a target session it opened in the partition, for every later request of the session', async () => {
    const store = new MemorySessionStore();
    const loaded = await storedSession(store);
    const slots = sessionCaller({ store: store, clock: systemClock }, loaded, ANONYMOUS_IDENTITY, true).sessions;
    expect(await slots.save('demo', opened('t-1'))).toEqual(opened('t-1'));
    const again = await store.loadSession(loaded.session.id);
    expect(again?.targets.get('demo')?.targetSessionId).toBe('t-1');
  });

  it('uses the one another request kept first, and ends up with that one (the last stored does not win)', async () => {
    const store = new MemorySessionStore();
    const loaded = await storedSession(store);
    // Two requests read the session before either kept a target session.
    const other = await store.loadSession(loaded.session.id);
    if (!other) throw new Error('no session');
    await sessionCaller({ store: store, clock: systemClock }, other, ANONYMOUS_IDENTITY, true).sessions.save(
      'demo',
      opened('first'),
    );
    const kept = await sessionCaller(
      { store: store, clock: systemClock },
      loaded,
      ANONYMOUS_IDENTITY,
      true,
    ).sessions.save('demo', opened('second'));
    expect(kept.targetSessionId).toBe('first');
  });

  it('a parallel request of the same session that read before the save finds the kept one on this instance', async () => {
    const store = new MemorySessionStore();
    const loaded = await storedSession(store);
    const earlyRead = await store.loadSession(loaded.session.id);
    if (!earlyRead) throw new Error('no session');
    await sessionCaller({ store: store, clock: systemClock }, loaded, ANONYMOUS_IDENTITY, true).sessions.save(
      'demo',
      opened('kept'),
    );
    expect(
      sessionCaller({ store: store, clock: systemClock }, earlyRead, ANONYMOUS_IDENTITY, true).sessions.get('demo')
        ?.targetSessionId,
    ).toBe('kept');
  });

  it('forgets a target session the target forgot, and replaces exactly that one at the next save', async () => {
    const store = new MemorySessionStore();
    const loaded = await storedSession(store, {}, [targetSession('demo', { targetSessionId: 'old' })]);
    const slots = sessionCaller({ store: store, clock: systemClock }, loaded, ANONYMOUS_IDENTITY, true).sessions;
    const old = slots.get('demo');
    if (!old) throw new Error('no target session');
    slots.forget('demo', old);
    expect(slots.get('demo')).toBeUndefined();
    expect((await slots.save('demo', opened('new'))).targetSessionId).toBe('new');
    expect((await store.loadSession(loaded.session.id))?.targets.get('demo')?.targetSessionId).toBe('new');
  });

  it('opens nothing new before the read of a call started ahead of it, and is ready at once otherwise', async () => {
    const store = new MemorySessionStore();
    const loaded = await storedSession(store);
    await expect(
      sessionCaller({ store: store, clock: systemClock }, loaded, ANONYMOUS_IDENTITY, true).sessions.ready?.(),
    ).resolves.toBeUndefined();
    const gone = Promise.reject(new Error('the session is gone'));
    gone.catch(() => undefined);
    await expect(
      sessionCaller({ store: store, clock: systemClock }, loaded, ANONYMOUS_IDENTITY, true, gone).sessions.ready?.(),
    ).rejects.toThrow('gone');
  });
});
