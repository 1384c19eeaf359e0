import { CallRelease } from '../../../lambda/legacy/call-release';
import { ServerRequests } from '../../../lambda/legacy/server-requests';
import { openStreamLog } from '../../../lambda/legacy/stream-log';
import type { JSONRPCRequest } from '../../../lambda/protocol/types';
import { systemClock } from '../../../lambda/scheduling/clock';
import type { PendingRecord } from '../../../lambda/state/store';
import { MessageRejectedError } from '../../../lambda/targets/endpoint';
import { type CallHarness, callHarness, clientSide } from '../../support/call-harness';
import { QUIET } from '../../support/in-process';
import { ScriptedLink } from '../../support/legacy-deps';
import { SseText } from '../../support/sse-text';

/**
 * What a target sends for a call besides its response (legacy/server-requests.ts): its requests to
 * the client — recorded as pending before they are sent (with the event that asks them on a resumable
 * stream), refused at the target when the client cannot take them or they cannot be recorded, ended
 * by their pending timeout — and its notifications (progress under the client's own token).
 */

const elicitation = (id: number | string = 5): JSONRPCRequest => ({
  jsonrpc: '2.0',
  id,
  method: 'elicitation/create',
  params: { mode: 'form', message: 'Proceed?', requestedSchema: { type: 'object', properties: {} } },
});

async function setUp(options: Parameters<typeof callHarness>[0] & { resumable?: boolean } = {}) {
  const h = await callHarness({
    config: { pendingRequestTimeoutSeconds: 60, ...options.config },
    ...options,
  });
  const link = new ScriptedLink('demo', async () => ({ jsonrpc: '2.0', id: 0, result: {} }));
  h.call.targetLink = link;
  // A resumable stream's log is the relay's own (call-relay.ts opens it and hands it to the call).
  const log = options.resumable
    ? h.call.useStreamLog(
        openStreamLog(
          h.store,
          h.loaded.session,
          { ttlSeconds: 600, retainSeconds: 60, maxBytes: 100_000, clock: systemClock },
          QUIET,
        ),
      )
    : undefined;
  const side = clientSide(log);
  h.call.out = side.out;
  const release = new CallRelease(h.call);
  const requests = new ServerRequests(h.call, release);
  const text = new SseText(side.sse.response());
  return { ...h, link, sse: side.sse, text, release, requests };
}

/** Ends what the call started on the fake clock (the test is over). */
async function over(h: CallHarness): Promise<void> {
  h.call.finished = true;
  await h.call.holder.stop();
}

describe("a target's request during a call", () => {
  it('is recorded before it is sent, under a fresh gateway id; the target waits with its own id', async () => {
    const h = await setUp();
    const puts = jest.spyOn(h.store, 'putPending');
    await h.requests.onServerRequest(elicitation(5));
    await h.text.until((t) => t.includes('elicitation/create'));
    const [sent] = h.text.messages();
    const gatewayId = sent!.id as string;
    expect(gatewayId).toMatch(/^gw-H/); // held by this call: its answer is recorded for the holder
    expect(puts).toHaveBeenCalledTimes(1);
    expect(await h.store.getPending(h.loaded.session.id, gatewayId)).toMatchObject({
      kind: 'relayed',
      target: 'demo',
      targetRequestId: 5,
      targetSessionId: 'demo-session',
      clientRequestId: 7,
      principal: 'alice',
    });
    expect(h.call.relayed.get(gatewayId)?.method).toBe('elicitation/create');
    expect(h.call.leased.has(gatewayId)).toBe(true);
    expect(h.link.replies).toEqual([]);
    await over(h);
  });

  it('on a resumable stream rides with the event that asks it: one batch write, no PutItem of its own', async () => {
    const h = await setUp({ resumable: true });
    const puts = jest.spyOn(h.store, 'putPending');
    const batches = jest.spyOn(h.store, 'putStreamEvents');
    await h.requests.onServerRequest(elicitation(5));
    await h.text.until((t) => t.includes('elicitation/create'));
    expect(puts).not.toHaveBeenCalled();
    expect(batches).toHaveBeenCalledTimes(1);
    expect(batches.mock.calls[0]![2]).toHaveLength(1);
    await h.sse.flushed();
    expect(h.call.stored.has(batches.mock.calls[0]![2]![0]!.gatewayId)).toBe(true);
    await over(h);
  });

  it('that the client did not declare is refused at the target (-32601); nothing recorded or sent', async () => {
    const h = await setUp();
    await h.requests.onServerRequest({ jsonrpc: '2.0', id: 6, method: 'roots/list', params: {} });
    expect(h.link.replies).toEqual([
      expect.objectContaining({ id: 6, error: expect.objectContaining({ code: -32601 }) }),
    ]);
    expect(await h.store.countPending(h.loaded.session.id, 100)).toBe(0);
    expect(h.call.relayed.size).toBe(0);
    await over(h);
  });

  it('after the call finished is refused at the target', async () => {
    const h = await setUp();
    h.call.finished = true;
    await h.requests.onServerRequest(elicitation(8));
    expect(h.link.replies).toEqual([
      expect.objectContaining({ id: 8, error: expect.objectContaining({ code: -32601 }) }),
    ]);
    await over(h);
  });

  it("past the session's cap (the count its read took plus what the call asked since) is refused at the target", async () => {
    const h = await setUp({ config: { maxPendingRequestsPerSession: 2 } });
    h.loaded.pendingCount = 1;
    const counts = jest.spyOn(h.store, 'countPending');
    await h.requests.onServerRequest(elicitation(1));
    await h.requests.onServerRequest(elicitation(2));
    expect(h.link.replies).toEqual([
      expect.objectContaining({
        id: 2,
        error: expect.objectContaining({ data: expect.objectContaining({ type: 'TooManyPendingRequests', limit: 2 }) }),
      }),
    ]);
    expect(counts).not.toHaveBeenCalled(); // the read's count, no Query of its own
    await over(h);
  });

  it('whose record cannot be written is refused at the target, so the client is never asked what it could not answer', async () => {
    const h = await setUp();
    h.store.down = true;
    await h.requests.onServerRequest(elicitation(4));
    expect(h.link.replies).toEqual([
      expect.objectContaining({
        id: 4,
        error: expect.objectContaining({ code: -32603, message: expect.stringContaining('could not relay') }),
      }),
    ]);
    expect(h.call.relayed.size).toBe(0);
    await over(h);
  });

  it('whose record could not ride with its event is not sent, and the target is refused', async () => {
    const h = await setUp({ resumable: true });
    jest.spyOn(h.store, 'putStreamEvents').mockRejectedValue(new Error('DynamoDB is down'));
    await h.requests.onServerRequest(elicitation(9));
    await h.sse.flushed();
    await h.call.holder.drain();
    h.sse.close();
    expect(await h.text.all()).not.toContain('elicitation/create');
    expect(h.link.replies).toEqual([
      expect.objectContaining({ id: 9, error: expect.objectContaining({ code: -32603 }) }),
    ]);
    expect(h.call.relayed.size).toBe(0);
    await over(h);
  });

  it('nobody answers by pendingRequestTimeoutSeconds: the call ends (pending-timeout), not a moment before', async () => {
    const h = await setUp();
    await h.requests.onServerRequest(elicitation(5));
    await h.clock.advance(59_999);
    expect(h.call.endReason).toBeUndefined();
    await h.clock.advance(1);
    expect(h.call.endReason).toBe('pending-timeout');
    await over(h);
  });

  it('answered in time (the target took it), the call goes on past the pending timeout', async () => {
    const h = await setUp();
    await h.requests.onServerRequest(elicitation(5));
    const [gatewayId] = h.call.relayed.keys();
    const token = await h.store.claimPending(h.loaded.session.id, gatewayId!);
    await h.store.ackClaim(h.loaded.session.id, gatewayId!, token!);
    await h.store.settleClaim(h.loaded.session.id, gatewayId!, token!);
    await h.clock.advance(61_000);
    expect(h.call.endReason).toBeUndefined();
    await over(h);
  });

  it("of a legacy target's call: the call now waits for the client, and its step says where to read the target again", async () => {
    const h = await setUp();
    h.call.currentTargetCallId = 'c.n.7';
    h.call.cursor.lastEventId = 'target-event-3';
    await h.requests.onServerRequest(elicitation(5));
    expect(h.release.step).toEqual({
      kind: 'target-stream',
      requestId: 'c.n.7',
      lastEventId: 'target-event-3',
      targetSessionId: 'demo-session',
    });
    await over(h);
  });
});

describe("a target's notification during a call", () => {
  it("is relayed; its progress under the client's own token, another call's progress dropped", async () => {
    const h = await setUp({ params: { name: 'deploy', _meta: { progressToken: 'mine' } } });
    const own = h.call.progress.targetToken!;
    h.requests.onNotification({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { progressToken: 'someone-else', progress: 1 },
    });
    h.requests.onNotification({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { progressToken: own, progress: 2 },
    });
    h.requests.onNotification({
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { level: 'info', data: 'x' },
    });
    h.sse.close();
    await h.text.all();
    expect(h.text.messages()).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'mine', progress: 2 } },
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } },
    ]);
    expect(h.noticed.map((n) => n.method)).toEqual([
      'notifications/progress',
      'notifications/progress',
      'notifications/message',
    ]);
    await over(h);
  });
});

describe('an answer recorded for this holder', () => {
  async function asked() {
    const h = await setUp();
    await h.requests.onServerRequest(elicitation(5));
    const [gatewayId] = h.call.relayed.keys();
    await h.store.recordAnswer(h.loaded.session.id, gatewayId!, JSON.stringify({ result: { action: 'accept' } }));
    const record = (await h.store.getPending(h.loaded.session.id, gatewayId!)) as PendingRecord;
    return { ...h, gatewayId: gatewayId!, record };
  }

  it("is delivered to the target with the target's id: no longer waiting, removed with the call's others", async () => {
    const h = await asked();
    await h.requests.deliverRecorded(h.record);
    expect(h.fake.delivered.map((d) => d.message)).toEqual([{ jsonrpc: '2.0', id: 5, result: { action: 'accept' } }]);
    expect(h.call.relayed.has(h.gatewayId)).toBe(false);
    expect(h.call.delivered).toEqual([h.gatewayId]);
    expect(h.call.pendingIds()).toEqual([h.gatewayId]);
    // Its pending timeout no longer ends the call.
    await h.clock.advance(61_000);
    expect(h.call.endReason).toBeUndefined();
    await over(h);
  });

  it('refused by the target (4xx), ends the call: answer-lost', async () => {
    const h = await asked();
    h.fake.failDeliver = new MessageRejectedError('demo', 404);
    await h.requests.deliverRecorded(h.record);
    expect(h.call.endReason).toBe('answer-lost');
    await over(h);
  });

  it('is left to whoever takes the call over while it is being released, and delivered once when asked twice', async () => {
    const h = await asked();
    h.call.releasing = true;
    await h.requests.deliverRecorded(h.record);
    expect(h.fake.delivered).toEqual([]);
    h.call.releasing = false;
    await Promise.all([h.requests.deliverRecorded(h.record), h.requests.deliverRecorded(h.record)]);
    expect(h.fake.delivered).toHaveLength(1);
    await over(h);
  });

  it('recorded just before a release, is found by the call that took it over (one read per relayed request)', async () => {
    const h = await asked();
    const reads = jest.spyOn(h.store, 'getPending');
    await h.requests.deliverRecordedBeforeTakeover();
    expect(reads).toHaveBeenCalledTimes(1);
    expect(h.fake.delivered).toHaveLength(1);
    await over(h);
  });
});

describe("the session's cap on pending requests", () => {
  it('a call taken over has no count of its read: it pays a Query', async () => {
    const h = await setUp({ config: { maxPendingRequestsPerSession: 1 } });
    // Taken over by a reconnect (only whether it was matters here).
    h.input.resumed = { waiting: undefined as never, stream: undefined as never, snapshot: undefined as never };
    const counts = jest.spyOn(h.store, 'countPending');
    await expect(h.requests.checkPendingCap(1)).resolves.toBeUndefined();
    expect(counts).toHaveBeenCalledTimes(1);
    await expect(h.requests.checkPendingCap(2)).rejects.toThrow('at most 1');
    await over(h);
  });
});
