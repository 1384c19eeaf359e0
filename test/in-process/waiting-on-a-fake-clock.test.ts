import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { RELEASE_BEFORE_DEADLINE_MS } from '../../lambda/legacy/call-release';
import { FakeClock } from '../support/fake-clock';
import { type InProcessGateway, inProcessGateway } from '../support/in-process';
import { type Json, type SseEvent, sseEvents } from '../support/mcp-http';

/**
 * A legacy session's call waiting for the user, with the gateway's time on a fake clock: the release
 * after `streamReleaseAfterSeconds`, the hold of a client not trusted to resume until just before the
 * deadline, and the pending timeout happen when the clock says so — minutes of waiting in
 * milliseconds, and no assertion about how long anything took. The target is the real demo server
 * (official SDK, over HTTP), the store the memory one. The end-to-end tests with real clients and
 * real time (integration/release-while-waiting.test.ts) prove the parts work together; these pin
 * when each step happens.
 */

let demo: DemoTarget;
let modern: Awaited<ReturnType<typeof startModernDemoTarget>>;
beforeAll(async () => {
  demo = await startDemoTarget();
  modern = await startModernDemoTarget();
});
afterAll(async () => Promise.all([demo?.close(), modern?.close()]));

const MINUTES = 60_000;
const DEADLINE_MS = 15 * MINUTES;

/**
 * A gateway whose `demo` target is the legacy demo server or the modern one. Only a call whose target
 * side can be resumed is released: a 2026-07-28 target's input round (asked as the gateway's question),
 * not the legacy demo's stream (it sends no event ids), which stays held.
 */
function gateway(clock: FakeClock, config: Json, target: 'legacy' | 'modern' = 'modern'): InProcessGateway {
  const url = target === 'modern' ? modern.url : demo.url;
  return inProcessGateway(
    // Pending requests outlast the deadline unless a test says otherwise: only its own wait ends the call.
    { targets: [{ name: 'demo', url }], pendingRequestTimeoutSeconds: 1800, ...config },
    // Keep-alives (real time) would only add comments; the deadline is far on the fake clock.
    { clock, keepAliveMs: 10 * MINUTES, deadlineMs: DEADLINE_MS },
  );
}

/** The call's SSE events, read one at a time; `next()` resolves undefined when the stream ended. */
function reader(res: Response) {
  const events = sseEvents(res)[Symbol.asyncIterator]();
  return {
    async next(): Promise<SseEvent | undefined> {
      const { done, value } = await events.next();
      return done ? undefined : value;
    },
    /** The next message event (comments skipped). */
    async message(): Promise<{ message: Json; id?: string } | undefined> {
      for (;;) {
        const event = await this.next();
        if (!event) return undefined;
        if (event.message) return { message: event.message, id: event.id };
      }
    },
  };
}

/** Starts `demo___use_aws` (it asks the user to confirm) and reads up to the question. */
async function askingCall(gw: InProcessGateway, headers: Record<string, string>) {
  const res = await gw.post(headers, {
    jsonrpc: '2.0',
    id: 'call-1',
    method: 'tools/call',
    params: { name: 'demo___use_aws', arguments: { command: 'ls' } },
  });
  const stream = reader(res);
  const asked = await stream.message();
  expect(asked?.message.method).toBe('elicitation/create');
  const [streamId] = (asked?.id ?? '').split('.');
  return { stream, asked: asked as { message: Json; id: string }, streamId: streamId as string };
}

async function stateOf(gw: InProcessGateway, sessionId: string, streamId: string) {
  return (await gw.store.getWaitingCall(sessionId, streamId))?.state;
}

describe('a call that waits for the user, on a fake clock', () => {
  it('is released exactly after streamReleaseAfterSeconds; the reconnect on another instance takes it over and the answer completes it', async () => {
    const clock = new FakeClock();
    const gw = gateway(clock, { streamRelease: 'always', streamReleaseAfterSeconds: 120 });
    const { sessionId, headers } = await gw.initSession({ capabilities: { elicitation: { form: {} } } });
    const { stream, asked, streamId } = await askingCall(gw, headers);

    await clock.advance(2 * MINUTES - 1);
    expect(await stateOf(gw, sessionId, streamId)).toBe('held');
    await clock.advance(1);
    expect(await stateOf(gw, sessionId, streamId)).toBe('released');
    // The client's stream ends (with the `retry` the client reconnects after); nothing else is on it.
    expect(await stream.message()).toBeUndefined();

    const other = gw.another();
    const resumed = reader(
      await other.fetch('/mcp', {
        method: 'GET',
        headers: { ...headers, accept: 'text/event-stream', 'last-event-id': asked.id },
      }),
    );
    const answer = await other.post(headers, {
      jsonrpc: '2.0',
      id: asked.message.id,
      result: { action: 'accept', content: { confirm: true } },
    });
    expect(answer.status).toBe(202);
    // The reconnect follows the stream's log, polling on the gateway's clock: the test moves it.
    const result = await clock.advanceUntil(resumed.message());
    expect(result?.message).toMatchObject({ id: 'call-1', result: { content: [{ text: 'executed: ls' }] } });
    expect(await stateOf(gw, sessionId, streamId)).toBeUndefined();
  });

  it('holds a client not trusted to resume past the grace period, and releases it only just before the deadline', async () => {
    const clock = new FakeClock();
    const gw = gateway(clock, { streamRelease: 'proven', streamReleaseAfterSeconds: 2 });
    const { sessionId, headers } = await gw.initSession({ capabilities: { elicitation: { form: {} } } });
    const { stream, streamId } = await askingCall(gw, headers);

    await clock.advance(DEADLINE_MS - RELEASE_BEFORE_DEADLINE_MS - 1);
    expect(await stateOf(gw, sessionId, streamId)).toBe('held');
    await clock.advance(1);
    expect(await stateOf(gw, sessionId, streamId)).toBe('released');
    expect(await stream.message()).toBeUndefined();
  });

  it('ends the call with -32001 when nobody answers by the pending timeout, and not a moment before', async () => {
    const clock = new FakeClock();
    const gw = gateway(clock, { streamRelease: 'never', pendingRequestTimeoutSeconds: 300 }, 'legacy');
    const { sessionId, headers } = await gw.initSession({ capabilities: { elicitation: { form: {} } } });
    const { stream, asked } = await askingCall(gw, headers);

    await clock.advance(5 * MINUTES - 1);
    expect((await gw.store.getPending(sessionId, asked.message.id))?.status).toBe('pending');
    await clock.advance(1);
    // The error goes out once the call's target stream settled (a window on the gateway's clock).
    const failed = await clock.advanceUntil(stream.message());
    expect(failed?.message).toMatchObject({ id: 'call-1', error: { code: -32001 } });
    // The record expired with the call: a late answer is refused.
    const late = await gw.post(headers, {
      jsonrpc: '2.0',
      id: asked.message.id,
      result: { action: 'accept', content: { confirm: true } },
    });
    expect(late.status).toBe(400);
  });
});
