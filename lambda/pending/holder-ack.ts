import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { GatewayError } from '../protocol/errors';
import type { BackgroundTasks } from '../scheduling/background-tasks';
import { poll } from '../scheduling/backoff';
import type { CallTimers } from '../scheduling/call-timers';
import type { Clock } from '../scheduling/clock';
import { HOLDER_ACK_POLL_MS, HOLDER_ACK_WAIT_MS } from '../state/records';
import type { PendingRecord, PendingStore } from '../state/store';

/**
 * No answer reaches a target whose call has no live receiver. The target's next step reaches only the
 * instance that holds the call, and a lease renewed every few seconds still looks alive for its whole
 * length after the holder died. So the holder, which waits anyway, looks at its waiting records: a
 * 2025 answer recorded there it delivers itself (pending/recorded-answer.ts: legacy/answer.ts records,
 * legacy/call-relay.ts delivers); a bridged retry's claim (modern/bridge.ts, both sides) it
 * acknowledges, and only then does the claimant send the answer to the target.
 */

/**
 * The first look after a question: 20 ms, then 40, 80, 160, and every HOLDER_ACK_POLL_MS. An answer
 * given at once (a client that answers by itself) is found within tens of ms; a person's, within
 * HOLDER_ACK_POLL_MS. It costs about 2 reads more per question than looking every HOLDER_ACK_POLL_MS.
 */
const FIRST_LOOK_MS = 20;

/**
 * A question still unanswered after LONG_WAIT_MS is being thought about: the holder then looks every
 * LONG_WAIT_FACTOR × HOLDER_ACK_POLL_MS (1 s), a quarter of the reads and of the CPU while a person
 * thinks (on a Web Function, where many calls wait in one environment, that CPU is what waiting costs),
 * for an answer found up to 0.75 s later after a long think. Still well within HOLDER_ACK_WAIT_MS, so a
 * claim is acknowledged before its claimant gives up.
 */
export const LONG_WAIT_MS = 10_000;
const LONG_WAIT_FACTOR = 4;

/**
 * The holder's side: acknowledges delivery claims on its waiting relayed records until stopped, and
 * hands each answer recorded for it (pending/recorded-answer.ts: the holder delivers) to `onRecorded`.
 * A part of its holder (./holder.ts): its looks run on the holder's timers and tasks, so the holder's
 * stop() waits for a look under way.
 */
export class ClaimAcknowledger {
  /** When the last question was asked (start()): the looks slow down once it has waited LONG_WAIT_MS. */
  private askedAt = 0;
  /** The next look's delay: short right after a question was sent, doubling up to `pollMs`. */
  private interval: number;
  private stopped = false;
  /** Records answered, expired or gone: nothing more to acknowledge, so no more reads. */
  private readonly done = new Set<string>();

  constructor(
    private readonly store: Pick<PendingStore, 'getPending' | 'ackClaim'>,
    private readonly logger: GatewayLogger,
    private readonly partition: string,
    /** The relayed records still waiting for an answer (read at each look). */
    private readonly waiting: () => string[],
    /** The holder's: its clock, its timers (this part's are named `ack:…`) and its tasks. */
    private readonly owner: { clock: Clock; timers: CallTimers; tasks: BackgroundTasks },
    private readonly pollMs = HOLDER_ACK_POLL_MS,
    /** An answer recorded in one of the records (once per record). */
    private readonly onRecorded?: (record: PendingRecord) => void,
  ) {
    this.interval = Math.min(FIRST_LOOK_MS, pollMs);
  }

  private now(): number {
    return this.owner.clock.now();
  }

  /**
   * Starts looking, soon (a question was just sent: a quick answer is found quickly); again for each
   * question: a look a second away (a long wait) is brought forward.
   */
  start(): void {
    if (this.stopped) return;
    this.interval = Math.min(FIRST_LOOK_MS, this.pollMs);
    this.askedAt = this.now();
    this.schedule(); // replaces the look already scheduled (CallTimers: one timer per name)
  }

  stop(): void {
    this.stopped = true;
    this.owner.timers.clear(LOOK_TIMER);
  }

  private schedule(): void {
    const delay = this.interval;
    const longWait = this.now() - this.askedAt >= LONG_WAIT_MS;
    this.interval = Math.min(this.pollMs * (longWait ? LONG_WAIT_FACTOR : 1), this.interval * 2);
    this.owner.timers.set(LOOK_TIMER, delay, () =>
      this.owner.tasks.run('acknowledging delivery claims', async () => {
        try {
          await this.look();
        } finally {
          if (!this.stopped) this.schedule();
        }
      }),
    );
  }

  private async look(): Promise<void> {
    const ids = this.waiting().filter((id) => !this.done.has(id));
    await Promise.all(
      ids.map(async (id) => {
        try {
          const record = await this.store.getPending(this.partition, id);
          if (!record || record.status === 'answered' || record.status === 'expired') this.done.add(id);
          else if (record.status === 'recorded') {
            this.done.add(id);
            this.onRecorded?.(record);
          } else if (record.status === 'delivering' && record.claim && record.ack !== record.claim) {
            await this.store.ackClaim(this.partition, id, record.claim);
          }
        } catch (error) {
          // A claimant that gets no acknowledgement releases its claim: the client sends the answer again.
          this.logger.warn('acknowledging a delivery claim failed', { error: describeError(error) });
        }
      }),
    );
  }
}

const LOOK_TIMER = 'ack:look';

/** Between looks of the claimant for the holder's acknowledgement. */
const ACK_CHECK_MS = 100;

/**
 * The claimant's side: whether the holder acknowledged `token` within `waitMs`. False means the
 * holder is gone (or too slow to tell): the caller releases the claim and delivers nothing.
 */
export async function holderAcknowledged(
  store: Pick<PendingStore, 'getPending'>,
  partition: string,
  gatewayId: string,
  token: string,
  clock: Clock,
  waitMs = HOLDER_ACK_WAIT_MS,
): Promise<boolean> {
  const polled = await poll(
    async () => {
      const record = await store.getPending(partition, gatewayId).catch(() => undefined);
      if (record?.ack === token) return true;
      // Its holder released the call meanwhile (legacy/waiting-call.ts): the target answers on a stream
      // that is read again on the client's reconnect, so the answer needs no live holder.
      if (record?.claim === token && record.holderUntil === undefined) return true;
      return record?.claim !== token ? false : undefined;
    },
    { firstMs: ACK_CHECK_MS },
    { until: clock.now() + waitMs, clock },
  );
  return 'value' in polled && polled.value;
}

/** The holder did not acknowledge the claim in time: nothing was delivered (the same answer may be sent again). */
export function holderSilent(target: string): GatewayError {
  return new GatewayError(
    'AnswerNotDelivered',
    `DependencyFailedException: the gateway instance holding the call did not confirm it is still there; the answer was not delivered to target ${target} — send it again (once the call is no longer held, it is refused)`,
    { target },
  );
}
