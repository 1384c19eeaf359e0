import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import type { PendingRecord, StreamEventRecord } from '../../lambda/state/store';
import { FakeClock } from '../support/fake-clock';
import { callAndAnswerIn, inProcessGateway } from '../support/in-process';
import { eventually } from '../support/mcp-http';
import { MemorySessionStore } from '../support/memory-store';

/**
 * The holder delivers an answer recorded for it (pending/recorded-answer.ts): also for a question whose
 * record is still being written when the holder looks (the holder, already looking for the call's
 * first question, must not take the second one's missing record for a gone one), and, should its looks
 * miss one, when the request's pending timeout comes.
 */
class SlowSecondQuestion extends MemorySessionStore {
  private questions = 0;
  held?: () => void;
  private reached!: () => void;
  /** Resolves once the second question's write is held back. */
  readonly holding = new Promise<void>((resolve) => {
    this.reached = resolve;
  });

  override async putStreamEvents(sessionId: string, events: StreamEventRecord[], pending?: PendingRecord[]) {
    if (pending?.length && ++this.questions === 2) {
      await new Promise<void>((resolve) => {
        this.held = resolve;
        this.reached();
      });
    }
    return super.putStreamEvents(sessionId, events, pending);
  }
}

let demo: DemoTarget;
beforeAll(async () => {
  demo = await startDemoTarget();
});
afterAll(async () => demo?.close());

it("a call's second question, recorded while the holder already looks, is answered through another instance", async () => {
  // The gateway's time on a fake clock: the holder's looks happen when the test moves it. The deadline
  // and the pending timeout are far off on it (fake time runs ahead while the target answers over HTTP).
  const clock = new FakeClock();
  const store = new SlowSecondQuestion(clock);
  const holder = inProcessGateway(
    { targets: [{ name: 'demo', url: demo.url }], pendingRequestTimeoutSeconds: 1800 },
    { store, clock, keepAliveMs: 50, deadlineMs: 15 * 60_000 },
  );
  const other = holder.another();
  const { headers } = await holder.initSession({ capabilities: { elicitation: { form: {} } } });
  const call = callAndAnswerIn(
    holder,
    headers,
    { id: 'two', params: { name: 'demo___multi_elicit', arguments: {} } },
    (asked) => ({
      result: {
        action: 'accept',
        content: 'name' in asked.params.requestedSchema.properties ? { name: 'ada' } : { age: 36 },
      },
    }),
    { answerTo: other },
  );
  // The second question's record (with its event) is held back while the holder looks several times
  // (20, 40, 80, 160 ms apart, and on: every look due in the 700 ms the clock moves), then written.
  await clock.advanceUntil(store.holding);
  await clock.advance(700);
  store.held?.();
  const result = await clock.advanceUntil(call);
  expect(result.answerStatuses).toEqual([202, 202]);
  expect(result.response.result.content[0].text).toBe('hello ada, 36');
});

/** A holder whose looks never see the answer recorded for it (as if every read were stale). */
class BlindHolder extends MemorySessionStore {
  hidden = 0;
  override async getPending(sessionId: string, gatewayId: string, now?: number) {
    const record = await super.getPending(sessionId, gatewayId, now);
    if (record?.status !== 'recorded') return record;
    this.hidden++;
    return { ...record, status: 'pending' as const, answer: undefined };
  }
}

it('an answer recorded for the holder that its looks missed is delivered when the pending timeout comes', async () => {
  const store = new BlindHolder();
  const holder = inProcessGateway(
    { targets: [{ name: 'demo', url: demo.url }], pendingRequestTimeoutSeconds: 2 },
    { store, keepAliveMs: 50 },
  );
  const { headers } = await holder.initSession({ capabilities: { elicitation: { form: {} } } });
  const result = await callAndAnswerIn(
    holder,
    headers,
    { id: 'blind', params: { name: 'demo___use_aws', arguments: { command: 'ls' } } },
    () => ({ result: { action: 'accept', content: { confirm: true } } }),
    { answerTo: holder.another() },
  );
  expect(store.hidden).toBeGreaterThan(0);
  expect(result.answerStatuses).toEqual([202]);
  expect(result.response.result.content[0].text).toBe('executed: ls');
});

/**
 * DynamoDB took the recording write but its response was lost (a timeout on a loaded table): the SDK
 * sends the write again, and its condition refuses it. Both ways of recording are covered: the write
 * before any read (a held relayed request's gw-H id) and the read path's.
 */
class LostResponse extends MemorySessionStore {
  retried = 0;
  override async recordAnswer(...args: Parameters<MemorySessionStore['recordAnswer']>) {
    const took = await super.recordAnswer(...args);
    if (!took) return false;
    this.retried++;
    return super.recordAnswer(...args); // the retry: refused, the answer being recorded already
  }
}

/** `demo___use_aws ls` on a holder over `store`, its confirmation accepted through another instance. */
async function confirmedThroughAnother(store: MemorySessionStore, id: string) {
  const holder = inProcessGateway({ targets: [{ name: 'demo', url: demo.url }] }, { store, keepAliveMs: 50 });
  const { headers } = await holder.initSession({ capabilities: { elicitation: { form: {} } } });
  return callAndAnswerIn(
    holder,
    headers,
    { id, params: { name: 'demo___use_aws', arguments: { command: 'ls' } } },
    () => ({ result: { action: 'accept', content: { confirm: true } } }),
    { answerTo: holder.another() },
  );
}

it('an answer whose recording write took though its response was lost is accepted (202), and delivered once', async () => {
  const store = new LostResponse();
  const result = await confirmedThroughAnother(store, 'lost');
  expect(store.retried).toBeGreaterThanOrEqual(1);
  expect(result.answerStatuses).toEqual([202]);
  expect(result.response.result.content[0].text).toBe('executed: ls');
});

it('the same answer POSTed again once it was recorded is still refused (400): only the POST that wrote it is accepted', async () => {
  const holder = inProcessGateway({ targets: [{ name: 'demo', url: demo.url }] }, { keepAliveMs: 50 });
  const { headers } = await holder.initSession({ capabilities: { elicitation: { form: {} } } });
  const answer = { result: { action: 'accept', content: { confirm: true } } };
  const repeats: number[] = [];
  const result = await callAndAnswerIn(
    holder,
    headers,
    { id: 'twice', params: { name: 'demo___use_aws', arguments: { command: 'ls' } } },
    async (asked) => {
      // Sent first (below, by the helper) and again at once: the second finds it recorded or delivered.
      setImmediate(() => {
        void holder.post(headers, { jsonrpc: '2.0', id: asked.id, ...answer }).then(async (res) => {
          repeats.push(res.status);
          await res.body?.cancel();
        });
      });
      return answer;
    },
  );
  await eventually(() => expect(repeats).toHaveLength(1));
  // Whichever came first was taken; the other was refused.
  expect([...result.answerStatuses, ...repeats].sort()).toEqual([202, 400]);
  expect(result.response.result.content[0].text).toBe('executed: ls');
});

/**
 * As LostResponse, one step further: by the time the SDK's retry of the write is refused, the holder
 * has found the answer, delivered it, and its call has ended and removed its records.
 */
class LostResponseCallEnded extends MemorySessionStore {
  retried = 0;
  override async recordAnswer(...args: Parameters<MemorySessionStore['recordAnswer']>) {
    const [sessionId, gatewayId] = args;
    if (!(await super.recordAnswer(...args))) return false;
    await eventually(async () => expect(await this.getPending(sessionId, gatewayId)).toBeUndefined());
    this.retried++;
    return 'retried' as const;
  }
}

it('an answer whose write took, whose call then ended, and whose retried write was refused is still accepted (202)', async () => {
  const store = new LostResponseCallEnded();
  const result = await confirmedThroughAnother(store, 'ended');
  expect(store.retried).toBe(1);
  expect(result.answerStatuses).toEqual([202]);
  expect(result.response.result.content[0].text).toBe('executed: ls');
});
