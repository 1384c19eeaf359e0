import type { CallEndMarker } from '../state/store';
import type { CallState } from './call-state';

/**
 * A client's cancellation that reached another instance leaves a marker; the target was told
 * there (if its session was known by then), but a target need not end the call's stream, so this
 * invocation looks for the marker while the call runs long (after 1 s, then every 2–5 s: a quick
 * call costs no read), and tells the target again when it stops (a repeat is ignored).
 */
export class CancellationWatch {
  private watching = false;

  constructor(private readonly call: CallState) {}

  /** Starts looking (once per invocation). */
  start(): void {
    if (this.watching) return;
    this.watching = true;
    this.watch(1000);
  }

  private watch(delayMs: number): void {
    this.call.holder.timers.set('cancel-watch', delayMs, () =>
      this.call.holder.tasks.run('looking for a cancellation marker', async () => {
        const marker = await this.cancelledElsewhere();
        if (marker) this.stopFor(marker);
        else if (!this.call.finished && !this.call.endReason) this.watch(Math.min(5000, delayMs + 1000));
      }),
    );
  }

  cancelledElsewhere(): Promise<CallEndMarker | undefined> {
    const { deps, loaded } = this.call.input;
    return deps.store.isCancelled(loaded.session.id, this.call.targetCallId).catch(() => undefined);
  }

  /** A marker another instance wrote: the client cancelled, or the target refused an answer of this call. */
  stopFor(marker: CallEndMarker): void {
    if (marker === 'answer-lost') this.call.stop(marker, 'gateway: an answer could not be delivered');
    else this.call.stop(marker, 'gateway: the client cancelled the call');
  }
}
