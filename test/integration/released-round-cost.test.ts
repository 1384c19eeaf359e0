import { initSession, type Json, post, sessionItems, sseEvents } from '../support/mcp-http';
import { startPollingServer } from '../support/servers/v1-polling-server';
import { startV2ModernServer } from '../support/servers/v2-modern-server';
import { withGateway } from '../support/with-gateway';

/**
 * What a released elicitation round costs in DynamoDB requests, step by step, through two instances
 * with raw HTTP (so every step is one request and the counts are exact): the call until its stream is
 * released, the answer (other instance), and the client's reconnect that takes the call over and gets
 * the result. Published in docs/performance.md; a change here is a change of the cost model.
 */

const ALL = { elicitation: { form: {} } };

async function until(res: Response, stop: (message: Json | undefined, id?: string) => boolean) {
  const seen: Array<{ id?: string; message?: Json }> = [];
  for await (const event of sseEvents(res)) {
    seen.push({ id: event.id, message: event.message });
    if (stop(event.message, event.id)) break;
  }
  return seen;
}

describe('a released elicitation round', () => {
  const gw = withGateway(
    (t) => ({
      logLevel: 'SILENT',
      // The client is released after the grace period (the default would hold a client never seen resuming).
      streamRelease: 'always',
      targets: [
        { name: 'poll', url: t.poll.url },
        { name: 'modern', url: t.modern.url },
      ],
      streamReleaseAfterSeconds: 0.2,
      streamReleaseRetryMs: 100,
    }),
    { instances: 2, targets: { poll: () => startPollingServer(), modern: () => startV2ModernServer() } },
  );
  const a = () => gw.instances[0]!.url;
  const b = () => gw.instances[1]!.url;
  const counted = async (step: () => Promise<void>) => {
    gw.dynamo.reset();
    await step();
    return Object.fromEntries([...gw.dynamo.counts].sort());
  };

  it.each([
    ['a 2026-07-28 target', 'modern___deploy'],
    ['a 2025 target with an event store', 'poll___deploy'],
  ])(
    '%s: the call until released, the answer, the reconnect that finishes it; nothing of the call is left',
    async (_, tool) => {
      const { headers, sessionId } = await initSession(a(), { capabilities: ALL });
      let question: Json | undefined;
      let lastId: string | undefined;
      const call = await counted(async () => {
        const res = await post(a(), headers, {
          jsonrpc: '2.0',
          id: 'c1',
          method: 'tools/call',
          params: { name: tool, arguments: { env: 'prod' } },
        });
        // The stream ends (released) after the question: no response on it.
        const events = await until(res, () => false);
        question = events.find((e) => e.message?.method === 'elicitation/create')?.message;
        lastId = events.filter((e) => e.id).at(-1)?.id;
        expect(events.some((e) => e.message && 'result' in e.message)).toBe(false);
      });
      expect(question).toBeDefined();
      const answer = await counted(async () => {
        const res = await post(b(), headers, {
          jsonrpc: '2.0',
          id: question!.id,
          result: { action: 'accept', content: { confirm: true } },
        });
        expect(res.status).toBe(202);
      });
      const reconnect = await counted(async () => {
        const res = await fetch(b(), {
          headers: { ...headers, accept: 'text/event-stream', 'last-event-id': lastId! },
        });
        const events = await until(res, (message) => message?.id === 'c1');
        expect(events.at(-1)?.message).toMatchObject({ id: 'c1', result: { content: [{ text: 'deployed to prod' }] } });
      });
      // GetItem is the held answer's poll (100 ms backing off): its count follows the clock, the rest does not.
      const polls = (counts: Record<string, number>) => ({
        ...counts,
        ...(counts.GetItem ? { GetItem: expect.any(Number) } : {}),
      });
      // The stream opens at the call's first message, or after a second for keep-alives when asking takes
      // longer (a loaded machine): its priming event waits 50 ms for the first message to be kept with it
      // (http/sse.ts), and is otherwise kept alone with a PutItem. For the 2026 target the question then
      // follows alone too (a PutItem, where the two shared a BatchWriteItem); the 2025 target's question
      // is kept with its pending record either way.
      const modern = tool.startsWith('modern');
      const primedAlone = modern ? call.PutItem === 5 && !call.BatchWriteItem : call.PutItem === 4;
      const callCounts = primedAlone
        ? {
            ...call,
            PutItem: call.PutItem! - (modern ? 2 : 1),
            BatchWriteItem: (call.BatchWriteItem ?? 0) + (modern ? 1 : 0),
          }
        : call;
      expect({ call: polls(callCounts), answer, reconnect: polls(reconnect) }).toEqual(
        tool.startsWith('modern')
          ? {
              // session Query (its pending records counted for the cap); BatchWriteItem: the priming event with the
              // question event; PutItem: held record, waiting call held, released
              call: { BatchWriteItem: 1, GetItem: expect.any(Number), PutItem: 3, Query: 1 },
              // the session with the record (BatchGetItem), the answer stored (UpdateItem)
              answer: { BatchGetItem: 1, UpdateItem: 1 },
              // session, stream replay, stream read for the takeover (Query ×3); waiting call read, taken over (GetItem, PutItem:
              // the round it goes on with is the step taken over, not written again); the result as the stream's end
              // (BatchWriteItem); the waiting call (conditional on its holder, no read first) and the record removed (DeleteItem ×2)
              reconnect: { BatchWriteItem: 1, DeleteItem: 2, GetItem: expect.any(Number), PutItem: 1, Query: 3 },
            }
          : {
              // BatchWriteItem: the pending record, priming and the question; PutItem: the waiting call (held,
              // then released), and one more hold write
              // (and the held answer's poll, when the release came late enough for one: a loaded machine)
              call: {
                BatchWriteItem: 1,
                PutItem: 3,
                Query: 1,
                ...(call.GetItem ? { GetItem: expect.any(Number) } : {}),
              },
              // claim, settle (no holder acknowledgement: the call can be taken over)
              answer: { BatchGetItem: 1, UpdateItem: 2 },
              reconnect: { BatchWriteItem: 1, DeleteItem: 2, GetItem: expect.any(Number), PutItem: 2, Query: 3 },
            },
      );
      // After the call: its stream's end alone (kept for a client that missed it); no pending records, no waiting call.
      const left = (await sessionItems(gw.dynamodbEndpoint, sessionId)).filter(
        (item) => item.sk !== 'SESSION' && !String(item.sk).startsWith('T#'),
      );
      // The stream's end, and its head (the request it answered, marked ended; it goes with the session).
      expect(left).toEqual([
        expect.objectContaining({ seq: 0, requestId: 'c1', ended: true }),
        expect.objectContaining({ sk: expect.stringMatching(/^E#/), end: true }),
      ]);
    },
  );
});
