import { deliverAnswer, recordBeforeReading } from '../../../lambda/legacy/answer';
import { NO_CLIENT_REQUEST } from '../../../lambda/legacy/client-stream';
import { targetCallIdOf } from '../../../lambda/legacy/ids';
import type { JSONRPCResponse } from '../../../lambda/protocol/jsonrpc';
import { newPendingRecord, withoutHolder } from '../../../lambda/state/records';
import type { LoadedAnswer, PendingRecord } from '../../../lambda/state/store';
import { MessageRejectedError } from '../../../lambda/targets/endpoint';
import { legacyDeps, storedSession } from '../../support/legacy-deps';

/**
 * The 2025 answer POST (legacy/answer.ts): it renders the intake's outcome (pending/answer-intake.ts)
 * as its response, and lends it what only the 2025 path knows — a refused answer ends the call with a
 * marker its holder finds, and a request tied to no call (the session's GET stream) is removed once
 * answered.
 */

const answerTo = (record: PendingRecord): JSONRPCResponse => ({
  jsonrpc: '2.0',
  id: record.gatewayId,
  result: { action: 'accept', content: { ok: true } },
});

async function setUp(change: Partial<PendingRecord> = {}, leased = true) {
  const t = legacyDeps();
  const loaded = await storedSession(t.store);
  const fresh = newPendingRecord(Date.now(), 300, {
    kind: 'relayed',
    method: 'elicitation/create',
    target: 'demo',
    clientRequestId: 7,
    targetSessionId: 'demo-session',
    targetRequestId: 3,
    session: loaded.session,
  });
  const record = { ...(leased ? fresh : withoutHolder(fresh)), ...change };
  await t.store.putPending(loaded.session, record);
  const forAnswer = async (): Promise<LoadedAnswer> => {
    const read = await t.store.loadForAnswer(loaded.session.id, record.gatewayId);
    if (!read) throw new Error('session gone');
    return read;
  };
  return { ...t, loaded, record, forAnswer };
}

describe('the answer POST before anything is read', () => {
  it('records an answer for the live holder with one write: 202 with the session id, nothing sent to the target', async () => {
    const { deps, store, loaded, record, fake } = await setUp();
    const reads = jest.spyOn(store, 'loadForAnswer');
    const response = await recordBeforeReading(deps, loaded.session.id, 'alice', answerTo(record), 'post-1');
    expect(response?.status).toBe(202);
    expect(response?.headers.get('mcp-session-id')).toBe(loaded.session.id);
    expect(reads).not.toHaveBeenCalled();
    expect(fake.delivered).toEqual([]);
    expect((await store.getPending(loaded.session.id, record.gatewayId))?.status).toBe('recorded');
  });

  it('leaves an answer to a record no holder holds to the read (undefined: no response of its own)', async () => {
    const { deps, loaded, record } = await setUp({}, false);
    expect(await recordBeforeReading(deps, loaded.session.id, 'alice', answerTo(record), 'post-1')).toBeUndefined();
  });

  it("leaves another principal's answer to the read (which answers 404), writing nothing", async () => {
    const { deps, store, loaded, record } = await setUp();
    expect(await recordBeforeReading(deps, loaded.session.id, 'mallory', answerTo(record), 'post-1')).toBeUndefined();
    expect((await store.getPending(loaded.session.id, record.gatewayId))?.status).toBe('pending');
  });

  it('answers a failed write as the read would fail: 503, retryable', async () => {
    const { deps, store, loaded, record } = await setUp();
    store.down = true;
    const response = await recordBeforeReading(deps, loaded.session.id, 'alice', answerTo(record), 'post-1');
    expect(response?.status).toBe(503);
  });
});

describe('the answer POST after the read', () => {
  it("delivers an answer no holder waits for to the target with the target's own request id: 202", async () => {
    const { deps, record, forAnswer, fake, store, loaded } = await setUp({}, false);
    const response = await deliverAnswer(deps, await forAnswer(), answerTo(record), {}, 'post-1');
    expect(response.status).toBe(202);
    expect(fake.delivered).toEqual([
      {
        target: 'demo',
        session: expect.objectContaining({ targetSessionId: 'demo-session' }),
        message: expect.objectContaining({ id: 3, result: { action: 'accept', content: { ok: true } } }),
      },
    ]);
    // Tied to a call: its record stays until the call's end removes it.
    expect((await store.getPending(loaded.session.id, record.gatewayId))?.status).toBe('answered');
  });

  it("removes a GET stream request's record once answered: it counts against the session's cap no more", async () => {
    const { deps, record, forAnswer, store, loaded } = await setUp({ clientRequestId: NO_CLIENT_REQUEST }, false);
    expect((await deliverAnswer(deps, await forAnswer(), answerTo(record), {}, 'post-1')).status).toBe(202);
    expect(await store.getPending(loaded.session.id, record.gatewayId)).toBeUndefined();
    expect(await store.countPending(loaded.session.id, 100)).toBe(0);
  });

  it('refuses an answer that matches no pending request: 400 with the answer id', async () => {
    const { deps, loaded, fake } = await setUp();
    const answer: JSONRPCResponse = { jsonrpc: '2.0', id: 'gw-Dmadeupmadeupmadeupmad', result: {} };
    const response = await deliverAnswer(deps, { session: loaded.session }, answer, {}, 'post-1');
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ id: 'gw-Dmadeupmadeupmadeupmad', error: { code: -32600 } });
    expect(fake.delivered).toEqual([]);
  });

  it('refuses a number id without reading a record for it (gateway ids are strings)', async () => {
    const { deps, forAnswer, fake } = await setUp({}, false);
    const response = await deliverAnswer(deps, await forAnswer(), { jsonrpc: '2.0', id: 5, result: {} }, {}, 'p');
    expect(response.status).toBe(400);
    expect(fake.delivered).toEqual([]);
  });

  it('ends the call when the target refuses the answer (4xx): the record settled, a marker for the holder, the POST told', async () => {
    const { deps, record, forAnswer, fake, store, loaded } = await setUp({}, false);
    fake.failDeliver = new MessageRejectedError('demo', 400);
    const response = await deliverAnswer(deps, await forAnswer(), answerTo(record), {}, 'post-1');
    expect(response.status).toBe(502);
    expect(await store.isCancelled(loaded.session.id, targetCallIdOf(7))).toBe('answer-lost');
    expect((await store.getPending(loaded.session.id, record.gatewayId))?.status).toBe('answered');
  });
});
