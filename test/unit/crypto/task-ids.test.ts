import { SealedBox } from '../../../lambda/crypto/sealed-box';
import { TaskIdSealer } from '../../../lambda/crypto/task-ids';
import { RequestStateSealer } from '../../../lambda/modern/request-state';
import { clockAt } from '../../support/fake-clock';

/**
 * The task ids the gateway hands out for targets' tasks (crypto/task-ids.ts): the target's own id
 * sealed with its target and principal, valid as long as the target's ttlMs says and never longer
 * than the configured maximum; anything else is refused before a target is called.
 */

const NOW = Date.UTC(2026, 11, 6, 12, 0, 0);
const box = SealedBox.fromSecrets({ current: 'a secret of at least thirty-two characters' });
const MAX_TTL_SECONDS = 86_400;
const sealer = new TaskIdSealer(
  box,
  MAX_TTL_SECONDS,
  clockAt(() => NOW),
);
const binding = { target: 'jobs', taskId: '786512e2-9e0d-44bd-8f29-789f320fe840', principal: 'alice' };

describe('a task id the gateway hands out', () => {
  it("opens to the target's own id and target, for the principal it was made for", () => {
    const id = sealer.seal(binding, { ttlMs: 60_000, createdAt: new Date(NOW).toISOString() });
    expect(id).not.toContain(binding.taskId);
    expect(sealer.open(id, 'alice')).toEqual({ ok: true, task: binding });
  });

  it('is refused for another principal, and when altered or made up', () => {
    const id = sealer.seal(binding, { ttlMs: 60_000 });
    expect(sealer.open(id, 'bob')).toEqual({ ok: false, reason: 'principal' });
    const altered = `${id.slice(0, -2)}${id.endsWith('A') ? 'B' : 'A'}${id.slice(-1)}`;
    expect(sealer.open(altered, 'alice')).toEqual({ ok: false, reason: 'malformed' });
    expect(sealer.open(binding.taskId, 'alice')).toEqual({ ok: false, reason: 'malformed' });
    expect(sealer.open(42, 'alice')).toEqual({ ok: false, reason: 'malformed' });
  });

  it('lives as long as the target keeps the task (createdAt + ttlMs), then is refused as expired', () => {
    const createdAt = new Date(NOW - 30_000).toISOString();
    const id = sealer.seal(binding, { ttlMs: 60_000, createdAt });
    expect(sealer.open(id, 'alice', NOW + 29_000).ok).toBe(true);
    expect(sealer.open(id, 'alice', NOW + 30_000)).toEqual({ ok: false, reason: 'expired' });
  });

  it('never outlives the configured maximum, also when the target says null (unlimited) or more', () => {
    for (const ttlMs of [null, undefined, 90 * 86_400_000]) {
      const id = sealer.seal(binding, { ttlMs });
      expect(sealer.open(id, 'alice', NOW + MAX_TTL_SECONDS * 1000 - 1000).ok).toBe(true);
      expect(sealer.open(id, 'alice', NOW + MAX_TTL_SECONDS * 1000)).toEqual({ ok: false, reason: 'expired' });
    }
  });

  it("counts from the gateway's clock, not a createdAt in the future: the id still expires at now + the cap", () => {
    const farFuture = new Date(NOW + 365 * 86_400_000).toISOString();
    for (const ttlMs of [null, 90 * 86_400_000]) {
      const id = sealer.seal(binding, { ttlMs, createdAt: farFuture });
      expect(sealer.open(id, 'alice', NOW + MAX_TTL_SECONDS * 1000 - 1000).ok).toBe(true);
      expect(sealer.open(id, 'alice', NOW + MAX_TTL_SECONDS * 1000)).toEqual({ ok: false, reason: 'expired' });
    }
    // The target's own ttl, measured from the gateway's now as well.
    const id = sealer.seal(binding, { ttlMs: 60_000, createdAt: new Date(NOW + 86_400_000).toISOString() });
    expect(sealer.open(id, 'alice', NOW + 59_000).ok).toBe(true);
    expect(sealer.open(id, 'alice', NOW + 60_000)).toEqual({ ok: false, reason: 'expired' });
  });

  it('is no requestState, and a requestState is no task id (same keys, different payloads)', () => {
    const states = new RequestStateSealer(
      box,
      600,
      clockAt(() => NOW),
    );
    const state = states.seal(
      { principal: 'alice', target: 'jobs', method: 'tools/call', name: 'sum', argsDigest: 'x' },
      { kind: 'relay', confirmed: false },
    );
    expect(sealer.open(state, 'alice')).toEqual({ ok: false, reason: 'malformed' });
    const id = sealer.seal(binding, { ttlMs: 60_000 });
    const opened = states.open(id, {
      principal: 'alice',
      target: 'jobs',
      method: 'tools/call',
      name: 'sum',
      argsDigest: 'x',
    });
    expect(opened).toEqual({ ok: false, reason: 'malformed' });
  });
});

describe('the same task sealed twice', () => {
  it('gets the same id (a deterministic seal), on any instance with the same keys; another task or principal another', () => {
    const other = new TaskIdSealer(
      SealedBox.fromSecrets({ current: 'a secret of at least thirty-two characters' }),
      MAX_TTL_SECONDS,
      clockAt(() => NOW + 5000),
    );
    const task = { ttlMs: 60_000, createdAt: new Date(NOW).toISOString() };
    const id = sealer.seal(binding, task);
    expect(sealer.seal(binding, task)).toBe(id);
    expect(other.seal(binding, task)).toBe(id);
    expect(sealer.seal({ ...binding, taskId: 'another' }, task)).not.toBe(id);
    expect(sealer.seal({ ...binding, principal: 'bob' }, task)).not.toBe(id);
  });
});
