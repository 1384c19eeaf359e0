/**
 * Concurrent requests for the same thing share one run of the work that fetches it (single-flight):
 * the first starts it, the others join it until it settles, and the next request after that starts
 * a new one. The run is shared, so it follows none of the waiters' signals (the work bounds itself,
 * e.g. with a timeout of its own): a waiter that goes away stops waiting, and the others keep the run.
 */
export class SingleFlight<T> {
  private readonly running = new Map<string, Promise<T>>();
  /** Runs started (for tests and metrics). */
  started = 0;

  /** What `work` resolves to, run once for every caller of `key` that arrives while it runs. */
  run(key: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    let flight = this.running.get(key);
    if (!flight) {
      this.started++;
      flight = (async () => work())().finally(() => this.running.delete(key));
      flight.catch(() => undefined); // awaited below by whoever still waits
      this.running.set(key, flight);
    }
    return untilAborted(flight, signal);
  }
}

/** `promise`, or the abort of `signal` (with its reason) if that comes first. */
export function untilAborted<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
