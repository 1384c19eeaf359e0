import type { GatewayConfigInput } from '../../lambda/config/schema';
import type { DeferredResponse } from '../../lambda/http/deferred-response';
import { type SseEventLog, SseStream } from '../../lambda/http/sse';
import { CallState, type RelayInput } from '../../lambda/legacy/call-state';
import { releasePolicy } from '../../lambda/legacy/release-policy';
import type { PendingRecord, SessionRecord } from '../../lambda/state/store';
import { FakeClock } from './fake-clock';
import { exchange, legacyDeps, request, storedSession } from './legacy-deps';

/**
 * One relayed call's shared state (legacy/call-state.ts) built over the memory store and a fake clock,
 * for the tests of the parts that work on it (call-state, call-release, call-questions,
 * server-requests, cancellation-watch in test/unit/legacy/).
 */

export interface CallHarness extends Awaited<ReturnType<typeof baseDeps>> {
  call: CallState;
  input: RelayInput;
  renewals: number[];
  recorded: PendingRecord[];
}

async function baseDeps(config: GatewayConfigInput, session: Partial<SessionRecord>, nodeClock = false) {
  const clock = new FakeClock();
  const t = legacyDeps(config, { clock: nodeClock ? undefined : clock });
  const loaded = await storedSession(t.store, session);
  return { ...t, clock, loaded };
}

/** A call of `tools/call` (client id 7) to `demo`, with its deadline `deadlineMs` away on the fake clock. */
export async function callHarness(
  options: {
    config?: GatewayConfigInput;
    session?: Partial<SessionRecord>;
    params?: Record<string, unknown>;
    deadlineMs?: number;
    accept?: { json: boolean; sse: boolean };
    input?: Partial<RelayInput>;
    /**
     * The call on Node's clock (no clock injected): for a part that waits on it regardless (the polls of
     * the gateway's questions, pending/questions.ts); the test fakes it with jest's timers.
     */
    nodeClock?: boolean;
  } = {},
): Promise<CallHarness> {
  const base = await baseDeps(options.config ?? {}, options.session ?? {}, options.nodeClock);
  const params = options.params ?? { name: 'deploy', arguments: {} };
  const input: RelayInput = {
    deps: base.deps,
    loaded: base.loaded,
    caller: undefined as unknown as RelayInput['caller'], // no part under test opens a target through it
    accept: options.accept ?? { json: true, sse: true },
    exchange: exchange(options.deadlineMs ?? 30_000, options.nodeClock ? Date.now() : base.clock.now()),
    request: request(7, 'tools/call', params),
    target: 'demo',
    params,
    responseHeaders: {},
    ...options.input,
  };
  const renewals: number[] = [];
  const recorded: PendingRecord[] = [];
  const call = new CallState(
    input,
    releasePolicy(base.deps.config),
    () => renewals.push(base.clock.now()),
    (record) => recorded.push(record),
  );
  return { ...base, call, input, renewals, recorded };
}

/**
 * The client's side of the call as the parts see it (`call.out`): a stream opened on first use, resumable
 * when given a log; `finished` once the test ends it.
 */
export function clientSide(log?: SseEventLog): { out: DeferredResponse; sse: SseStream } {
  const sse = new SseStream(log ? { log, prime: false } : {});
  const out = {
    stream: () => sse,
    get resumable() {
      return sse.resumable;
    },
    get streaming() {
      return true;
    },
    room: () => undefined,
    flushed: () => sse.flushed(),
  };
  // The parts use only these members of DeferredResponse.
  return { out: out as unknown as DeferredResponse, sse };
}
