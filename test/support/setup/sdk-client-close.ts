import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/**
 * Loaded before each system test file: the official v1 client's transport, closed, schedules no more
 * reconnections. Its `close()` clears only the last reconnection timer it set (a second stream's
 * reconnection overwrites the first's handle), and a reconnection that fails because the transport was
 * closed schedules the next one, backing off up to 30 s. So a test file whose clients were closed kept
 * its jest worker alive for up to half a minute ("a worker process has failed to exit gracefully").
 * The SDK's own fix (clear every reconnection, none after close) is not in the v1 release the
 * project pins; this does the same, for tests only.
 */

type Timer = ReturnType<typeof setTimeout>;

interface TransportInternals {
  _scheduleReconnection(options: unknown, attemptCount?: number): void;
  _reconnectionTimeout?: Timer;
  _abortController?: AbortController;
  close(): Promise<void>;
}

const prototype = StreamableHTTPClientTransport.prototype as unknown as TransportInternals;
const scheduled = new WeakMap<TransportInternals, Set<Timer>>();
const schedule = prototype._scheduleReconnection;
const close = prototype.close;

prototype._scheduleReconnection = function (this: TransportInternals, options, attemptCount) {
  if (this._abortController?.signal.aborted) return; // closed: nothing to reconnect for
  schedule.call(this, options, attemptCount);
  const timer = this._reconnectionTimeout;
  if (timer === undefined) return;
  const timers = scheduled.get(this) ?? new Set<Timer>();
  timers.add(timer);
  scheduled.set(this, timers);
};

prototype.close = function (this: TransportInternals) {
  for (const timer of scheduled.get(this) ?? []) clearTimeout(timer);
  scheduled.delete(this);
  return close.call(this);
};
