import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { clickOnConsentPage } from '../support/consent-page';
import type { CountedDynamo } from '../support/dynamo';
import type { GatewayKind } from '../support/gateways';
import { callAndAnswer, eventually, initSession, type Json, post, sessionItems, sseEvents } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * The 2025-era relay (issue: elicitation, sampling and roots relay): server-to-client requests
 * forwarded with gateway ids, answers POSTed separately, the reference page's error table, -32042,
 * notifications on the right stream, parallel calls, keep-alive, cancellation. Through the local
 * server and through the Lambda handler.
 */
// The function-URL handler runs in the Lambda runtime (the real one, locally); in-process alone it would add nothing.
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];
const ALL = { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: true } };
const accept = { result: { action: 'accept', content: { confirm: true } } };

describe.each(kinds)('relay through the %s', (kind) => {
  const gw = withGateway(
    { logLevel: 'SILENT' },
    { kind, targets: { demo: () => startDemoTarget() }, keepAliveMs: 100 },
  );
  let dynamo: CountedDynamo;
  let demo: DemoTarget;
  let url: string;
  beforeAll(() => {
    ({ dynamo, url } = gw);
    demo = gw.targets.demo;
  });

  const pendingItems = async (sessionId: string) =>
    (await sessionItems(dynamo.endpoint, sessionId)).filter((i) => i.sk.startsWith('P#'));

  describe('form, URL and sampling requests of a target', () => {
    it('forwards elicitation/create with a gateway id, records it as pending first, and relays the result', async () => {
      const { headers, sessionId } = await initSession(url, { capabilities: ALL });
      let pendingWhileAsked: Json[] = [];
      const call = await callAndAnswer(
        url,
        headers,
        { id: 7, params: { name: 'demo___use_aws', arguments: { command: 'ls' } } },
        async () => {
          pendingWhileAsked = await pendingItems(sessionId);
          return accept;
        },
      );
      const asked = call.messages[0];
      expect(asked.method).toBe('elicitation/create');
      expect(asked.id).toMatch(/^gw-[A-Za-z0-9_-]{22}$/); // 128 random bits, never the target's own id
      expect(pendingWhileAsked).toHaveLength(1);
      expect(pendingWhileAsked[0]).toMatchObject({
        gatewayId: asked.id,
        method: 'elicitation/create',
        target: 'demo',
        status: 'pending',
        clientRequestId: 7,
      });
      expect(call.answerStatuses).toEqual([202]);
      expect(call.response).toEqual({
        jsonrpc: '2.0',
        id: 7,
        result: { content: [{ type: 'text', text: 'executed: ls' }] },
      });
      expect(await pendingItems(sessionId)).toEqual([]);
    });

    it('relays URL mode and the completion notification on the same stream', async () => {
      const { headers } = await initSession(url, { capabilities: ALL });
      const call = await callAndAnswer(
        url,
        headers,
        { id: 'u', params: { name: 'demo___access_github_repo', arguments: { repo: 'o/r' } } },
        async (asked) => {
          await clickOnConsentPage(asked.params.url, 'allow'); // the user allows it on the target's page
          return { result: { action: 'accept' } };
        },
      );
      const [asked, completed] = call.messages;
      expect(asked.params).toMatchObject({
        mode: 'url',
        url: `${new URL(demo.url).origin}/consent/${asked.params.elicitationId}`, // the target's consent page
        elicitationId: expect.any(String),
      });
      expect(completed).toEqual({
        jsonrpc: '2.0',
        method: 'notifications/elicitation/complete',
        params: { elicitationId: asked.params.elicitationId },
      });
      expect(call.response.result.content[0].text).toBe('accessed o/r');
    });

    it('relays sampling/createMessage and roots/list', async () => {
      const { headers } = await initSession(url, { capabilities: ALL });
      const sampled = await callAndAnswer(
        url,
        headers,
        { id: 1, params: { name: 'demo___sample', arguments: { prompt: 'p' } } },
        () => ({
          result: { role: 'assistant', model: 'm-1', content: { type: 'text', text: 'answer' } },
        }),
      );
      expect(sampled.messages[0].method).toBe('sampling/createMessage');
      expect(sampled.response.result.content[0].text).toBe('sampled: m-1: answer');
      const roots = await callAndAnswer(
        url,
        headers,
        { id: 2, params: { name: 'demo___list_roots', arguments: {} } },
        () => ({
          result: { roots: [{ uri: 'file:///a' }, { uri: 'file:///b' }] },
        }),
      );
      expect(roots.response.result.content[0].text).toBe('roots: file:///a,file:///b');
    });

    it('relays a declined answer and multiple rounds in one call', async () => {
      const { headers } = await initSession(url, { capabilities: ALL });
      const declined = await callAndAnswer(
        url,
        headers,
        { id: 1, params: { name: 'demo___use_aws', arguments: { command: 'rm' } } },
        () => ({
          result: { action: 'decline' },
        }),
      );
      expect(declined.response.result.content[0].text).toBe('not executed (decline)');
      const answers = [{ name: 'Ada' }, { age: 36 }];
      const multi = await callAndAnswer(
        url,
        headers,
        { id: 2, params: { name: 'demo___multi_elicit', arguments: {} } },
        () => ({
          result: { action: 'accept', content: answers.shift() },
        }),
      );
      expect(multi.messages.filter((m) => m.method === 'elicitation/create')).toHaveLength(2);
      expect(multi.response.result.content[0].text).toBe('hello Ada, 36');
    });
  });

  describe('exception-based URL elicitation (-32042)', () => {
    it('relays the error with the client id and data intact; the retry succeeds', async () => {
      const { headers } = await initSession(url, { capabilities: ALL });
      const resource = `r-${kind.replace(' ', '-')}`;
      const first = await callAndAnswer(
        url,
        headers,
        { id: 'first', params: { name: 'demo___url_required', arguments: { resource: resource } } },
        () => accept,
      );
      expect(first.response.id).toBe('first');
      expect(first.response.error.code).toBe(-32042);
      const [asked] = first.response.error.data.elicitations;
      expect(asked).toMatchObject({
        mode: 'url',
        url: `${new URL(demo.url).origin}/consent/${asked.elicitationId}`,
        elicitationId: expect.any(String),
      });
      await clickOnConsentPage(asked.url, 'allow');
      const retry = await callAndAnswer(
        url,
        headers,
        { id: 'retry', params: { name: 'demo___url_required', arguments: { resource: resource } } },
        () => accept,
      );
      expect(retry.response.result.content[0].text).toBe(`authorized ${resource}`);
    });
  });

  describe('notifications', () => {
    it('maps progress tokens per call and relays progress and log messages on their own stream only', async () => {
      const { headers } = await initSession(url, { capabilities: ALL });
      const run = (token: string, steps: number) =>
        callAndAnswer(
          url,
          headers,
          {
            id: token,
            params: { name: 'demo___progress', arguments: { steps, delayMs: 20 }, _meta: { progressToken: token } },
          },
          () => accept,
        );
      const [a, b] = await Promise.all([run('tok-a', 3), run('tok-b', 4)]);
      const progressOf = (call: typeof a) =>
        call.messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params.progressToken);
      expect(progressOf(a)).toEqual(['tok-a', 'tok-a', 'tok-a']);
      expect(progressOf(b)).toEqual(['tok-b', 'tok-b', 'tok-b', 'tok-b']);
      expect(a.messages.filter((m) => m.method === 'notifications/message').map((m) => m.params.data)).toEqual([
        'step 1',
        'step 2',
        'step 3',
      ]);
      expect(a.response.result.content[0].text).toBe('done 3');
    });
  });

  describe('parallel calls in one session', () => {
    it('tracks each pending request independently and accepts answers in any order', async () => {
      const { headers } = await initSession(url, { capabilities: ALL });
      const calls = Array.from({ length: 6 }, (_, i) =>
        callAndAnswer(
          url,
          headers,
          { id: `p${i}`, params: { name: 'demo___confirm_action', arguments: { action: `a${i}` } } },
          async (asked) => {
            await new Promise((resolve) => setTimeout(resolve, (6 - i) * 30)); // later calls answer first
            const mine = asked.params.message === `Confirm action: a${i}?`;
            return {
              result: {
                action: mine && i % 2 === 0 ? 'accept' : 'decline',
                content: mine && i % 2 === 0 ? { confirm: true } : undefined,
              },
            };
          },
        ),
      );
      const results = await Promise.all(calls);
      expect(results.map((r) => r.response.result.content[0].text)).toEqual([
        'confirmed: a0',
        'not executed (decline)',
        'confirmed: a2',
        'not executed (decline)',
        'confirmed: a4',
        'not executed (decline)',
      ]);
    });
  });

  describe("the reference page's error table", () => {
    const answerOf = (id: unknown) => ({
      jsonrpc: '2.0',
      id,
      result: { action: 'accept', content: { confirm: true } },
    });

    it('refuses an answer when nothing is pending: 400 with -32600', async () => {
      const { headers } = await initSession(url, { capabilities: ALL });
      const res = await post(url, headers, answerOf('gw-nothing'));
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({
        code: -32600,
        message: expect.stringContaining('No matching pending request'),
      });
    });

    it('refuses an id that matches no pending request, a duplicate answer, and another session’s answer: 400 with -32600', async () => {
      const { headers } = await initSession(url, { capabilities: ALL });
      const other = await initSession(url, { capabilities: ALL });
      const statuses: Record<string, [number, number]> = {};
      const call = await callAndAnswer(
        url,
        headers,
        { id: 1, params: { name: 'demo___use_aws', arguments: { command: 'x' } } },
        async (asked) => {
          const wrong = await post(url, headers, answerOf('gw-AAAAAAAAAAAAAAAAAAAAAA'));
          statuses.wrong = [wrong.status, (await wrong.json()).error.code];
          const foreign = await post(url, other.headers, answerOf(asked.id));
          statuses.foreign = [foreign.status, (await foreign.json()).error.code];
          return accept;
        },
      );
      expect(call.response.result.content[0].text).toBe('executed: x');
      const duplicate = await post(url, headers, answerOf(call.messages[0].id));
      statuses.duplicate = [duplicate.status, (await duplicate.json()).error.code];
      expect(statuses).toEqual({ wrong: [400, -32600], foreign: [400, -32600], duplicate: [400, -32600] });
    });

    it('answers the target -32601 for a request the client did not declare, and forwards nothing', async () => {
      const formOnly = await initSession(url, { capabilities: { elicitation: { form: {} } } });
      for (const kindOfRequest of ['url', 'sampling', 'roots']) {
        const call = await callAndAnswer(
          url,
          formOnly.headers,
          { id: kindOfRequest, params: { name: 'demo___request_anyway', arguments: { kind: kindOfRequest } } },
          () => accept,
        );
        expect(call.messages).toHaveLength(1);
        expect(call.response.result.content[0].text).toMatch(/^refused: MCP error -32601: Method not found/);
      }
      const old = await initSession(url, {
        protocolVersion: '2025-03-26',
        capabilities: { elicitation: { form: {} } },
      });
      const tooOld = await callAndAnswer(
        url,
        old.headers,
        { id: 'old', params: { name: 'demo___request_anyway', arguments: { kind: 'form' } } },
        () => accept,
      );
      expect(tooOld.messages).toHaveLength(1); // 2025-03-26 has no elicitation, whatever the client declared
      expect(tooOld.response.result.content[0].text).toMatch(/^refused: MCP error -32601/);
      const none = await initSession(url);
      const call = await callAndAnswer(
        url,
        none.headers,
        { id: 'form', params: { name: 'demo___request_anyway', arguments: { kind: 'form' } } },
        () => accept,
      );
      expect(call.messages).toHaveLength(1);
      expect(call.response.result.content[0].text).toMatch(/^refused: MCP error -32601/);
    });

    it('answers DependencyFailedException when the target connection breaks, and removes the pending records', async () => {
      const fragile = await startDemoTarget();
      const alone = await gw.start({ targets: [{ name: 'fragile', url: fragile.url }] });
      try {
        const { headers, sessionId } = await initSession(alone.url, { capabilities: ALL });
        const res = await post(alone.url, headers, {
          jsonrpc: '2.0',
          id: 'b',
          method: 'tools/call',
          params: { name: 'fragile___use_aws', arguments: { command: 'x' } },
        });
        const messages: Json[] = [];
        for await (const event of sseEvents(res)) {
          if (!event.message) continue;
          messages.push(event.message);
          if (event.message.method === 'elicitation/create') {
            expect(await pendingItems(sessionId)).toHaveLength(1);
            await fragile.close();
          }
        }
        const last = messages[messages.length - 1];
        expect(last.id).toBe('b');
        expect(last.error.data).toMatchObject({ type: 'DependencyFailedException', target: 'fragile' });
        await eventually(async () => expect(await pendingItems(sessionId)).toEqual([]));
      } finally {
        await alone.close();
        await fragile.close();
      }
    });

    // The local server and the handler's invoker signal a client that left; Lambda does not (https://github.com/aws/aws-lambda-nodejs-runtime-interface-client/issues/145).
    // A 2025-06-18 stream cannot be resumed (a 2025-11-25 one can: test/integration/resumable-streams.test.ts).
    it('a 2025-06-18 client going away: cancelled at the target where the platform says so; on Lambda the call runs on', async () => {
      const { headers, sessionId } = await initSession(url, { capabilities: ALL, protocolVersion: '2025-06-18' });
      const abort = new AbortController();
      const res = await post(
        url,
        headers,
        {
          jsonrpc: '2.0',
          id: 'gone',
          method: 'tools/call',
          params: { name: 'demo___use_aws', arguments: { command: 'x' } },
        },
        abort.signal,
      );
      for await (const event of sseEvents(res)) {
        if (event.message?.method === 'elicitation/create') break; // leaving the loop cancels the body
      }
      abort.abort();
      if (kind === 'lambda runtime') {
        // Nothing tells the function: the call keeps waiting (pendingRequestTimeoutSeconds or the deadline ends it).
        // A duration: that nothing ends it has no event to wait for.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        expect(await pendingItems(sessionId)).toHaveLength(1);
        expect(demo.stats().cancelledRequestIds).not.toContain('c.s.gone');
      } else {
        await eventually(async () => expect(await pendingItems(sessionId)).toEqual([]));
        await eventually(() => expect(demo.stats().cancelledRequestIds).toContain('c.s.gone'));
      }
    });

    it('cancels a pending request past pendingRequestTimeoutSeconds', async () => {
      const impatient = await gw.start({ pendingRequestTimeoutSeconds: 1 });
      try {
        const { headers, sessionId } = await initSession(impatient.url, { capabilities: ALL });
        const res = await post(impatient.url, headers, {
          jsonrpc: '2.0',
          id: 'late',
          method: 'tools/call',
          params: { name: 'demo___use_aws', arguments: { command: 'x' } },
        });
        const messages: Json[] = [];
        for await (const event of sseEvents(res)) if (event.message) messages.push(event.message);
        expect(messages[0].method).toBe('elicitation/create');
        expect(messages[1]).toMatchObject({ id: 'late', error: { code: -32001 } });
        expect(await pendingItems(sessionId)).toEqual([]);
        await eventually(() => expect(demo.stats().cancelledRequestIds).toContain('c.s.late'));
        const lateAnswer = await post(impatient.url, headers, answerOf(messages[0].id));
        expect(lateAnswer.status).toBe(400);
      } finally {
        await impatient.close();
      }
    });
  });

  describe('long waits and cancellation', () => {
    it('sends SSE keep-alive comments while the client thinks', async () => {
      const { headers } = await initSession(url, { capabilities: ALL });
      const res = await post(url, headers, {
        jsonrpc: '2.0',
        id: 'k',
        method: 'tools/call',
        params: { name: 'demo___use_aws', arguments: { command: 'k' } },
      });
      // The client thinks until three keep-alives came after the question (none coming: the call never ends).
      let asked: Json | undefined;
      let commentsWhileThinking = 0;
      let answered: Promise<Response> | undefined;
      let response: Json | undefined;
      for await (const event of sseEvents(res)) {
        if (event.message?.method === 'elicitation/create') asked = event.message;
        else if (event.comment !== undefined && asked && !answered && ++commentsWhileThinking === 3)
          answered = post(url, headers, { jsonrpc: '2.0', id: asked.id, ...accept });
        else if (event.message?.id === 'k') {
          response = event.message;
          break;
        }
      }
      expect(commentsWhileThinking).toBe(3);
      expect((await answered)?.status).toBe(202);
      expect(response?.result.content[0].text).toBe('executed: k');
    });

    it('turns a long call without messages into a stream with keep-alives, for a client that takes both', async () => {
      const { headers } = await initSession(url, { capabilities: ALL });
      const res = await post(url, headers, {
        jsonrpc: '2.0',
        id: 'long',
        method: 'tools/call',
        params: { name: 'demo___slow', arguments: { ms: 500 } },
      });
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      let comments = 0;
      let last: Json | undefined;
      for await (const event of sseEvents(res)) {
        if (event.comment !== undefined) comments++;
        if (event.message) last = event.message;
      }
      expect(comments).toBeGreaterThanOrEqual(2);
      expect(last).toEqual({ jsonrpc: '2.0', id: 'long', result: { content: [{ type: 'text', text: 'slept 500' }] } });
    });

    it("forwards the client's notifications/cancelled to the target under the target's id", async () => {
      const { headers } = await initSession(url, { capabilities: ALL });
      const callsBefore = demo.stats().requestsByMethod['tools/call'] ?? 0;
      const res = await post(url, headers, {
        jsonrpc: '2.0',
        id: 42,
        method: 'tools/call',
        params: { name: 'demo___slow', arguments: { ms: 20000 } },
      });
      await eventually(() => expect(demo.stats().requestsByMethod['tools/call']).toBe(callsBefore + 1));
      const cancel = await post(url, headers, {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 42, reason: 'user' },
      });
      expect(cancel.status).toBe(202);
      await eventually(() => expect(demo.stats().cancelledRequestIds).toContain('c.n.42'));
      await res.body?.cancel();
    });
  });

  describe('the function deadline', () => {
    it('ends a call that would outlive the invocation with a retryable error, and cancels it at the target', async () => {
      // Lambda: deadline = remaining time - 1 s; local server: its request timeout.
      const short = await gw.start({}, { timeoutMs: kind === 'local server' ? 1500 : 2500 });
      try {
        const { headers } = await initSession(short.url, { capabilities: ALL });
        // The tool would take 20 s: the error (not its result) is the deadline's.
        const call = await callAndAnswer(
          short.url,
          headers,
          { id: 'deadline', params: { name: 'demo___slow', arguments: { ms: 20000 } } },
          () => accept,
        );
        expect(call.response.error).toMatchObject({ code: -32001, data: { retryable: true } });
        await eventually(() => expect(demo.stats().cancelledRequestIds).toContain('c.s.deadline'));
      } finally {
        await short.close();
      }
    });
  });

  describe('DynamoDB requests', () => {
    it('counts the requests of a call with one elicitation round', async () => {
      const { headers, sessionId } = await initSession(url, { capabilities: ALL });
      // This session's requests only: a call of an earlier test may still look at its own records.
      const counts = () => {
        const mine = new Map<string, number>();
        for (const r of dynamo.requests.filter((r) => r.body.includes(`S#${sessionId}`)))
          mine.set(r.operation, (mine.get(r.operation) ?? 0) + 1);
        return mine;
      };
      await callAndAnswer(
        url,
        headers,
        { id: 0, params: { name: 'demo___echo', arguments: { text: 'warm' } } },
        () => accept,
      );
      dynamo.reset();
      const echo = await callAndAnswer(
        url,
        headers,
        { id: 1, params: { name: 'demo___echo', arguments: { text: 'x' } } },
        () => accept,
      );
      // A call still running after 1 s looks for a cancellation marker (GetItem C#…); on a loaded machine
      // even an echo may: those looks are the clock's, not the call's.
      const withoutInput = Object.fromEntries(
        [...counts()]
          .map(([operation, count]) => [
            operation,
            operation === 'GetItem'
              ? count - dynamo.requests.filter((r) => r.operation === 'GetItem' && r.body.includes('"C#')).length
              : count,
          ])
          .filter(([, count]) => count !== 0),
      );
      dynamo.reset();
      await callAndAnswer(
        url,
        headers,
        { id: 2, params: { name: 'demo___use_aws', arguments: { command: 'x' } } },
        () => accept,
      );
      await eventually(() => expect(counts().get('BatchWriteItem')).toBe(2));
      const oneRound = Object.fromEntries(counts());
      // call: Query (the session, counting its pending records for the per-session cap); the answer:
      // UpdateItem (the answer recorded for the holder, which delivers it, conditioned on the record's
      // principal and its session's expiry: nothing is read first). GetItem: the holder's looks at its record while it
      // waits, the one that finds the answer included, so their count is the time taken. The
      // 2025-11-25 stream is resumable: its events are kept before they are sent (one BatchWriteItem:
      // the pending record, the priming event and the question that opened the stream), and one BatchWriteItem at the end
      // (the response kept as the stream's end; the other events and the pending record removed).
      // A call still running after the keep-alive interval answers as a stream, which in a 2025-11-25
      // session is resumable: its end is kept (one BatchWriteItem); on a loaded machine an echo can.
      expect(withoutInput).toEqual(echo.streamed ? { Query: 1, BatchWriteItem: 1 } : { Query: 1 });
      const { GetItem: looks, ...rest } = oneRound;
      expect(rest).toEqual({ Query: 1, UpdateItem: 1, BatchWriteItem: 2 });
      expect(looks).toBeGreaterThanOrEqual(1);
    });
  });
});
