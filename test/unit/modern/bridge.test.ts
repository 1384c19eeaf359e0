import { BridgedCall, type BridgeSettings, bridgeFailure, continueBridge } from '../../../lambda/modern/bridge';
import { GatewayError, httpStatusOf } from '../../../lambda/protocol/errors';
import type { JSONRPCResponse } from '../../../lambda/protocol/jsonrpc';
import type { InputRequest, JSONRPCRequest } from '../../../lambda/protocol/types';
import { MessageRejectedError } from '../../../lambda/targets/endpoint';
import type { Targets } from '../../../lambda/targets/targets';
import type { MemorySessionStore } from '../../support/memory-store';
import {
  FAKE_TIMERS,
  type FakeTarget,
  fakeTarget,
  linkOf,
  modernCaller,
  modernDeps,
  QUIET,
  settledOnFakeTimers as settled,
  turnsUntil,
} from '../../support/modern-deps';

/**
 * A 2026-07-28 client's call to a 2025-only target that asks for input (modern/bridge.ts): the holder
 * (A) turns the target's requests into rounds and records what follows each; the retry (B, any
 * instance) delivers the answers once the holder acknowledged its claim and gets the next round or the
 * result — idempotent by round. Against the memory store and a scripted 2025 target; the waits run on
 * jest's fake timers (the retry's side takes no injected clock).
 */

const PENDING_TIMEOUT_S = 300;
const elicit = (id: number, message = `question ${id}`): JSONRPCRequest => ({
  jsonrpc: '2.0',
  id,
  method: 'elicitation/create',
  params: { message, requestedSchema: { type: 'object' } },
});
const ACCEPT = { action: 'accept', content: { ok: true } };

interface Held {
  call: BridgedCall;
  target: FakeTarget;
  store: MemorySessionStore;
  settings: BridgeSettings & { targets: Targets };
  rounds: Array<{ inputRequests: Record<string, InputRequest>; round: number }>;
  abandoned: number;
  failures: unknown[];
}

function held(change: Partial<BridgeSettings> = {}): Held {
  const target = fakeTarget('legacy', { era: 'legacy' });
  const { deps, store } = modernDeps([target]);
  const settings = {
    store,
    logger: QUIET,
    pendingTimeoutSeconds: PENDING_TIMEOUT_S,
    maxOutcomeBytes: 1_000_000,
    maxRequests: 100,
    clock: deps.clock,
    targets: deps.targets,
    ...change,
  };
  const out: Omit<Held, 'call'> = { target, store, settings, rounds: [], abandoned: 0, failures: [] };
  const call = new BridgedCall(settings, {
    targetLink: linkOf(target, modernCaller(deps)),
    clientRequestId: 'client-1',
    emitFirstRound: (inputRequests, round) => out.rounds.push({ inputRequests, round }),
    abandon: () => {
      out.abandoned++;
    },
    fail: (error) => out.failures.push(error),
  });
  // The same object the callbacks count on (`abandoned` is a number).
  return Object.assign(out, { call });
}

/** The first round, as the client got it: its gateway ids, and the bridge round its retry names. */
async function firstRound(h: Held, ...requests: JSONRPCRequest[]) {
  for (const request of requests) h.call.onServerRequest(request);
  await turnsUntil(() => h.rounds.length > 0);
  return { ids: Object.keys(h.rounds[0]!.inputRequests), bridge: { id: h.call.id, round: 2 } };
}

const retry = (h: Held, bridge: { id: string; round: number }, answers: Record<string, Record<string, unknown>>) =>
  continueBridge(h.settings, bridge, answers, Date.now() + 60_000, new AbortController().signal);

const result = (text: string): JSONRPCResponse => ({
  jsonrpc: '2.0',
  id: 0,
  result: { content: [{ type: 'text', text }] },
});

/** Moves jest's fake clock by `ms`, a second at a time, the event loop turning between steps. */
async function advance(ms: number): Promise<void> {
  for (let left = ms; left > 0; left -= 1_000) {
    await jest.advanceTimersByTimeAsync(Math.min(1_000, left));
    await new Promise((resolve) => setImmediate(resolve));
  }
}

beforeEach(() => jest.useFakeTimers(FAKE_TIMERS));
afterEach(() => jest.useRealTimers());

describe('the holding side of a bridged call', () => {
  it('is not bridged before the target asks anything, and a call that ends then leaves nothing', async () => {
    const h = held();
    expect(h.call.bridged).toBe(false);
    await h.call.finish({ response: result('done') });
    expect(h.rounds).toEqual([]);
    expect(await h.store.getPending(h.call.id, `${h.call.id}.n1`)).toBeUndefined();
  });

  it("turns requests that arrive together into one round, keyed by gateway ids, each recorded with the target's session, id and version", async () => {
    const h = held();
    const { ids } = await firstRound(h, elicit(1), elicit(2));
    expect(h.call.bridged).toBe(true);
    expect(h.rounds).toHaveLength(1);
    expect(h.rounds[0]!.round).toBe(1);
    expect(Object.values(h.rounds[0]!.inputRequests)).toEqual([
      { method: 'elicitation/create', params: elicit(1).params },
      { method: 'elicitation/create', params: elicit(2).params },
    ]);
    const records = await Promise.all(ids.map((id) => h.store.getPending(h.call.id, id)));
    expect(records.map((r) => [r?.kind, r?.targetRequestId, r?.targetSessionId, r?.targetProtocolVersion])).toEqual([
      ['relayed', 1, 'legacy-session', '2025-11-25'],
      ['relayed', 2, 'legacy-session', '2025-11-25'],
    ]);
    // The record the retry waits on exists before the client can retry.
    expect(await h.store.getPending(h.call.id, `${h.call.id}.n2`)).toMatchObject({
      kind: 'question',
      status: 'pending',
    });
    await h.call.finish({ error: new Error('test over') });
  });

  it('refuses a round that would pass maxPendingRequestsPerSession at the target, storing nothing of it', async () => {
    const h = held({ maxRequests: 1 });
    h.call.onServerRequest(elicit(1));
    h.call.onServerRequest(elicit(2));
    await turnsUntil(() => h.target.replies.length === 2);
    expect(h.target.replies.map((r) => [r.id, 'error' in r && r.error.data])).toEqual([
      [1, expect.objectContaining({ type: 'TooManyPendingRequests', limit: 1 })],
      [2, expect.objectContaining({ type: 'TooManyPendingRequests', limit: 1 })],
    ]);
    expect(h.rounds).toEqual([]);
    expect(h.call.bridged).toBe(false);
  });

  it('tells the call it failed when a round cannot be recorded (DynamoDB down), and emits nothing', async () => {
    const h = held();
    h.store.down = true;
    h.call.onServerRequest(elicit(1));
    await turnsUntil(() => h.failures.length > 0);
    expect(h.rounds).toEqual([]);
    h.store.down = false;
  });

  it('abandons a round nobody answers within pendingRequestTimeoutSeconds: cancelled at the target, every record removed', async () => {
    const h = held();
    const { ids } = await firstRound(h, elicit(1));
    await advance(PENDING_TIMEOUT_S * 1000 - 1_000);
    expect(h.abandoned).toBe(0);
    await advance(2_000);
    expect(h.abandoned).toBe(1);
    expect(await h.store.getPending(h.call.id, ids[0]!)).toBeUndefined();
    expect(await h.store.getPending(h.call.id, `${h.call.id}.n2`)).toBeUndefined();
  });

  it('writes the outcome again while the store fails, so the retry waiting on it gets it once the store is back', async () => {
    const h = held();
    const { ids, bridge } = await firstRound(h, elicit(1));
    const waiting = retry(h, bridge, {});
    h.store.down = true;
    const finished = h.call.finish({ response: result('kept') });
    await advance(3_000);
    h.store.down = false;
    await settled(finished);
    expect(await settled(waiting)).toEqual({ kind: 'result', response: result('kept') });
    expect(await h.store.getPending(h.call.id, ids[0]!)).toBeUndefined();
  });

  it('records the end of a call that failed: a timeout as RequestTimeout, anything else as DependencyFailed', async () => {
    for (const [error, kind] of [
      [Object.assign(new Error('late'), { name: 'AbortError' }), 'RequestTimeout'],
      [new Error('the target broke'), 'DependencyFailed'],
    ] as const) {
      const h = held();
      const { bridge } = await firstRound(h, elicit(1));
      await h.call.finish({ error });
      const failure = await refusalOf(retry(h, bridge, {}));
      expect(failure.kind).toBe(kind);
      expect(failure.message).toBe(error.message);
    }
  });
});

describe('the holding side of a bridged call, when a later request cannot be asked', () => {
  it('records the missing capability, so the retry is told -32021 with what to declare', async () => {
    const h = held();
    const { bridge } = await firstRound(h, elicit(1));
    const missing = new GatewayError('MissingCapability', 'Missing required client capability: sampling', {
      requiredCapabilities: { sampling: {} },
    });
    await h.call.finish({ error: missing });
    const error = await refusalOf(retry(h, bridge, {}));
    expect([error.kind, httpStatusOf(error), error.message, error.data]).toEqual([
      'MissingCapability',
      400,
      'Missing required client capability: sampling',
      { requiredCapabilities: { sampling: {} } },
    ]);
  });
});

async function refusalOf(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    const payload = await settled(promise);
    // A recorded failure is a payload the retry turns into the client's error.
    return bridgeFailure(payload as Parameters<typeof bridgeFailure>[0]);
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
}

describe("the retry's side of a bridged call", () => {
  /** The target answers each delivered answer by what `next` says: another request, or its result. */
  function continuing(h: Held, next: (answer: unknown) => JSONRPCRequest | JSONRPCResponse) {
    h.target.deliver = async (message) => {
      const step = next(message);
      setImmediate(() => {
        if ('method' in step) h.call.onServerRequest(step);
        else void h.call.finish({ response: step });
      });
    };
  }

  it("delivers the answer under the target's own request id once the holder acknowledged the claim, and returns the result", async () => {
    const h = held();
    const { ids, bridge } = await firstRound(h, elicit(7));
    continuing(h, () => result('thanks'));
    const payload = await settled(retry(h, bridge, { [ids[0]!]: ACCEPT }));
    expect(payload).toEqual({ kind: 'result', response: result('thanks') });
    expect(h.target.delivered).toEqual([{ jsonrpc: '2.0', id: 7, result: ACCEPT }]);
    // The target's requests were answered: their records go; the outcome stays for the same retry.
    expect(await h.store.getPending(h.call.id, ids[0]!)).toBeUndefined();
  });

  it('hands the same retry sent again the same outcome, delivering nothing twice', async () => {
    const h = held();
    const { ids, bridge } = await firstRound(h, elicit(7));
    continuing(h, () => result('thanks'));
    const first = await settled(retry(h, bridge, { [ids[0]!]: ACCEPT }));
    const again = await settled(retry(h, bridge, { [ids[0]!]: ACCEPT }));
    expect(again).toEqual(first);
    expect(h.target.delivered).toHaveLength(1);
  });

  it("returns the target's next request as the next round, whose retry goes on from there", async () => {
    const h = held();
    const { ids, bridge } = await firstRound(h, elicit(1));
    let asked = 0;
    continuing(h, () => (++asked === 1 ? elicit(2, 'and now?') : result('both answered')));
    const next = await settled(retry(h, bridge, { [ids[0]!]: ACCEPT }));
    expect(next.kind).toBe('input');
    const [secondId] = Object.keys(next.inputRequests ?? {});
    expect(next.inputRequests?.[secondId!]).toEqual({
      method: 'elicitation/create',
      params: elicit(2, 'and now?').params,
    });
    const last = await settled(retry(h, { id: h.call.id, round: 3 }, { [secondId!]: ACCEPT }));
    expect(last).toEqual({ kind: 'result', response: result('both answered') });
    expect(h.target.delivered.map((m) => (m as { id: unknown }).id)).toEqual([1, 2]);
  });

  it('refuses a round nothing is recorded for (made up, or expired) as stale: -32602, start again', async () => {
    const h = held();
    const error = await refusalOf(retry(h, { id: 'mrtr-unknown', round: 2 }, {}));
    expect([error.kind, httpStatusOf(error), error.data]).toEqual(['RequestStateRefused', 400, { reason: 'expired' }]);
  });

  it('says the outcome was lost, not to call again, when the answers reached the target but the holder stopped before recording it', async () => {
    const h = held();
    const { ids, bridge } = await firstRound(h, elicit(1));
    h.target.deliver = async () => {
      // The holder is gone: its records with it.
      await h.store.deletePending(h.call.id, [`${h.call.id}.n2`]);
    };
    const error = await refusalOf(retry(h, bridge, { [ids[0]!]: ACCEPT }));
    expect([error.kind, httpStatusOf(error)]).toEqual(['OutcomeLost', 503]);
    expect(error.message).toContain('check before calling it again');
    await h.call.finish({ error: new Error('test over') });
  });

  it('refuses as stale, not as lost, a retry whose answers reached no target (the holder had cleaned up already)', async () => {
    const h = held();
    const { ids, bridge } = await firstRound(h, elicit(1));
    await h.store.deletePending(h.call.id, ids);
    // The round's own record goes too, while the retry waits on it.
    setTimeout(() => void h.store.deletePending(h.call.id, [`${h.call.id}.n2`]), 50);
    const error = await refusalOf(retry(h, bridge, { [ids[0]!]: ACCEPT }));
    expect([error.kind, error.data]).toEqual(['RequestStateRefused', { reason: 'expired' }]);
    expect(h.target.delivered).toEqual([]);
    await h.call.finish({ error: new Error('test over') });
  });

  it('times out waiting for the target after delivering, telling the client to send the same retry again', async () => {
    const h = held();
    const { ids, bridge } = await firstRound(h, elicit(1));
    const error = await refusalOf(
      continueBridge(h.settings, bridge, { [ids[0]!]: ACCEPT }, Date.now() + 5_000, new AbortController().signal),
    );
    expect(error.kind).toBe('RequestTimeout');
    expect(error.message).toContain('send this same retry');
    expect(h.target.delivered).toHaveLength(1);
    await h.call.finish({ error: new Error('test over') });
  });

  it('ends the call when the target refuses the answer: DependencyFailed, and the request expired for the holder to notice', async () => {
    const h = held();
    const { ids, bridge } = await firstRound(h, elicit(1));
    h.target.deliver = async () => {
      throw new MessageRejectedError('legacy', 400);
    };
    const error = await refusalOf(retry(h, bridge, { [ids[0]!]: ACCEPT }));
    expect([error.kind, error.message]).toEqual([
      'DependencyFailed',
      'target legacy: refused the answer; the call was ended',
    ]);
    expect((await h.store.getPending(h.call.id, ids[0]!))?.status).toBe('expired');
    await h.call.finish({ error: new Error('test over') });
  });
});

describe("a bridged call's outcome too large to hand over", () => {
  it('is told to the retry as OutcomeTooLarge (413) when it is the result', async () => {
    const h = held({ maxOutcomeBytes: 1_000 });
    const { ids, bridge } = await firstRound(h, elicit(1));
    h.target.deliver = async () => {
      setImmediate(() => void h.call.finish({ response: result('x'.repeat(2_000)) }));
    };
    const error = await refusalOf(retry(h, bridge, { [ids[0]!]: ACCEPT }));
    expect([error.kind, httpStatusOf(error)]).toEqual(['OutcomeTooLarge', 413]);
    expect(error.message).toContain('maxBridgedOutcomeBytes');
  });

  it('ends the call (it cannot go on without answers) when it is the next round', async () => {
    const h = held({ maxOutcomeBytes: 1_000 });
    const { ids, bridge } = await firstRound(h, elicit(1));
    h.target.deliver = async () => {
      setImmediate(() => h.call.onServerRequest(elicit(2, 'y'.repeat(2_000))));
    };
    const error = await refusalOf(retry(h, bridge, { [ids[0]!]: ACCEPT }));
    expect(error.kind).toBe('OutcomeTooLarge');
    expect(h.failures).toEqual([expect.objectContaining({ kind: 'OutcomeTooLarge' })]);
  });
});

describe("a bridged call's final error for the client", () => {
  it('is the recorded kind and message, DependencyFailed when none was recorded', () => {
    expect(bridgeFailure({ kind: 'error', failure: { kind: 'RequestTimeout', message: 'late' } })).toMatchObject({
      kind: 'RequestTimeout',
      message: 'late',
    });
    expect(bridgeFailure({ kind: 'error' })).toMatchObject({
      kind: 'DependencyFailed',
      message: 'the bridged call failed',
    });
  });
});
