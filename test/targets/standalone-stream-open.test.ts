import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { createLogger } from '../../lambda/observability/logger';
import type { JSONRPCNotification } from '../../lambda/protocol/types';
import { systemClock } from '../../lambda/scheduling/clock';
import { TargetEndpoint } from '../../lambda/targets/endpoint';
import { type LegacySession, LegacyTargetClient } from '../../lambda/targets/legacy-client';
import { StandaloneStreams } from '../../lambda/targets/standalone-streams';
import { listen } from '../support/loopback';
import { startV1PushServer, type V1PushServer } from '../support/servers/v1-push-server';

/**
 * When a call that listens on its target session's GET stream is sent: a real v1 SDK server (with
 * an event store, as the SDK's examples keep one) behind a loopback proxy that can hold back the
 * answer to a GET. The stream's open wait is long here (`openTimeoutMs`), so a call that waits for
 * the GET's answer waits for the proxy's release.
 */

interface HoldingProxy {
  url: string;
  /** Requests in the order they reached the proxy: `GET`, or the JSON-RPC method of a POST. */
  seen: string[];
  /** The `Last-Event-ID` of each GET that carried one. */
  resumedFrom: string[];
  /** Holds the answer to the next GET until `release()`; resolves when that GET arrived. */
  holdNextGet(): Promise<void>;
  release(): void;
  close(): Promise<void>;
}

/** Forwards one request; the answer's headers are passed on at once (an SSE stream may send nothing for a while). */
function forward(upstream: URL, req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  const out = httpRequest(
    { host: upstream.hostname, port: upstream.port, method: req.method, path: upstream.pathname, headers: req.headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      res.flushHeaders();
      answer.pipe(res);
    },
  );
  out.on('error', () => res.destroy());
  res.on('close', () => out.destroy());
  out.end(body);
}

async function holdingProxy(upstream: URL): Promise<HoldingProxy> {
  const seen: string[] = [];
  const resumedFrom: string[] = [];
  let hold: { arrived: () => void; released: Promise<void> } | undefined;
  let release: () => void = () => undefined;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method === 'POST') seen.push(String(JSON.parse(body.toString()).method ?? 'response'));
      else seen.push(req.method ?? '?');
      const lastEventId = req.headers['last-event-id'];
      if (req.method === 'GET' && typeof lastEventId === 'string') resumedFrom.push(lastEventId);
      const held = req.method === 'GET' ? hold : undefined;
      if (held) hold = undefined;
      held?.arrived();
      void (held?.released ?? Promise.resolve()).then(() => forward(upstream, req, res, body));
    });
  });
  const { base, close } = await listen(server);
  return {
    url: `${base}/mcp`,
    seen,
    resumedFrom,
    holdNextGet: () =>
      new Promise<void>((arrived) => {
        hold = {
          arrived,
          released: new Promise<void>((resolve) => {
            release = resolve;
          }),
        };
      }),
    release: () => release(),
    close,
  };
}

const STREAM_WAIT_MS = 60_000;
let target: V1PushServer;
let proxy: HoldingProxy;
let client: LegacyTargetClient;

beforeAll(async () => {
  target = await startV1PushServer();
  proxy = await holdingProxy(new URL(target.url));
  client = new LegacyTargetClient(new TargetEndpoint({ name: 'push', url: proxy.url }, systemClock), {
    name: 'gw',
    version: '1',
  });
});
afterAll(async () => {
  proxy.release();
  await proxy?.close();
  await target?.close();
});

async function openSession(): Promise<LegacySession> {
  return (await client.initialize('2025-11-25', { elicitation: { form: {} } })).session;
}

function call(session: LegacySession, name: string, args: Record<string, unknown>) {
  return client.request(session, {
    jsonrpc: '2.0',
    id: `c.n.${Math.random()}`,
    method: 'tools/call',
    params: { name, arguments: args },
  });
}

/** Messages the target sent on the session's GET stream, as a listening call receives them. */
function listener(notifications: JSONRPCNotification[], options: { resumable?: boolean }) {
  return {
    onServerRequest: () => undefined,
    onNotification: (n: JSONRPCNotification) => notifications.push(n),
    ...options,
  };
}

const logged = (notifications: JSONRPCNotification[]) =>
  notifications.filter((n) => n.method === 'notifications/message').map((n) => (n.params as { data?: unknown }).data);

/** Attaches, then resolves with whether attaching waited for the (held) GET to be answered. */
async function attachWhileGetHeld(
  streams: StandaloneStreams,
  session: LegacySession,
  notifications: JSONRPCNotification[],
  options: { resumable?: boolean },
): Promise<{ waitedForGet: boolean; detach: () => Promise<void> }> {
  const getArrived = proxy.holdNextGet();
  let attached: (() => Promise<void>) | undefined;
  const attaching = streams.attach(client, session, listener(notifications, options)).then((detach) => {
    attached = detach;
    return detach;
  });
  await getArrived;
  for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
  const waitedForGet = attached === undefined;
  if (waitedForGet) proxy.release();
  return { waitedForGet, detach: await attaching };
}

/** A first call on a fresh target session: the target (an event store) logs on its GET stream, with an event id. */
async function firstCallWithALog(streams: StandaloneStreams, session: LegacySession, options: { resumable?: boolean }) {
  const first: JSONRPCNotification[] = [];
  const detach = await streams.attach(client, session, listener(first, options));
  await call(session, 'long_task', { steps: 1 });
  await detach();
  expect(logged(first)).toContain('long_task finished 1');
}

test("a target session only this instance reads: the next call goes out with a GET resuming from the stream's last event id, and gets what the target sent meanwhile", async () => {
  const streams = new StandaloneStreams(createLogger('SILENT'), systemClock, { openTimeoutMs: STREAM_WAIT_MS });
  const session = await openSession();
  await firstCallWithALog(streams, session, { resumable: true });

  // The next call's GET is held back: the call is sent and answered meanwhile.
  const from = proxy.seen.length;
  const resumedBefore = proxy.resumedFrom.length;
  const second: JSONRPCNotification[] = [];
  const { waitedForGet, detach } = await attachWhileGetHeld(streams, session, second, { resumable: true });
  expect(waitedForGet).toBe(false);
  const response = await call(session, 'long_task', { steps: 1 });
  expect(response).toMatchObject({ result: { content: [{ text: 'finished 1 steps' }] } });
  expect(proxy.seen.slice(from).sort()).toEqual(['GET', 'tools/call']);
  expect(proxy.resumedFrom.length).toBe(resumedBefore + 1);
  // Released, the resumed GET replays the log the target sent while no stream was open: the call gets it.
  proxy.release();
  await detach();
  expect(logged(second)).toContain('long_task finished 1');
});

test("a target session other instances read too (a 2025 session's): the GET is open before the call, even after its stream gave an event id", async () => {
  const streams = new StandaloneStreams(createLogger('SILENT'), systemClock, { openTimeoutMs: STREAM_WAIT_MS });
  const session = await openSession();
  await firstCallWithALog(streams, session, {});
  const resumedBefore = proxy.resumedFrom.length;
  const { waitedForGet, detach } = await attachWhileGetHeld(streams, session, [], {});
  expect(waitedForGet).toBe(true);
  await call(session, 'wait', { ms: 0 });
  await detach();
  // Opened afresh: resuming from this instance's last id could replay what another instance relayed.
  expect(proxy.resumedFrom.length).toBe(resumedBefore);
});

test('a GET stream that never gave an event id is open before the call is sent', async () => {
  const streams = new StandaloneStreams(createLogger('SILENT'), systemClock, { openTimeoutMs: STREAM_WAIT_MS });
  const session = await openSession();
  const { waitedForGet, detach } = await attachWhileGetHeld(streams, session, [], { resumable: true });
  expect(waitedForGet).toBe(true);
  await call(session, 'wait', { ms: 0 });
  await detach();
});
