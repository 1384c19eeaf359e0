import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import type { BackgroundTasks } from '../scheduling/background-tasks';
import type { CallTimers } from '../scheduling/call-timers';
import type { Clock } from '../scheduling/clock';
import { HOLDER_LEASE_MS, HOLDER_RENEW_MS } from '../state/records';
import type { PendingStore } from '../state/store';

/**
 * The holder's lease on its waiting records (PendingRecord.holderUntil), renewed while it holds the
 * call, so an instance that receives an answer knows the call is still held, and a holder that died
 * stops being answered within the lease. Used by both era paths (legacy/call-relay.ts,
 * modern/bridge.ts). One timer: every `renewMs` it renews the records `ids()` names at that moment
 * (the set changes as the call asks more), after `beforeRenew` (the legacy relay renews its waiting
 * call's record there); the next renewal is scheduled only once this one settled, so a slow DynamoDB
 * never stacks requests. Stopped once (the call is over or released), it never starts again.
 *
 * A part of its holder (./holder.ts): its timer and its renewals run on the holder's timers and tasks,
 * so the holder's stop() waits for a renewal under way as for anything else the call started.
 */
export class HolderLease {
  private started = false;
  private stopped = false;

  constructor(
    private readonly store: Pick<PendingStore, 'renewHolder'>,
    private readonly logger: GatewayLogger,
    private readonly partition: string,
    /** The records whose lease is renewed (read at each renewal; none: no request). */
    private readonly ids: () => string[],
    /** The holder's: its clock, its timers (this part's are named `lease:…`) and its tasks. */
    private readonly owner: { clock: Clock; timers: CallTimers; tasks: BackgroundTasks },
    private readonly options: {
      /** Runs at each renewal, before the records' lease (its work runs as the holder's tasks). */
      beforeRenew?: () => void;
      /** Added to the log lines (which call). */
      context?: Record<string, unknown>;
      renewMs?: number;
      leaseMs?: number;
    } = {},
  ) {}

  /** Starts renewing (again: idempotent; after stop(), nothing). */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    this.owner.timers.clear(RENEW_TIMER);
  }

  private schedule(): void {
    this.owner.timers.set(RENEW_TIMER, this.options.renewMs ?? HOLDER_RENEW_MS, () =>
      this.owner.tasks.run('renewing the holder lease', () => this.renew()),
    );
  }

  /** Renews the records' lease now, without waiting for the timer (a reconnect holding records again). */
  async renewNow(): Promise<void> {
    if (!this.stopped) await this.renewRecords();
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    this.options.beforeRenew?.();
    await this.renewRecords();
    if (!this.stopped) this.schedule();
  }

  private async renewRecords(): Promise<void> {
    const ids = this.ids();
    const until = this.owner.clock.now() + (this.options.leaseMs ?? HOLDER_LEASE_MS);
    try {
      if (ids.length > 0) await this.store.renewHolder(this.partition, ids, until);
    } catch (error) {
      // The next renewal tries again; until then the lease still runs (a third of it has passed).
      this.logger.warn('renewing the holder lease failed', { ...this.options.context, error: describeError(error) });
    }
  }
}

const RENEW_TIMER = 'lease:renew';
