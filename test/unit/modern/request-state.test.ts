import { SealedBox } from '../../../lambda/crypto/sealed-box';
import { TaskIdSealer } from '../../../lambda/crypto/task-ids';
import {
  argumentsDigest,
  canonicalJson,
  RequestStateSealer,
  type StateBinding,
} from '../../../lambda/modern/request-state';
import { clockAt } from '../../support/fake-clock';

/**
 * The gateway's sealed requestState (modern/request-state.ts): opaque to the client, bound to principal,
 * target, method, name and arguments, expiring, carrying the target's own state byte for byte, and for a
 * bridged call its id, round and the round's requests.
 */

const SECRET = 'a-test-secret-of-at-least-32-characters!';
const T0 = Date.UTC(2026, 7, 1, 12, 0, 0);
const TTL = 600;

const binding: StateBinding = {
  principal: 'alice',
  target: 'legacy',
  method: 'tools/call',
  name: 'deploy',
  argsDigest: argumentsDigest({ env: 'prod' }),
};

function sealer(box = SealedBox.fromSecrets({ current: SECRET }), now = () => T0) {
  return new RequestStateSealer(box, TTL, clockAt(now));
}

describe('a sealed requestState', () => {
  it("opens to what was sealed: kind, the target's own state byte for byte, the confirmation", () => {
    const s = sealer();
    const targetState = 'opaque "state" with \\ and ünïcode';
    const sealed = s.seal(binding, { kind: 'relay', targetState, confirmed: true });
    expect(sealed).toMatch(/^gw1\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('state');
    expect(s.open(sealed, binding)).toEqual({ ok: true, state: { kind: 'relay', targetState, confirmed: true } });
  });

  it('carries no target state when the target sent none, and marks a -32042 round as re-issued', () => {
    const s = sealer();
    expect(s.open(s.seal(binding, { kind: 'confirm', confirmed: false }), binding)).toEqual({
      ok: true,
      state: { kind: 'confirm', confirmed: false },
    });
    expect(s.open(s.seal(binding, { kind: 'relay', confirmed: false, reissue: true }), binding)).toEqual({
      ok: true,
      state: { kind: 'relay', confirmed: false, reissue: true },
    });
  });

  it("carries a bridged call's id, round and the round's requests", () => {
    const s = sealer();
    const bridge = { id: 'mrtr-abc', round: 2, requests: { 'gw-1': 'elicitation/create', 'gw-2': 'roots/list' } };
    expect(s.open(s.seal(binding, { kind: 'bridge', confirmed: true, bridge }), binding)).toEqual({
      ok: true,
      state: { kind: 'bridge', confirmed: true, bridge },
    });
  });

  it('is refused for another principal, target, method, name or arguments, naming which', () => {
    const s = sealer();
    const sealed = s.seal(binding, { kind: 'relay', confirmed: false });
    const others: Array<[Partial<StateBinding>, string]> = [
      [{ principal: 'mallory' }, 'principal'],
      [{ target: 'other' }, 'target'],
      [{ method: 'prompts/get' }, 'method'],
      [{ name: 'destroy' }, 'name'],
      [{ argsDigest: argumentsDigest({ env: 'staging' }) }, 'arguments'],
    ];
    for (const [change, reason] of others) {
      expect(s.open(sealed, { ...binding, ...change })).toEqual({ ok: false, reason });
    }
  });

  it('expires after requestStateTtlSeconds, and a shorter window given at sealing (the confirmation) is kept', () => {
    let now = T0;
    const s = sealer(undefined, () => now);
    const relay = s.seal(binding, { kind: 'relay', confirmed: false });
    const confirm = s.seal(binding, { kind: 'confirm', confirmed: false }, undefined, 120);
    now = T0 + 119_000;
    expect(s.open(confirm, binding).ok).toBe(true);
    now = T0 + 120_000;
    expect(s.open(confirm, binding)).toEqual({ ok: false, reason: 'expired' });
    expect(s.open(relay, binding).ok).toBe(true);
    now = T0 + TTL * 1000;
    expect(s.open(relay, binding)).toEqual({ ok: false, reason: 'expired' });
  });

  it('never lives longer than the configured lifetime, whatever window is asked for', () => {
    let now = T0;
    const s = sealer(undefined, () => now);
    const sealed = s.seal(binding, { kind: 'relay', confirmed: false }, undefined, TTL * 10);
    now = T0 + TTL * 1000;
    expect(s.open(sealed, binding)).toEqual({ ok: false, reason: 'expired' });
  });

  it('is malformed when altered, made up, not a string, or sealed by a key the gateway does not hold', () => {
    const s = sealer();
    const sealed = s.seal(binding, { kind: 'relay', confirmed: false });
    const last = sealed.at(-1) === 'A' ? 'B' : 'A';
    const foreign = sealer(SealedBox.fromSecrets({ current: 'another-secret-of-at-least-32-characters' }));
    for (const value of [
      `${sealed.slice(0, -1)}${last}`,
      'gw1.abcdefgh.aaaa.bbbb',
      42,
      undefined,
      foreign.seal(binding, { kind: 'relay', confirmed: false }),
    ]) {
      expect(s.open(value, binding)).toEqual({ ok: false, reason: 'malformed' });
    }
  });

  it('opens after a key rotation when the old key is the previous one', () => {
    const old = sealer(SealedBox.fromSecrets({ current: SECRET }));
    const sealed = old.seal(binding, { kind: 'relay', confirmed: false });
    const rotated = sealer(
      SealedBox.fromSecrets({ current: 'the-next-secret-of-at-least-32-characters', previous: SECRET }),
    );
    expect(rotated.open(sealed, binding).ok).toBe(true);
  });

  it("is not a task id: the gateway's task ids (same keys) never open as a requestState", () => {
    const box = SealedBox.fromSecrets({ current: SECRET });
    const taskId = new TaskIdSealer(
      box,
      86_400,
      clockAt(() => T0),
    ).seal({ target: 'legacy', taskId: 't-1', principal: 'alice' }, {});
    expect(sealer(box).open(taskId, binding)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('is a different text every time the same state is sealed (nothing to link two rounds by)', () => {
    const s = sealer();
    const state = { kind: 'relay' as const, confirmed: false };
    expect(s.seal(binding, state)).not.toBe(s.seal(binding, state));
  });
});

describe('the digest of the arguments', () => {
  it('does not depend on key order or undefined members, and treats absent arguments as {}', () => {
    expect(argumentsDigest({ a: 1, b: { c: [1, 2], d: 'x' } })).toBe(
      argumentsDigest({ b: { d: 'x', c: [1, 2] }, a: 1, e: undefined }),
    );
    expect(argumentsDigest(undefined)).toBe(argumentsDigest({}));
  });

  it('differs for any change of a value, of array order, or of a type', () => {
    const base = argumentsDigest({ list: [1, 2], n: 1 });
    expect(argumentsDigest({ list: [2, 1], n: 1 })).not.toBe(base);
    expect(argumentsDigest({ list: [1, 2], n: '1' })).not.toBe(base);
    expect(argumentsDigest({ list: [1, 2], n: 2 })).not.toBe(base);
  });

  it('is built on canonical JSON: sorted keys, undefined array members as null', () => {
    expect(canonicalJson({ b: 1, a: [undefined, 'x'], c: undefined })).toBe('{"a":[null,"x"],"b":1}');
    expect(canonicalJson(null)).toBe('null');
    expect(canonicalJson(undefined)).toBe('null');
  });
});
