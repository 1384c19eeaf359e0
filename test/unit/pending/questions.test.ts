import { storeQuestionAnswer, waitForQuestionAnswer } from '../../../lambda/pending/questions';
import { newPendingRecord } from '../../../lambda/state/records';
import type { PendingRecord } from '../../../lambda/state/store';
import { FakeClock } from '../../support/fake-clock';
import { MemorySessionStore } from '../../support/memory-store';
import { QUIET } from '../../support/modern-deps';

/**
 * Gateway questions (pending/questions.ts): the invocation that asked polls the record (100 ms backing off
 * to 1 s) until it is answered, its time passes or it is stopped; the answer is stored once.
 */

const SESSION = 'session-1';

async function question(store: MemorySessionStore, change: Partial<PendingRecord> = {}): Promise<PendingRecord> {
  const record = {
    ...newPendingRecord(Date.now(), 300, {
      kind: 'question',
      method: 'elicitation/create',
      target: 'gateway',
      clientRequestId: 1,
    }),
    ...change,
  };
  delete record.holderUntil;
  await store.putPending({ id: SESSION }, record);
  return record;
}

const ACCEPTED = { action: 'accept', content: { confirm: true } };

describe('waiting for the answer to a gateway question', () => {
  it('returns the stored answer as soon as a look finds it', async () => {
    const store = new MemorySessionStore();
    const clock = new FakeClock();
    const record = await question(store);
    const answer = waitForQuestionAnswer(
      store,
      QUIET,
      SESSION,
      record.gatewayId,
      clock.now() + 60_000,
      new AbortController().signal,
      {
        clock,
      },
    );
    await clock.advance(250);
    expect(await storeQuestionAnswer(store, SESSION, { jsonrpc: '2.0', id: record.gatewayId, result: ACCEPTED })).toBe(
      true,
    );
    await clock.advance(1000);
    expect(await answer).toEqual({ jsonrpc: '2.0', id: record.gatewayId, result: ACCEPTED });
  });

  it('looks after 100 ms, backing off by doubling to 1 s', async () => {
    const store = new MemorySessionStore();
    const clock = new FakeClock();
    const record = await question(store);
    const reads = jest.spyOn(store, 'getPending');
    const answer = waitForQuestionAnswer(
      store,
      QUIET,
      SESSION,
      record.gatewayId,
      clock.now() + 3_000,
      new AbortController().signal,
      {
        clock,
      },
    );
    await clock.advance(3_000);
    expect(await answer).toBe('timeout');
    expect(clock.delays).toEqual([100, 200, 400, 800, 1000, 500]);
    expect(reads).toHaveBeenCalledTimes(7);
  });

  it("ends with 'client-gone' when stopped", async () => {
    const store = new MemorySessionStore();
    const clock = new FakeClock();
    const record = await question(store);
    const stop = new AbortController();
    const answer = waitForQuestionAnswer(store, QUIET, SESSION, record.gatewayId, clock.now() + 60_000, stop.signal, {
      clock,
    });
    await clock.advance(150);
    stop.abort();
    expect(await answer).toBe('client-gone');
  });

  it("keeps looking through a missing record, unless the record's disappearing is final ('gone')", async () => {
    const store = new MemorySessionStore();
    const clock = new FakeClock();
    const keeps = waitForQuestionAnswer(
      store,
      QUIET,
      SESSION,
      'question-none',
      clock.now() + 500,
      new AbortController().signal,
      {
        clock,
      },
    );
    await clock.advance(500);
    expect(await keeps).toBe('timeout');
    const final = waitForQuestionAnswer(
      store,
      QUIET,
      SESSION,
      'question-none',
      clock.now() + 500,
      new AbortController().signal,
      {
        clock,
        goneIsFinal: true,
      },
    );
    expect(await final).toBe('gone');
  });

  it('keeps looking through a store failure (bounded by its time)', async () => {
    const store = new MemorySessionStore();
    const clock = new FakeClock();
    const record = await question(store);
    store.down = true;
    const answer = waitForQuestionAnswer(
      store,
      QUIET,
      SESSION,
      record.gatewayId,
      clock.now() + 60_000,
      new AbortController().signal,
      {
        clock,
        goneIsFinal: true,
      },
    );
    await clock.advance(300);
    store.down = false;
    await storeQuestionAnswer(store, SESSION, { jsonrpc: '2.0', id: record.gatewayId, result: ACCEPTED });
    await clock.advance(1000);
    expect(await answer).toMatchObject({ result: ACCEPTED });
  });
});

describe('storing the answer to a gateway question', () => {
  it('stores it once: a second answer, or one for an expired question, is refused', async () => {
    const store = new MemorySessionStore();
    const record = await question(store);
    const first = { jsonrpc: '2.0' as const, id: record.gatewayId, result: ACCEPTED };
    expect(await storeQuestionAnswer(store, SESSION, first)).toBe(true);
    expect(await storeQuestionAnswer(store, SESSION, { ...first, result: { action: 'decline' } })).toBe(false);
    expect(JSON.parse((await store.getPending(SESSION, record.gatewayId))!.answer!)).toEqual(first);
    const expired = await question(store, { expiresAt: Math.floor(Date.now() / 1000) - 1 });
    expect(await storeQuestionAnswer(store, SESSION, { ...first, id: expired.gatewayId })).toBe(false);
  });

  it('keeps an error answer as an error', async () => {
    const store = new MemorySessionStore();
    const record = await question(store);
    const error = { code: -32603, message: 'the user closed the dialog' };
    expect(await storeQuestionAnswer(store, SESSION, { jsonrpc: '2.0', id: record.gatewayId, error })).toBe(true);
    expect(JSON.parse((await store.getPending(SESSION, record.gatewayId))!.answer!)).toEqual({
      jsonrpc: '2.0',
      id: record.gatewayId,
      error,
    });
  });

  it("with a principal, answers only a question of that principal's live session", async () => {
    const store = new MemorySessionStore();
    const session = { principal: 'alice', expiresAt: Math.floor(Date.now() / 1000) + 3600 };
    const record = await question(store, { principal: session.principal, sessionExpiresAt: session.expiresAt });
    const answer = { jsonrpc: '2.0' as const, id: record.gatewayId, result: ACCEPTED };
    expect(await storeQuestionAnswer(store, SESSION, answer, { principal: 'mallory' })).toBe(false);
    expect(await storeQuestionAnswer(store, SESSION, answer, { principal: 'alice' })).toBe(true);
  });
});
