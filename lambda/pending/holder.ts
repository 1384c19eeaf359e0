import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { BackgroundTasks } from '../scheduling/background-tasks';
import { CallTimers } from '../scheduling/call-timers';
import type { Clock } from '../scheduling/clock';
import { HOLDER_ACK_POLL_MS } from '../state/records';
import type { PendingRecord, PendingStore } from '../state/store';
import { ClaimAcknowledger } from './holder-ack';
import { HolderLease } from './holder-lease';
import { endsTheCall, type PendingVerdict, pendingTimeUp } from './pending-verdict';

/**
 * The holder: the invocation that owns a call waiting for the client's answers, the same for both
 * eras (a 2025 session's relayed call, legacy/call-relay.ts; a 2026-07-28 client's call bridged to a
 * 2025 target, modern/bridge.ts). What it owns besides the call's own flow:
 * - the lease on its waiting records (holder-lease.ts), so an instance that receives an answer knows
 *   the call is still held, and a holder that died stops being answered;
 * - its looks at those records (holder-ack.ts): an answer recorded for it, a delivery claim to acknowledge;
 * - each waiting request's pending timeout, and the verdict when it is up (pending-verdict.ts);
 * - its timers by name and the work it starts unawaited.
 * All on one clock (tests inject a fake one), one set of timers and one set of tasks — the lease's
 * renewals and the acknowledger's looks included — and one stop: halt() (nothing fires or starts any
 * more) and drain() (what runs has ended, whichever part started it), so on Lambda nothing of the call
 * outlives its response.
 */

export interface HolderSettings {
  store: Pick<PendingStore, 'renewHolder' | 'getPending' | 'ackClaim' | 'expirePending'>;
  logger: GatewayLogger;
  /** The records' partition: the session (2025) or the bridged call (2026-07-28 client). */
  partition: string;
  /** Added to every log line of the holder (which call). */
  context: Record<string, unknown>;
  /** The records whose lease is renewed (read at each renewal). */
  leased: () => string[];
  /** The relayed records looked at for claims and recorded answers (read at each look). */
  looked: () => string[];
  /** An answer recorded for this holder (recorded-answer.ts): the holder delivers it. */
  onRecorded?: (record: PendingRecord) => void;
  /** At each lease renewal (a 2025 call renews its waiting-call record with it). */
  beforeRenew?: () => void;
  /** The gateway's clock: the lease, the looks and every timer of the holder. */
  clock: Clock;
  leaseMs?: number;
  renewMs?: number;
  lookMs?: number;
}

/** What the owner of a watched request decides, and how the watch tells it. */
export interface PendingWatch {
  /** Whether the request is still waited for (the call not over, no answer delivered); a look at one that is not passes it over. */
  waiting(gatewayId: string): boolean;
  /** A recorded answer this holder is delivering and the target did not take in time: the call ends. */
  delivering?(gatewayId: string): boolean;
  /** Their time is up and one of them ends the call (the verdict that did; 'delivering': see above). */
  timeUp(gatewayId: string, verdict: PendingVerdict | { kind: 'delivering' }): void | Promise<void>;
  /** Runs a look (default: at once; the bridge runs it in its queue, after what it records). */
  inTurn?(look: () => Promise<void>): Promise<void>;
}

export class Holder {
  readonly clock: Clock;
  /** Every timer of the call, by name: closed by halt(). */
  readonly timers: CallTimers;
  /** Work the call starts without awaiting it: failures logged once, drained by drain(). */
  readonly tasks: BackgroundTasks;
  readonly lease: HolderLease;
  readonly acknowledger: ClaimAcknowledger;
  private halted = false;

  constructor(private readonly settings: HolderSettings) {
    this.clock = settings.clock;
    this.timers = new CallTimers(this.clock);
    this.tasks = new BackgroundTasks(settings.logger, settings.context);
    // Its parts run on its clock, timers and tasks: one stop() ends and waits for all of them.
    const owner = { clock: this.clock, timers: this.timers, tasks: this.tasks };
    this.lease = new HolderLease(settings.store, settings.logger, settings.partition, settings.leased, owner, {
      beforeRenew: settings.beforeRenew,
      context: settings.context,
      renewMs: settings.renewMs,
      leaseMs: settings.leaseMs,
    });
    this.acknowledger = new ClaimAcknowledger(
      settings.store,
      settings.logger,
      settings.partition,
      settings.looked,
      owner,
      settings.lookMs ?? HOLDER_ACK_POLL_MS,
      settings.onRecorded,
    );
  }

  get stopped(): boolean {
    return this.halted;
  }

  /**
   * A request was asked and its record stored: the lease runs from now on, and the holder looks at
   * its records (soon: a quick answer is found quickly) when the record carries its lease.
   */
  asked(leased: boolean): void {
    if (this.halted) return;
    this.lease.start();
    if (leased) this.acknowledger.start();
  }

  /**
   * After `ms`, decides whether the requests' time is up (pendingTimeUp, one per request): answered
   * ones let the call go on, an answer recorded for this holder is handed to `onRecorded`, a delivery
   * in flight or DynamoDB failing is looked at again (the soonest `afterMs`), and the first that ends
   * the call is told to `watch.timeUp`. One watch per `name` (setting it again replaces it).
   */
  watchPending(name: string, gatewayIds: string[], ms: number, watch: PendingWatch): void {
    this.timers.set(name, ms, () =>
      this.tasks.run('looking at a timed-out pending request', () =>
        (watch.inTurn ?? ((look) => look()))(() => this.lookAtPending(name, gatewayIds, watch)),
      ),
    );
  }

  private async lookAtPending(name: string, gatewayIds: string[], watch: PendingWatch): Promise<void> {
    let recheckMs: number | undefined;
    for (const gatewayId of gatewayIds) {
      if (this.halted) return;
      if (!watch.waiting(gatewayId)) continue;
      if (watch.delivering?.(gatewayId)) return watch.timeUp(gatewayId, { kind: 'delivering' });
      const verdict = await pendingTimeUp(this.settings.store, this.settings.partition, gatewayId, {
        clock: this.clock,
      });
      if (endsTheCall(verdict)) return watch.timeUp(gatewayId, verdict);
      if (verdict.kind !== 'undecided') continue; // answered: the target carries on
      // An answer recorded for this holder that no look handed over: delivered now, not waited for.
      if (verdict.recorded) this.settings.onRecorded?.(verdict.recorded);
      if (verdict.error !== undefined) {
        this.settings.logger.warn('pending timeout undecided: DynamoDB failed; looking again', {
          ...this.settings.context,
          error: describeError(verdict.error),
        });
      }
      recheckMs = Math.min(recheckMs ?? verdict.afterMs, verdict.afterMs);
    }
    if (recheckMs !== undefined && !this.halted) this.watchPending(name, gatewayIds, recheckMs, watch);
  }

  /** Nothing of the holder fires or starts any more: no renewal, look, pending timeout or timer. */
  halt(): void {
    this.halted = true;
    this.acknowledger.stop();
    this.lease.stop();
    this.timers.close();
  }

  /** Resolves once the work the holder started has ended (including work started while waiting). */
  drain(): Promise<void> {
    return this.tasks.drain();
  }

  /** halt(), then drain(): the one way a holder stops. */
  async stop(): Promise<void> {
    this.halt();
    await this.drain();
  }
}
