import { createLogger, type GatewayLogger } from '../../../lambda/observability/logger';
import { type IntakeDeps, takeAnswer, takeBeforeReading } from '../../../lambda/pending/answer-intake';
import type { JSONRPCResponse } from '../../../lambda/protocol/jsonrpc';
import { systemClock } from '../../../lambda/scheduling/clock';
import { newPendingRecord, withoutHolder } from '../../../lambda/state/records';
import type { PendingRecord } from '../../../lambda/state/store';
import { MessageRejectedError } from '../../../lambda/targets/endpoint';
import { MemorySessionStore } from '../../support/memory-store';
import { relayedRecord } from '../../support/pending-records';

/**
 * The one intake of a 2025 client's answer POST (pending/answer-intake.ts), against the memory store
 * with a fake target: which way each answer is taken — stored for the gateway's question, recorded for
 * the live holder, delivered from here — before the read and after it, and what is refused and why.
 * The answer POST only renders these outcomes (legacy/answer.ts).
 */

const SESSION = 'session-1';
const PRINCIPAL = 'alice';
const session = { principal: PRINCIPAL, expiresAt: Math.floor(Date.now() / 1000) + 3600 };

function setUp(fail?: () => Error) {
  const store = new MemorySessionStore();
  const sent: Array<{ target: string; message: JSONRPCResponse }> = [];
  const deps: IntakeDeps = {
    store,
    logger: createLogger('SILENT') as GatewayLogger,
    clock: systemClock,
    targets: {
      deliver: async (target, _session, message) => {
        if (fail) throw fail();
        sent.push({ target, message: message as JSONRPCResponse });
      },
    },
  };
  return { store, deps, sent };
}

async function put(store: MemorySessionStore, record: PendingRecord): Promise<PendingRecord> {
  await store.putPending({ id: SESSION }, record);
  return record;
}

/** The demo target's elicitation, carrying its session's principal and expiry (as the legacy path writes it). */
const relayed = (change: Partial<PendingRecord> = {}) =>
  relayedRecord({ principal: session.principal, sessionExpiresAt: session.expiresAt, ...change });
const question = () =>
  newPendingRecord(Date.now(), 300, {
    kind: 'question',
    method: 'elicitation/create',
    target: 'demo',
    clientRequestId: 7,
    session,
  });

const answerTo = (record: PendingRecord): JSONRPCResponse => ({
  jsonrpc: '2.0',
  id: record.gatewayId,
  result: { action: 'accept', content: { ok: true } },
});

const endCall = jest.fn(async () => undefined);
const afterTheRead = (
  deps: IntakeDeps,
  pending: PendingRecord | undefined,
  answer: JSONRPCResponse,
  writeId = 'post-2',
) => takeAnswer(deps, { partition: SESSION, answer, writeId, pending, protocolVersion: '2025-11-25', endCall });
const firstTry = (deps: IntakeDeps, answer: JSONRPCResponse, writeId = 'post-1') =>
  takeBeforeReading(deps, { partition: SESSION, answer, writeId, principal: PRINCIPAL });

describe("an answer to the gateway's own question", () => {
  it('is stored before anything is read, once; a second answer is read first and refused', async () => {
    const { store, deps } = setUp();
    const record = await put(store, question());
    expect(await firstTry(deps, answerTo(record))).toEqual({ kind: 'accepted', how: 'stored' });
    expect(await firstTry(deps, answerTo(record), 'post-2')).toEqual({ kind: 'read-first' });
    const refused = await afterTheRead(deps, await store.getPending(SESSION, record.gatewayId), answerTo(record));
    expect(refused).toMatchObject({ kind: 'refused', error: { kind: 'AnswerRefused' } });
  });

  it("is not stored before the read for another principal's session: that is for the read to refuse", async () => {
    const { store, deps } = setUp();
    const record = await put(store, question());
    const outcome = await takeBeforeReading(deps, {
      partition: SESSION,
      answer: answerTo(record),
      writeId: 'post-1',
      principal: 'mallory',
    });
    expect(outcome).toEqual({ kind: 'read-first' });
    expect((await store.getPending(SESSION, record.gatewayId))?.status).toBe('pending');
  });
});

describe('an answer to a relayed request whose call a live instance holds', () => {
  it('is recorded for the holder before anything is read, and nothing goes to the target from here', async () => {
    const { store, deps, sent } = setUp();
    const record = await put(store, relayed());
    expect(await firstTry(deps, answerTo(record))).toEqual({ kind: 'accepted', how: 'recorded' });
    expect((await store.getPending(SESSION, record.gatewayId))?.status).toBe('recorded');
    expect(sent).toEqual([]);
  });

  it("this POST's own write, whose response was lost, is its own (accepted); another's answer is refused", async () => {
    const { store, deps } = setUp();
    const record = await put(store, relayed());
    await firstTry(deps, answerTo(record), 'post-1');
    const current = await store.getPending(SESSION, record.gatewayId);
    expect(await afterTheRead(deps, current, answerTo(record), 'post-1')).toMatchObject({
      kind: 'accepted',
      how: 'recorded',
    });
    expect(await afterTheRead(deps, current, answerTo(record), 'post-2')).toMatchObject({
      kind: 'refused',
      error: { kind: 'AnswerRefused' },
    });
  });

  it('whose holder died (its lease ran out) is refused: the call is held by nobody', async () => {
    const { store, deps, sent } = setUp();
    const record = await put(store, relayed({ holderUntil: Date.now() - 1 }));
    const outcome = await afterTheRead(deps, record, answerTo(record));
    expect(outcome).toMatchObject({ kind: 'refused', error: { kind: 'AnswerRefused' } });
    expect(outcome.kind === 'refused' && outcome.error.message).toMatch(/no longer held by any gateway instance/);
    expect(sent).toEqual([]);
  });
});

describe('an answer to a relayed request no holder holds', () => {
  it('is read first, then delivered from here with the target’s own request id', async () => {
    const { store, deps, sent } = setUp();
    const record = await put(store, withoutHolder(relayed()));
    expect(await firstTry(deps, answerTo(record))).toEqual({ kind: 'read-first' });
    expect(await afterTheRead(deps, record, answerTo(record))).toMatchObject({ kind: 'accepted', how: 'delivered' });
    expect(sent).toEqual([{ target: 'demo', message: { ...answerTo(record), id: 3 } }]);
    expect((await store.getPending(SESSION, record.gatewayId))?.status).toBe('answered');
  });

  it('refused by the target: the call is ended by the era’s own means, and the POST is told', async () => {
    const { store, deps } = setUp(() => new MessageRejectedError('demo', 404));
    endCall.mockClear();
    const record = await put(store, withoutHolder(relayed()));
    const outcome = await afterTheRead(deps, record, answerTo(record));
    expect(outcome).toMatchObject({ kind: 'refused', error: { kind: 'AnswerRejected' } });
    expect(endCall).toHaveBeenCalledTimes(1);
  });
});

it('an answer whose id names no pending request of the session is refused, naming what the id must be', async () => {
  const { deps } = setUp();
  const outcome = await afterTheRead(deps, undefined, { jsonrpc: '2.0', id: 'gw-made-up', result: {} });
  expect(outcome).toMatchObject({ kind: 'refused', error: { kind: 'AnswerRefused' } });
  expect(outcome.kind === 'refused' && outcome.error.message).toMatch(/the id must be the one the gateway sent/);
});
