import { ProgressMapper } from '../calls/progress-tokens';
import type { DeferredResponse } from '../http/deferred-response';
import type { ExchangeContext } from '../http/exchange';
import type { AcceptPreference } from '../http/responses';
import type { SseStream } from '../http/sse';
import { describeError } from '../observability/logger';
import { Holder } from '../pending/holder';
import type { JSONRPCRequest, ProgressToken, RequestId } from '../protocol/types';
import { withoutHolder } from '../state/records';
import type { CallEndReason, LoadedSession, PendingRecord } from '../state/store';
import type { StreamCursor } from '../targets/sse-reader';
import type { Caller, TargetLink } from '../targets/target-link';
import type { LegacyDeps } from './deps';
import { targetCallIdOf } from './ids';
import { decideCarriedRelease, type ReleaseDecision, type ReleasePolicy } from './release-policy';
import type { StreamLog } from './stream-log';
import type { CarriedRelease, WaitingCall, WaitingCallSnapshot } from './waiting-call';

export interface RelayInput {
  deps: LegacyDeps;
  loaded: LoadedSession;
  caller: Caller;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  /** The client's request as received. */
  request: JSONRPCRequest;
  target: string;
  /** The params to send to the target (names already mapped to the target's own). */
  params: Record<string, unknown>;
  responseHeaders: Record<string, string>;
  /** confirmTools: ask the user before forwarding (the name the client called, the target's tool). */
  confirm?: { exposedName: string; tool: string };
  /**
   * Going on with a call another invocation released (or whose holder died), taken over by the
   * client's reconnect (legacy/resume.ts): the reconnect's stream, and where the call stands.
   */
  resumed?: { waiting: WaitingCall; snapshot: WaitingCallSnapshot; stream: SseStream };
  /** A call started before its session's read returned (read-ahead): rejects when the session is gone. */
  sessionRead?: Promise<void>;
}

/** forward() let go of the call: its stream is to be released (the record written by run()). */
export const RELEASED = Symbol('released');

/**
 * What the parts of one relayed call share (legacy/call-relay.ts runs them): the call's input, where
 * it stands, its records, and its holder (pending/holder.ts: the lease, the looks, the pending
 * timeouts, every timer and background task of the call, stopped once when the call ends).
 */
export class CallState {
  readonly targetCallId: string;
  readonly targetAbort = new AbortController();
  /** The target's requests relayed to the client, still waiting (each with a timer `pending:<gatewayId>`). */
  readonly relayed = new Map<string, { method: string; askedAt: number }>();
  /** Its questions (confirmations, input rounds: pending/questions.ts), removed with the others. */
  readonly questions: string[] = [];
  /** Relayed records whose recorded answer this holder delivered (no longer waiting; removed with the others). */
  readonly delivered: string[] = [];
  /** Relayed records whose recorded answer this holder is delivering now. */
  readonly delivering = new Set<string>();
  /** Stops the deliveries of recorded answers once the call is over (however it ended). */
  readonly callOver = new AbortController();
  /** The log of the stream this relay opened (records of relayed requests are written with their events). */
  streamLog?: StreamLog;
  /** The call's pending records the stream's end removes (its log is this relay's: see the relay's cleanup). */
  goWithTheEnd?: string[];
  /** The stream's log was opened by this relay, with `removedWithTheEnd` (not a reconnect's). */
  logRemovesPending = false;
  readonly progress: ProgressMapper;
  targetLink?: TargetLink;
  /**
   * Events reach the client in the order the target sent them, each after its pending record is
   * stored — and none before the session's read when the call started ahead of it (read-ahead): what
   * reaches the client (its stream's priming, the release decision) goes by what that read found.
   */
  queue: Promise<void>;
  out?: DeferredResponse;
  finished = false;
  endReason?: CallEndReason;
  /**
   * This invocation's hold on the call (pending/holder.ts): while the call has records waiting for
   * the client, their lease is renewed and they are looked at; its timers and background work.
   */
  readonly holder: Holder;
  /** What the call is doing: waiting for answers to its questions, or reading the target (`currentTargetCallId`). */
  phase: 'question-wait' | 'target' | 'other' = 'other';
  currentTargetCallId?: RequestId;
  /** The target stream's last event id and `retry` (a 2025 target's stream can be resumed from it). */
  readonly cursor: StreamCursor = {};
  /** The call is being let go of (legacy/call-release.ts). */
  releasing = false;
  readonly policy: ReleasePolicy;
  private decided?: CarriedRelease;
  /** The call's records that carry this holder's lease (the others need none: see withHolder). */
  readonly leased = new Set<string>();
  /**
   * Relayed records known to be stored. The holder looks only at these: a record still being written
   * (with its event, legacy/stream-log.ts) would look gone, and a gone record is not looked at again.
   */
  readonly stored = new Set<string>();

  constructor(
    readonly input: RelayInput,
    policy: ReleasePolicy,
    /** At each renewal of the holder lease (the waiting call's record is renewed with it). */
    beforeRenew: () => void,
    /** An answer recorded for this holder (pending/recorded-answer.ts: the holder delivers it). */
    onRecorded: (record: PendingRecord) => void,
  ) {
    this.targetCallId = targetCallIdOf(input.request.id);
    this.holder = new Holder({
      store: input.deps.store,
      logger: input.deps.logger,
      partition: input.loaded.session.id,
      context: this.logKeys,
      leased: () => [...this.leased],
      looked: () => [...this.relayed.keys()].filter((id) => this.leased.has(id) && this.stored.has(id)),
      onRecorded,
      beforeRenew,
      clock: input.deps.clock,
    });
    this.progress = new ProgressMapper(
      (input.params._meta as { progressToken?: ProgressToken } | undefined)?.progressToken,
      input.resumed?.snapshot.call.upstreamProgressToken,
    );
    this.policy = policy;
    this.queue = input.sessionRead?.catch(() => undefined) ?? Promise.resolve();
  }

  /**
   * Whether and when this call may be released (legacy/release-policy.ts), decided once, when first
   * needed: a call started ahead of its session's read (read-ahead) decides by what that read found.
   */
  get decision(): ReleaseDecision {
    const carried = this.release;
    return this.input.resumed ? carried.onceResumed : carried.now;
  }

  /**
   * The decision as carried with the call (legacy/waiting-call.ts): made when the call started; a
   * takeover goes on with what it carries (records written before it was carried: decided here).
   */
  get release(): CarriedRelease {
    this.decided ??=
      this.input.resumed?.snapshot.release ?? decideCarriedRelease(this.policy, this.input.loaded.session);
    return this.decided;
  }

  private get logKeys() {
    const { loaded, target, request } = this.input;
    return { sessionId: loaded.session.id, target, method: request.method };
  }

  get log() {
    const { deps } = this.input;
    const keys = this.logKeys;
    return {
      debug: (message: string, extra: object = {}) => deps.logger.debug(message, { ...keys, ...extra }),
      info: (message: string, extra: object = {}) => deps.logger.info(message, { ...keys, ...extra }),
      warn: (message: string, extra: object = {}) => deps.logger.warn(message, { ...keys, ...extra }),
    };
  }

  /** The client's stream, opened on first use; undefined when the client cannot take one or the call is over. */
  stream(): SseStream | undefined {
    return this.finished ? undefined : this.out?.stream();
  }

  enqueue(task: () => Promise<void>): void {
    this.queue = this.queue
      .then(task)
      .catch((error) => this.log.warn('relaying a target message failed', { error: describeError(error) }));
  }

  /** Ends the call early: the target is told (by its target link, on abort), the pending records go. */
  stop(reason: CallEndReason, abortReason: unknown = `gateway: ${reason}`): void {
    if (this.finished || this.endReason) return;
    // A release under way outlives the deadline by its last writes: cancelling now would end a call it hands on.
    if (reason === 'deadline' && this.releasing) return;
    this.endReason = reason;
    if (reason === 'client-cancelled') this.log.info('the client cancelled the call');
    else this.log.info('relayed call stopped', { reason });
    this.targetAbort.abort(abortReason);
  }

  /**
   * A record of a call that can be taken over (a resumable client stream of a client trusted to
   * resume, and nothing at the target that only this invocation could read: `resumableTarget`) needs no
   * live holder: if this instance dies, the client's reconnect takes the call over, so an answer is
   * stored or delivered regardless. Any other record carries the holder's lease (state/records.ts): a
   * client that may never reconnect is told its answer came too late rather than have it taken for
   * nobody.
   */
  withHolder(record: PendingRecord, resumableTarget: boolean): PendingRecord {
    const takeoverable = resumableTarget && this.out?.resumable === true && this.decision.early;
    if (!takeoverable) {
      this.leased.add(record.gatewayId);
      return record;
    }
    return withoutHolder(record);
  }

  pendingIds(): string[] {
    return [...this.relayed.keys(), ...this.questions, ...this.delivered];
  }

  useStreamLog(log: StreamLog): StreamLog {
    this.streamLog = log;
    return log;
  }

  /** For the stream log this relay opens: the pending records its end removes (read when it ends). */
  removedWithTheEnd(): () => string[] {
    this.logRemovesPending = true;
    return () => this.goWithTheEnd ?? [];
  }
}
