import { createHash } from 'node:crypto';
import type { SealedBox } from '../crypto/sealed-box';
import type { Clock } from '../scheduling/clock';

/**
 * The gateway's own `requestState` for 2026-07-28 multi round-trip requests. The client holds it
 * between rounds; the gateway stores nothing. It is sealed (AES-256-GCM, see SealedBox), so the
 * client can neither read the target's own state inside it nor change anything, and it is bound to:
 * the caller (principal), the target, the method, the name (tool, prompt or resource URI, as the
 * target knows it), a digest of the arguments, and an expiry. A retry whose state fails any check is
 * refused before the target is called.
 *
 * Three kinds: `relay` wraps a target's input_required round (carrying the target's own requestState,
 * if it sent one); `confirm` is the gateway's own confirmation round (confirmTools); `bridge` is a round
 * of a 2025 target's call held by another invocation (its id and the round the retry answers).
 */

export type StateKind = 'relay' | 'confirm' | 'bridge';

export interface StateBinding {
  principal: string;
  target: string;
  method: string;
  /** The target's own tool or prompt name, or the resource URI. */
  name: string;
  /** argumentsDigest() of the request's arguments. */
  argsDigest: string;
}

export interface OpenedState {
  kind: StateKind;
  /** The target's own requestState, exactly as it sent it; absent when it sent none. */
  targetState?: string;
  /** The user already confirmed this call (confirmTools): later rounds do not ask again. */
  confirmed: boolean;
  /** A bridged call (kind `bridge`): where its rounds are kept, and which round this retry answers. */
  bridge?: BridgeRound;
  /** A round the gateway made of a target's -32042 (kind `relay`): its retry re-issues the call, without the answers. */
  reissue?: boolean;
}

/**
 * A round of a bridged call: its id, the round number, and the round's requests (gateway id → method),
 * so a retry's answers are checked against them before anything is claimed or delivered.
 */
export interface BridgeRound {
  id: string;
  round: number;
  requests?: Record<string, string>;
}

export type StateRejection = 'malformed' | 'expired' | 'principal' | 'target' | 'method' | 'name' | 'arguments';

interface Payload {
  v: 1;
  k: StateKind;
  p: string;
  t: string;
  m: string;
  n: string;
  d: string;
  /** Expiry, epoch seconds. */
  e: number;
  s?: string;
  c?: 1;
  /** Bridge id and round (kind `bridge`). */
  b?: string;
  r?: number;
  /** The round's requests, gateway id → method (kind `bridge`). */
  q?: Record<string, string>;
  /** A -32042 round (OpenedState.reissue). */
  x?: 1;
}

export class RequestStateSealer {
  constructor(
    private readonly box: SealedBox,
    private readonly ttlSeconds: number,
    /** The gateway's clock: expiry is read by it (tests move a fake one across a window). */
    private readonly clock: Clock,
  ) {}

  /** `ttlSeconds`: a shorter lifetime than the configured one (the confirmation window), never a longer one. */
  seal(binding: StateBinding, state: OpenedState, now = this.clock.now(), ttlSeconds = this.ttlSeconds): string {
    const payload: Payload = {
      v: 1,
      k: state.kind,
      p: binding.principal,
      t: binding.target,
      m: binding.method,
      n: binding.name,
      d: binding.argsDigest,
      e: Math.floor(now / 1000) + Math.min(ttlSeconds, this.ttlSeconds),
    };
    if (state.targetState !== undefined) payload.s = state.targetState;
    if (state.confirmed) payload.c = 1;
    if (state.reissue) payload.x = 1;
    if (state.bridge) {
      payload.b = state.bridge.id;
      payload.r = state.bridge.round;
      if (state.bridge.requests) payload.q = state.bridge.requests;
    }
    return this.box.seal(payload);
  }

  open(
    sealed: unknown,
    binding: StateBinding,
    now = this.clock.now(),
  ): { ok: true; state: OpenedState } | { ok: false; reason: StateRejection } {
    const payload = this.box.open(sealed) as Partial<Payload> | undefined;
    const kinds: unknown[] = ['relay', 'confirm', 'bridge'];
    if (payload?.v !== 1 || !kinds.includes(payload.k) || typeof payload.e !== 'number') {
      return { ok: false, reason: 'malformed' };
    }
    const bridged = payload.k === 'bridge';
    if (bridged && (typeof payload.b !== 'string' || typeof payload.r !== 'number'))
      return { ok: false, reason: 'malformed' };
    if (payload.e * 1000 <= now) return { ok: false, reason: 'expired' };
    if (payload.p !== binding.principal) return { ok: false, reason: 'principal' };
    if (payload.t !== binding.target) return { ok: false, reason: 'target' };
    if (payload.m !== binding.method) return { ok: false, reason: 'method' };
    if (payload.n !== binding.name) return { ok: false, reason: 'name' };
    if (payload.d !== binding.argsDigest) return { ok: false, reason: 'arguments' };
    return {
      ok: true,
      state: {
        kind: payload.k as StateKind,
        targetState: typeof payload.s === 'string' ? payload.s : undefined,
        confirmed: payload.c === 1,
        ...(payload.x === 1 ? { reissue: true } : {}),
        ...(bridged ? { bridge: bridgeRoundOf(payload) } : {}),
      },
    };
  }
}

function bridgeRoundOf(payload: Partial<Payload>): BridgeRound {
  const round: BridgeRound = { id: payload.b as string, round: payload.r as number };
  const requests = payload.q;
  if (requests && typeof requests === 'object' && Object.values(requests).every((m) => typeof m === 'string'))
    round.requests = requests;
  return round;
}

/** SHA-256 over the canonical JSON of the arguments (object keys sorted), base64url. */
export function argumentsDigest(args: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(args ?? {}))
    .digest('base64url');
}

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value))
    return `[${value.map((item) => canonicalJson(item === undefined ? null : item)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
