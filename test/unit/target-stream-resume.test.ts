import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createLogger } from '../../lambda/observability/logger';
import { TargetEndpoint } from '../../lambda/targets/endpoint';
import { LegacyTargetClient } from '../../lambda/targets/legacy-client';
import { StandaloneStreams } from '../../lambda/targets/standalone-streams';
import type { ResumePolicy } from '../../lambda/targets/stream-resume';
import { listen } from '../support/loopback';

/**
 * How the gateway resumes a target's POST stream that ended before the response (SSE polling,
 * SEP-1699), against a scripted loopback SSE target: the wait it honours, the headers it sends, and
 * the bounds that end a call whose stream cannot be resumed. Durations are injected (short).
 */

type Step = (req: IncomingMessage, res: ServerResponse) => void;

interface Scripted {
  url: string;
  /** Every request: method, Last-Event-ID, session id, and when it arrived (ms since the previous one ended). */
  seen: Array<{ method: string; lastEventId?: string; sessionId?: string; gapMs: number }>;
  close(): Promise<void>;
}

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

function sse(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(body);
}

/** A target answering its n-th request with `steps[n]` (the last step repeats). */
async function scripted(steps: Step[]): Promise<Scripted> {
  const seen: Scripted['seen'] = [];
  let lastEnd = performance.now();
  const server = createServer((req, res) => {
    req.resume();
    req.once('end', () => {
      seen.push({
        method: req.method ?? '',
        lastEventId: req.headers['last-event-id'] as string | undefined,
        sessionId: req.headers['mcp-session-id'] as string | undefined,
        gapMs: performance.now() - lastEnd,
      });
      res.once('close', () => {
        lastEnd = performance.now();
      });
      const step = steps[Math.min(seen.length - 1, steps.length - 1)];
      step?.(req, res);
    });
  });
  const { base, close } = await listen(server);
  return { url: `${base}/mcp`, seen, close };
}

function endpoint(url: string, policy = POLICY): TargetEndpoint {
  return new TargetEndpoint(
    { name: 'poller', url } as ConstructorParameters<typeof TargetEndpoint>[0],
    undefined,
    undefined,
    policy,
  );
}

describe('resuming a target stream that ended before the response', () => {
  const targets: Scripted[] = [];
  const start = async (steps: Step[]) => {
    const target = await scripted(steps);
    targets.push(target);
    return target;
  };
  afterAll(async () => {
    for (const target of targets) await target.close();
  });

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
    expect(target.seen[1]?.gapMs).toBeGreaterThanOrEqual(300);
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
    expect(target.seen[1]?.gapMs).toBeGreaterThanOrEqual(POLICY.defaultRetryMs);
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

  it('an aborted call stops waiting for the reconnect', async () => {
    const target = await start([(_req, res) => sse(res, 'id: e1\nretry: 5000\ndata:\n\n')]);
    const abort = new AbortController();
    const call = endpoint(target.url).request(REQUEST, HEADERS, { resumable: true, signal: abort.signal });
    setTimeout(() => abort.abort(), 50);
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    expect(target.seen.map((s) => s.method)).toEqual(['POST']);
  });
});

describe("reopening a target session's GET stream that the target ended", () => {
  it("waits the target's retry before reopening with Last-Event-ID", async () => {
    const target = await scripted([
      (_req, res) => sse(res, 'id: g1\nretry: 300\ndata:\n\n'),
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': open\n\n');
      },
    ]);
    const streams = new StandaloneStreams(createLogger('SILENT'));
    const client = new LegacyTargetClient(endpoint(target.url), { name: 'gw', version: '1' });
    const detach = await streams.attach(
      client,
      { targetSessionId: 'target-session-1', protocolVersion: '2025-11-25' },
      { onServerRequest: () => undefined },
    );
    try {
      for (let waited = 0; target.seen.length < 2 && waited < 5000; waited += 20)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(target.seen.map((s) => [s.method, s.lastEventId])).toEqual([
        ['GET', undefined],
        ['GET', 'g1'],
      ]);
      expect(target.seen[1]?.gapMs).toBeGreaterThanOrEqual(300);
    } finally {
      await detach();
      await target.close();
    }
  });
});
