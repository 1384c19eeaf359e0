import { randomBytes } from 'node:crypto';
import type { RequestId } from '../protocol/types';
import type { Clock } from '../scheduling/clock';
import { HOLDER_LEASE_MS } from '../state/records';
import type { SessionRecord, SessionStore, WaitingCallRecord } from '../state/store';

/**
 * A waiting call: a 2025 session's call that waits for the client (an elicitation, sampling, roots, a
 * gateway question confirmation) or for a target that polls, and that no invocation needs to hold meanwhile.
 * MCP 2025-11-25 lets a server close an SSE stream after an event with an `id` (SSE polling, SEP-1699):
 * the client reconnects after the `retry` the server gave with `GET` + `Last-Event-ID`. So the call is
 * one durable record in the session's partition (`R#<streamId>`, state/store.ts `WaitingCallRecord`),
 * and one state machine:
 *
 *   (none) ──hold──▶ held(by A, lease) ──release──▶ released ──takeOver──▶ held(by B, lease) ── … ──finish──▶ (none)
 *                       │                                                       ▲
 *                       └── A died: its lease runs out ──────takeOver───────────┘
 *
 * Every transition is a conditional write on the record's `version`, so exactly one instance goes on
 * with the call. The holder (legacy/call-relay.ts) writes the record when the call starts waiting,
 * renews its lease while it waits, and after `streamReleaseAfterSeconds` (or just before its
 * invocation's deadline) releases it: the client's stream is ended with a `retry`, the call's pending
 * records lose their holder lease (an answer is then delivered without one: the target answers on its
 * resumable stream, or the answer is stored for the next holder), and the invocation ends. The
 * client's reconnect on any instance (legacy/resume.ts) replays what it missed and takes the call
 * over: the answers are awaited or already there, a 2026-07-28 target is called again with them, a
 * 2025 target's stream is resumed with `Last-Event-ID`.
 *
 * What can be released: only streams that can be resumed on both sides — the client's (a session of
 * 2025-11-25 whose stream has ids) and the target's (nothing open: a confirmation or a 2026-07-28
 * target's input round; or a 2025 target stream that sent event ids). A call whose target stream has
 * no ids is held as before. Which clients, and when: legacy/release-policy.ts.
 */

/** A pending record of the call (its answer is what the call waits for). */
export interface WaitingRequest {
  gatewayId: string;
  method: string;
  /** Epoch ms it was sent: its pending timeout runs from here, on whichever instance holds the call. */
  askedAt: number;
}

/** Where the call stands: what the next holder does first. */
export type WaitingStep =
  /** The gateway's own confirmation (confirmTools) was asked: await it, then call the target. */
  | { kind: 'confirm'; request: WaitingRequest }
  /**
   * The gateway asked the user to connect an account at a per-user OAuth target (URL elicitation):
   * await the answer, then the stored connection, then call the target.
   */
  | { kind: 'connect'; request: WaitingRequest; elicitationId: string }
  /** A 2026-07-28 target's input round `round` was asked: await the answers, retry the target with them. */
  | {
      kind: 'input';
      round: number;
      requestState?: string;
      /** The target's input request keys with the questions asked for them, in order. */
      keys: Array<{ key: string } & WaitingRequest>;
    }
  /** A 2025 target's call stream (it sent event ids): read it again after `lastEventId`. */
  | { kind: 'target-stream'; requestId: RequestId; lastEventId: string; targetSessionId?: string };

/** Whether and when a waiting call is released (legacy/release-policy.ts decides it). */
export interface ReleaseDecision {
  /** The client is trusted to resume: its stream opens with a priming event (also under `never`). */
  prime: boolean;
  /** A wait is released after `afterMs` (and whenever its client left the stream): trusted, and not `never`. */
  early: boolean;
  /** A wait is released just before the invocation's deadline instead of being cut (-32001). */
  atDeadline: boolean;
}

/**
 * The release decision, made once when the call starts and carried with it, so an instance that takes
 * the call over applies the same policy instead of deciding again (its configuration may differ
 * during a deployment): `now` for the call's first holder, `onceResumed` for every later one — a
 * takeover is a reconnect, so by then the client has shown it resumes.
 */
export interface CarriedRelease {
  now: ReleaseDecision;
  onceResumed: ReleaseDecision;
}

/** Everything the next holder needs besides the session: the call as first relayed, and its step. */
export interface WaitingCallSnapshot {
  call: {
    target: string;
    method: string;
    clientRequestId: RequestId;
    /** The params sent to the target (names already the target's). */
    params: Record<string, unknown>;
    confirm?: { exposedName: string; tool: string };
    /**
     * The progress token the target was given (so its progress keeps reaching the client). The one
     * name left from before "target" named that side: it is stored in waiting-call records, which a
     * deploy meets from the version before.
     */
    upstreamProgressToken?: string;
  };
  step: WaitingStep;
  /** Relayed requests of a 2025 target still waiting for the client (their pending timeouts). */
  relayed: WaitingRequest[];
  /** Every pending record of the call (removed when it ends). */
  records: string[];
  /** Those that carry the holder's lease (asked before the call could be taken over). */
  leased: string[];
  /** The release decision made when the call started (absent in records written before it was carried). */
  release?: CarriedRelease;
}

type WaitingStore = Pick<SessionStore, 'getWaitingCall' | 'swapWaitingCall' | 'deleteWaitingCall'>;

/** What this holder last wrote: a `hold` that would write the same again soon after is skipped. */
interface Written {
  state: WaitingCallRecord['state'];
  snapshot: string;
  at: number;
}

/** A holder's token: compared on every write, so a holder that lost the call never overwrites it. */
function newHolderToken(): string {
  return randomBytes(9).toString('base64url');
}

/** One instance's hold on a waiting call (the holder side of the state machine). */
export class WaitingCall {
  private readonly token = newHolderToken();
  private version: number | undefined;
  /** This holder no longer owns the record (released, finished, or taken over after its lease ran out). */
  private lost = false;
  private written?: Written;
  /**
   * This holder's writes, one after another: each is conditional on the version the previous one
   * wrote, so two at once (a renewal still in flight when the release is written) would refuse the
   * second and make this holder believe it lost the call it still holds.
   */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: WaitingStore,
    private readonly sessionId: string,
    readonly streamId: string,
    /** Epoch seconds the record expires at (the call cannot outlive its pending records nor its session). */
    private readonly expiresAt: () => number,
    /** The gateway's clock: the lease runs on it. */
    private readonly clock: Clock,
    private readonly leaseMs = HOLDER_LEASE_MS,
    /** The record this holder took over (its version); undefined: a call that was never written yet. */
    taken?: WaitingCallRecord,
  ) {
    this.version = taken?.version;
  }

  /** Whether the record exists and is this holder's. */
  get holding(): boolean {
    return this.version !== undefined && !this.lost;
  }

  /**
   * Writes where the call stands, held by this instance with a fresh lease (creating the record when
   * the call first waits). False when another instance owns the call now (this one must let it go).
   * Nothing is written when this holder wrote the same step, held, less than a renewal period
   * (a third of the lease) ago: a reconnect's takeover wrote the record, and the call it goes on with
   * then holds the step it was taken over at — one write, not two. Only `seq` may lag then, which is
   * a lower bound anyway (a takeover reads the stream's log past it); the next renewal writes it. No
   * other instance can have taken the call over meanwhile: the lease written has two thirds to run.
   */
  async hold(snapshot: WaitingCallSnapshot, seq: number): Promise<boolean> {
    const written = this.written;
    if (
      this.holding &&
      written?.state === 'held' &&
      this.clock.now() - written.at < this.leaseMs / 3 &&
      written.snapshot === JSON.stringify(snapshot)
    ) {
      return true;
    }
    return this.write('held', snapshot, seq);
  }

  /** Extends the lease with what was written last (a renewal between steps). */
  async renew(snapshot: WaitingCallSnapshot, seq: number): Promise<boolean> {
    return this.holding ? this.write('held', snapshot, seq) : false;
  }

  /** held → released: no instance holds the call until the client's reconnect takes it over. */
  async release(snapshot: WaitingCallSnapshot, seq: number): Promise<boolean> {
    return this.inTurn(async () => {
      const released = await this.writeNow('released', snapshot, seq);
      this.lost = true;
      return released;
    });
  }

  /** The call is over: the record goes (only while this instance owns it: one conditional delete). */
  async finish(): Promise<void> {
    if (!this.holding) return;
    this.lost = true;
    await this.inTurn(() => this.store.deleteWaitingCall(this.sessionId, this.streamId, this.token));
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const turn = this.writes.then(work);
    this.writes = turn.catch(() => undefined);
    return turn;
  }

  private write(state: WaitingCallRecord['state'], snapshot: WaitingCallSnapshot, seq: number): Promise<boolean> {
    return this.inTurn(() => this.writeNow(state, snapshot, seq));
  }

  private async writeNow(state: WaitingCallRecord['state'], snapshot: WaitingCallSnapshot, seq: number) {
    if (this.lost) return false;
    const at = this.clock.now();
    const next: WaitingCallRecord = {
      streamId: this.streamId,
      version: (this.version ?? 0) + 1,
      state,
      ...(state === 'held' ? { holder: this.token, holderUntil: at + this.leaseMs } : {}),
      seq,
      snapshot: JSON.stringify(snapshot),
      expiresAt: this.expiresAt(),
    };
    const written = await this.store.swapWaitingCall(this.sessionId, next, this.version);
    if (!written) {
      this.lost = true;
      return false;
    }
    this.version = next.version;
    this.written = { state, snapshot: next.snapshot, at };
    return true;
  }
}

/** What a reconnect finds for its stream: nothing to take over, a call another instance holds, or the call, now its own. */
export type TakeOver =
  | { kind: 'none' }
  | { kind: 'held-elsewhere'; holderUntil: number }
  | { kind: 'taken'; waiting: WaitingCall; snapshot: WaitingCallSnapshot; seq: number; record: WaitingCallRecord };

/**
 * The reconnect's side: takes the stream's call over when it is released, or held by an instance
 * whose lease ran out (it died). One conditional write; the loser of a race finds it held elsewhere.
 */
export async function takeOver(
  store: WaitingStore,
  session: Pick<SessionRecord, 'id' | 'expiresAt'>,
  streamId: string,
  options: { clock: Clock; leaseMs?: number },
): Promise<TakeOver> {
  const now = options.clock.now();
  const record = await store.getWaitingCall(session.id, streamId);
  if (!record) return { kind: 'none' };
  if (record.state === 'held' && (record.holderUntil ?? 0) > now) {
    return { kind: 'held-elsewhere', holderUntil: record.holderUntil ?? now };
  }
  const snapshot = JSON.parse(record.snapshot) as WaitingCallSnapshot;
  const waiting = new WaitingCall(
    store,
    session.id,
    streamId,
    () => record.expiresAt,
    options.clock,
    options.leaseMs ?? HOLDER_LEASE_MS,
    record,
  );
  if (!(await waiting.hold(snapshot, record.seq))) {
    return { kind: 'held-elsewhere', holderUntil: now + (options.leaseMs ?? HOLDER_LEASE_MS) };
  }
  return { kind: 'taken', waiting, snapshot, seq: record.seq, record };
}
