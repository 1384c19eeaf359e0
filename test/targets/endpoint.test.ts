import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEFAULT_TARGET_LIMITS } from '../../lambda/config/schema';
import { DependencyFailedError } from '../../lambda/protocol/errors';
import { type Clock, systemClock } from '../../lambda/scheduling/clock';
import { NO_CREDENTIALS, type TargetCredentials } from '../../lambda/targets/credentials';
import {
  DELIVERY_ATTEMPTS,
  MessageRejectedError,
  TargetEndpoint,
  TargetSessionExpiredError,
  TargetTimeoutError,
} from '../../lambda/targets/endpoint';
import type { ResumePolicy } from '../../lambda/targets/stream-resume';
import { FakeClock } from '../support/fake-clock';
import { eventually } from '../support/mcp-http';
import { drop, openSse, type ScriptedTarget, type Step, scriptedTarget, sse } from '../support/scripted-target';

/**
 * One target's HTTP endpoint (targets/endpoint.ts) against a scripted loopback target: how it resumes
 * a POST stream that ended before the response (SSE polling, SEP-1699: the wait it honours, the
 * headers it sends, the bounds that end a call whose stream cannot be resumed; durations injected,
 * short), and which messages it sends again after a failure (deliveries and side-effect-free
 * requests) and which never (a tool call).
 */

const REQUEST = { jsonrpc: '2.0' as const, id: 'c.n.7', method: 'tools/call', params: { name: 'x' } };
const RESPONSE = `data: ${JSON.stringify({ jsonrpc: '2.0', id: 'c.n.7', result: { content: [] } })}\n\n`;
const POLICY: ResumePolicy = {
  defaultRetryMs: 150,
  minRetryMs: 0,
  maxRetryMs: 5000,
  maxFailedAttempts: 2,
  maxResumes: 3,
};
const HEADERS = { 'mcp-session-id': 'target-session-1', 'mcp-protocol-version': '2025-11-25' };

function endpoint(url: string, policy = POLICY, credentials?: TargetCredentials, clock: Clock = systemClock) {
  return new TargetEndpoint(
    { name: 'poller', url } as ConstructorParameters<typeof TargetEndpoint>[0],
    clock,
    credentials,
    undefined,
    policy,
  );
}

/** Credentials that count how often they were asked: a reconnect's GET asks right before it is sent. */
function countedCredentials(): { credentials: TargetCredentials; asked: () => number } {
  let asked = 0;
  const credentials: TargetCredentials = {
    ...NO_CREDENTIALS,
    headers: async () => {
      asked++;
      return {};
    },
  };
  return { credentials, asked: () => asked };
}

/**
 * The caller's decision on a target that polls (`onTargetPolls`), which notes when the endpoint waits
 * for it: awaiting a promise of a subclass calls its `then`.
 */
class Decision extends Promise<undefined> {
  awaited = false;

  // biome-ignore lint/suspicious/noThenProperty: being awaited, which calls `then`, is what it notes
  override then<A = undefined, B = never>(
    onFulfilled?: ((value: undefined) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    this.awaited = true;
    return super.then(onFulfilled, onRejected);
  }
}

const targets: ScriptedTarget[] = [];
const start = async (steps: Step[]) => {
  const target = await scriptedTarget(steps);
  targets.push(target);
  return target;
};
afterAll(async () => {
  for (const target of targets) await target.close();
});

describe('resuming a target stream that ended before the response', () => {
  it("waits the target's retry, then GETs with Last-Event-ID and the session headers, and reads the response there", async () => {
    const notified: string[] = [];
    const target = await start([
      (_req, res) => sse(res, 'id: e1\nretry: 300\ndata:\n\n'),
      (_req, res) =>
        sse(
          res,
          `id: e2\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hi' } })}\n\n${RESPONSE}`,
        ),
    ]);
    const { response } = await endpoint(target.url).request(REQUEST, HEADERS, {
      resumable: true,
      listeners: { onNotification: (n) => notified.push(n.method) },
    });
    expect(response).toMatchObject({ id: 'c.n.7', result: { content: [] } });
    expect(notified).toEqual(['notifications/message']);
    expect(target.seen.map((s) => [s.method, s.lastEventId, s.sessionId])).toEqual([
      ['POST', undefined, 'target-session-1'],
      ['GET', 'e1', 'target-session-1'],
    ]);
    expect(target.seen[1]?.gapMs).toBeGreaterThanOrEqual(300 - 5);
  });

  it("waits the target's retry on the gateway's clock: nothing is reconnected until that clock has moved past it", async () => {
    const clock = new FakeClock();
    const target = await start([
      (_req, res) => sse(res, 'id: e1\nretry: 60000\ndata:\n\n'),
      (_req, res) => sse(res, RESPONSE),
    ]);
    const { credentials, asked } = countedCredentials();
    const call = endpoint(target.url, { ...POLICY, maxRetryMs: 60_000 }, credentials, clock).request(REQUEST, HEADERS, {
      resumable: true,
    });
    await eventually(() => expect(target.seen.map((s) => s.method)).toEqual(['POST']));
    await clock.advance(59_999);
    expect(asked()).toBe(0); // the GET asks for credentials right before it is sent
    await clock.advance(1);
    const { response } = await call;
    expect(response).toMatchObject({ result: {} });
    expect(target.seen.map((s) => `${s.method} ${s.lastEventId ?? ''}`)).toEqual(['POST ', 'GET e1']);
  });

  it('waits the default when the target gave no retry, and resumes a stream that was cut after an id', async () => {
    const target = await start([
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('id: e1\ndata:\n\n', () => setTimeout(() => res.destroy(), 20));
      },
      (_req, res) => sse(res, RESPONSE),
    ]);
    const { response } = await endpoint(target.url).request(REQUEST, HEADERS, { resumable: true });
    expect(response).toMatchObject({ result: {} });
    expect(target.seen.map((s) => s.method)).toEqual(['POST', 'GET']);
    // Timers may fire a couple of ms early against the wall clock the gap is measured with.
    expect(target.seen[1]?.gapMs).toBeGreaterThanOrEqual(POLICY.defaultRetryMs - 5);
  });

  it('a failed reconnect is tried again; a successful one resets the count', async () => {
    const target = await start([
      (_req, res) => sse(res, 'id: e1\nretry: 10\ndata:\n\n'),
      (_req, res) => res.writeHead(503).end(),
      (_req, res) => sse(res, 'id: e2\ndata:\n\n'),
      (_req, res) => res.writeHead(503).end(),
      (_req, res) => sse(res, RESPONSE),
    ]);
    const { response } = await endpoint(target.url).request(REQUEST, HEADERS, { resumable: true });
    expect(response).toMatchObject({ result: {} });
    expect(target.seen.map((s) => `${s.method} ${s.lastEventId ?? ''}`)).toEqual([
      'POST ',
      'GET e1',
      'GET e1',
      'GET e2',
      'GET e2',
    ]);
  });

  it('fails with DependencyFailed after maxFailedAttempts reconnects in a row, and never sends the call again (404)', async () => {
    const target = await start([
      (_req, res) => sse(res, 'id: e1\nretry: 10\ndata:\n\n'),
      (_req, res) => res.writeHead(404).end(),
    ]);
    await expect(
      endpoint(target.url).request(REQUEST, HEADERS, { resumable: true, sessionBound: true }),
    ).rejects.toThrow('the stream ended before the response and could not be resumed (HTTP 404)');
    expect(target.seen.map((s) => s.method)).toEqual(['POST', 'GET', 'GET']);
  });

  it('fails after maxResumes reconnects of one call, however many succeed', async () => {
    const target = await start([(_req, res) => sse(res, 'id: e1\nretry: 10\ndata:\n\n')]);
    await expect(endpoint(target.url).request(REQUEST, HEADERS, { resumable: true })).rejects.toThrow(
      /ended before the response after 3 resumptions/,
    );
    expect(target.seen.map((s) => s.method)).toEqual(['POST', 'GET', 'GET', 'GET']);
  });

  it('a 2026-07-28 request (not resumable) fails as before: closing that stream is cancelling', async () => {
    const target = await start([(_req, res) => sse(res, 'id: e1\nretry: 10\ndata:\n\n')]);
    await expect(endpoint(target.url).request(REQUEST, HEADERS)).rejects.toThrow(
      'the stream ended before the response',
    );
    expect(target.seen.map((s) => s.method)).toEqual(['POST']);
  });

  it("the caller's decision on a target that polls comes first: a call let go of meanwhile reconnects nothing", async () => {
    // The target's retry (0 ms) is over long before the caller decided (it writes its record first).
    const target = await start([
      (_req, res) => sse(res, 'id: e1\nretry: 0\ndata:\n\n'),
      (_req, res) => sse(res, RESPONSE),
    ]);
    const { credentials, asked } = countedCredentials();
    const detach = new AbortController();
    const cursor: { lastEventId?: string } = {};
    let decide!: () => void;
    const decision = new Decision((resolve) => {
      decide = () => {
        detach.abort(); // released
        resolve(undefined);
      };
    });
    const call = endpoint(target.url, POLICY, credentials).request(REQUEST, HEADERS, {
      resumable: true,
      cursor,
      detach: detach.signal,
      onTargetPolls: () => decision,
    });
    const outcome = expect(call).rejects.toMatchObject({ name: 'StreamDetachedError', cursor: { lastEventId: 'e1' } });
    // Past the target's retry the endpoint waits for the decision: no GET has asked for credentials.
    await eventually(() => expect(decision.awaited).toBe(true));
    expect(asked()).toBe(0);
    decide();
    await outcome;
    // The response stays with the target for the client's reconnect: nobody read it here.
    expect(asked()).toBe(0);
    expect(target.seen.map((s) => s.method)).toEqual(['POST']);
  });

  it('a call kept after the decision reconnects then, and reads the response', async () => {
    const target = await start([
      (_req, res) => sse(res, 'id: e1\nretry: 0\ndata:\n\n'),
      (_req, res) => sse(res, RESPONSE),
    ]);
    const { credentials, asked } = countedCredentials();
    let keep!: () => void;
    const decision = new Decision((resolve) => {
      keep = () => resolve(undefined);
    });
    const call = endpoint(target.url, POLICY, credentials).request(REQUEST, HEADERS, {
      resumable: true,
      detach: new AbortController().signal,
      onTargetPolls: () => decision,
    });
    // The decision to keep the call comes while the endpoint waits for it.
    await eventually(() => expect(decision.awaited).toBe(true));
    expect(asked()).toBe(0);
    keep();
    const { response } = await call;
    expect(response).toMatchObject({ id: 'c.n.7' });
    expect(asked()).toBe(1); // the GET's
    expect(target.seen.map((s) => s.method)).toEqual(['POST', 'GET']);
  });

  it('an aborted call stops waiting for the reconnect', async () => {
    const target = await start([(_req, res) => sse(res, 'id: e1\nretry: 5000\ndata:\n\n')]);
    const abort = new AbortController();
    const call = endpoint(target.url).request(REQUEST, HEADERS, { resumable: true, signal: abort.signal });
    const outcome = expect(call).rejects.toMatchObject({ name: 'AbortError' });
    // Aborted while it waits out the target's 5 s `retry`: once the POST's stream has ended.
    await eventually(() => expect(target.seen.map((s) => s.method)).toEqual(['POST']));
    abort.abort();
    await outcome;
    expect(target.seen.map((s) => s.method)).toEqual(['POST']);
  });
});

describe('delivering a message (an answer, a notification) to a target', () => {
  const ANSWER = { jsonrpc: '2.0' as const, id: 'gw-1', result: { action: 'accept' } };
  const accepted: Step = (_req, res) => res.writeHead(202).end();

  it('sends it again after a 502/503/504 (a proxy that could not reach the target), and succeeds', async () => {
    const target = await start([
      (_req, res) => res.writeHead(502).end(),
      (_req, res) => res.writeHead(504).end(),
      accepted,
    ]);
    await endpoint(target.url).send(ANSWER, HEADERS);
    expect(target.seen).toHaveLength(3);
  });

  it(`gives up after ${DELIVERY_ATTEMPTS} attempts as a transient DependencyFailed (the client may retry)`, async () => {
    const target = await start([(_req, res) => res.writeHead(503).end()]);
    const failure = await endpoint(target.url)
      .send(ANSWER, HEADERS)
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DependencyFailedError);
    expect(failure).not.toBeInstanceOf(MessageRejectedError);
    expect((failure as Error).message).toMatch(/HTTP 503/);
    expect(target.seen).toHaveLength(DELIVERY_ATTEMPTS);
  });

  it('a 4xx is final: MessageRejected after one attempt', async () => {
    const target = await start([(_req, res) => res.writeHead(400).end()]);
    await expect(endpoint(target.url).send(ANSWER, HEADERS)).rejects.toMatchObject({
      name: 'MessageRejectedError',
      status: 400,
    });
    expect(target.seen).toHaveLength(1);
  });

  it("a 404 to a session-bound message is the target's forgotten session, after one attempt", async () => {
    const target = await start([(_req, res) => res.writeHead(404).end()]);
    await expect(endpoint(target.url).send(ANSWER, HEADERS, { sessionBound: true })).rejects.toBeInstanceOf(
      TargetSessionExpiredError,
    );
    expect(target.seen).toHaveLength(1);
  });

  it('a connection dropped before any response is sent again', async () => {
    const target = await start([(req) => drop(req), accepted]);
    await endpoint(target.url).send(ANSWER, HEADERS);
    expect(target.seen).toHaveLength(2);
  });

  it("stops at the caller's abort: no further attempt, and the abort is not reported as the target's failure", async () => {
    const abort = new AbortController();
    const target = await start([
      (_req, res) => {
        abort.abort();
        res.writeHead(503).end();
      },
    ]);
    await expect(endpoint(target.url).send(ANSWER, HEADERS, { signal: abort.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(target.seen).toHaveLength(1);
  });
});

describe('a request whose connection drops before the response', () => {
  const LIST = { jsonrpc: '2.0' as const, id: 'l1', method: 'tools/list', params: {} };
  const listed = (_req: IncomingMessage, res: ServerResponse) =>
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ jsonrpc: '2.0', id: 'l1', result: { tools: [] } }));

  it('is sent again when it has no side effects at the target (tools/list)', async () => {
    const target = await start([(req) => drop(req), listed]);
    const { response } = await endpoint(target.url).request(LIST, HEADERS);
    expect(response).toMatchObject({ id: 'l1', result: { tools: [] } });
    expect(target.seen.map((s) => s.rpcMethod)).toEqual(['tools/list', 'tools/list']);
  });

  it('is never sent twice when it is a tool call: the call fails as DependencyFailed (retryable) instead', async () => {
    const target = await start([(req) => drop(req), (_req, res) => sse(res, RESPONSE)]);
    await expect(endpoint(target.url).request(REQUEST, HEADERS)).rejects.toBeInstanceOf(DependencyFailedError);
    expect(target.seen.map((s) => s.rpcMethod)).toEqual(['tools/call']);
  });
});

describe("a target's timeouts (limits.requestTimeoutMs, limits.callIdleTimeoutMs)", () => {
  const limited = (url: string, limits: Partial<typeof DEFAULT_TARGET_LIMITS>) =>
    new TargetEndpoint(
      { name: 'slow', url } as ConstructorParameters<typeof TargetEndpoint>[0],
      systemClock,
      undefined,
      { ...DEFAULT_TARGET_LIMITS, ...limits },
      POLICY,
    );
  const silent: Step = (_req, res) => openSse(res, ': nothing more\n\n');

  it('a request that is not answered in time fails as TargetTimeout naming the method and the bound', async () => {
    const target = await start([silent]);
    const list = { jsonrpc: '2.0' as const, id: 'l', method: 'tools/list', params: {} };
    const failure = await limited(target.url, { requestTimeoutMs: 100 })
      .request(list, HEADERS)
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TargetTimeoutError);
    expect((failure as Error).message).toBe('target slow: did not answer tools/list within 100 ms');
  });

  it('a relayed call whose target sends nothing for callIdleTimeoutMs fails as TargetTimeout (idle)', async () => {
    const target = await start([silent]);
    await expect(limited(target.url, { callIdleTimeoutMs: 100 }).request(REQUEST, HEADERS)).rejects.toThrow(
      'target slow: sent nothing for 100 ms during tools/call',
    );
  });

  it("a relayed call's idle clock stands still while the target's request to the user is open", async () => {
    const elicit = { jsonrpc: '2.0', id: 'e1', method: 'elicitation/create', params: { message: 'ok?' } };
    const target = await start([
      (_req, res) => {
        openSse(res, `data: ${JSON.stringify(elicit)}\n\n`);
        // Silent for 4× the idle bound (the user is answering), then the response.
        setTimeout(() => res.end(RESPONSE), 400);
      },
    ]);
    const asked: string[] = [];
    const { response } = await limited(target.url, { callIdleTimeoutMs: 100 }).request(REQUEST, HEADERS, {
      listeners: { onServerRequest: (r) => asked.push(r.method) },
    });
    expect(asked).toEqual(['elicitation/create']);
    expect(response).toMatchObject({ id: 'c.n.7', result: { content: [] } });
  });
});
