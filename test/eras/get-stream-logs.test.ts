import { createServer, request as httpRequest } from 'node:http';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolResultSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { LocalGateway } from '../../dev/local-gateway';
import { startGateway } from '../modern/helpers';
import { listen } from '../support/loopback';
import { eventually } from '../support/mcp-http';
import { startV1PushServer, type V1PushServer } from '../support/servers/v1-push-server';
import { CAPABILITIES, type ClientKind, connectClient } from './clients';

/**
 * Log messages a 2025 target sends on its session's GET stream just before its tool returns (the v1
 * SDK's `sendLoggingMessage` in the `long_task` tool of the era tests' v1 server), for back-to-back
 * calls. Without a client GET stream, the gateway opens the target's GET stream for each call and
 * closes it when the call ends; a target that has not yet noticed the close refuses the next one
 * (409) and drops what it sends meanwhile. Here the network is slow to tell: the target learns that a
 * GET stream closed only once the next GET has reached it, or TOLD_WITHIN_MS later (a proxy), so it
 * refuses back-to-back calls' GETs, as it may under load or across a real network.
 *
 * A 2025 client's own GET stream (the v1 SDK opens one after initializing) changes that: once it
 * listens to the target session, it keeps the target's GET stream open across calls and takes what
 * the target sends there. When it starts listening depends on timing (the target session must exist:
 * at the stream's open or its next rescan), so each case sets up one situation on purpose: the first
 * v1 client opens no GET stream (a client MAY skip it; its fetch answers the GET with 405 itself, and
 * the transport goes on without one), the last one opens its GET stream only once the target session
 * exists.
 */

// Each call waits for the gateway's second GET after the target's refusal: 30 s for a round beside a
// second copy of the suite would not be unusual.
jest.setTimeout(120_000);

let target: V1PushServer;
let proxy: { base: string; close(): Promise<void> };
let gateway: LocalGateway;
let conflicts = 0;
let targetGets = 0;
/** GETs the target has not answered yet, and answered 200 and still open. */
let unansweredGets = 0;
let openGetStreams = 0;
let lastGetStatus = 0;
/** Tells the target that the gateway closed its last GET stream (held back until the next GET). */
let untold: (() => void) | undefined;
/** At the latest, the target learns that a GET stream closed this long after. */
const TOLD_WITHIN_MS = 800;

beforeAll(async () => {
  target = await startV1PushServer();
  const upstream = new URL(target.url);
  proxy = await listen(
    createServer((req, res) => {
      const isGet = req.method === 'GET';
      if (isGet) {
        targetGets++;
        unansweredGets++;
      }
      // The GET closed before this one is told to the target only now, after this one reached it.
      const tellClosed = isGet ? untold : undefined;
      if (isGet) untold = undefined;
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: upstream.pathname,
          headers: req.headers,
        },
        (answer) => {
          if (answer.statusCode === 409) conflicts++;
          if (isGet) {
            unansweredGets--;
            lastGetStatus = answer.statusCode ?? 0;
            if (lastGetStatus === 200) {
              openGetStreams++;
              res.on('close', () => openGetStreams--);
            }
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          tellClosed?.();
        },
      );
      forward.on('error', () => {
        if (isGet && !res.headersSent) unansweredGets--;
        res.destroy();
      });
      res.on('close', () => {
        if (!isGet) return void forward.destroy();
        untold?.(); // at most one close held back: the target learns of the older one now
        const tell = () => forward.destroy();
        untold = tell;
        // Late, not never: a target learns of a close within its connection's own time. A bound, not a wait.
        setTimeout(() => {
          if (untold !== tell) return;
          untold = undefined;
          tell();
        }, TOLD_WITHIN_MS);
      });
      req.pipe(forward);
    }),
  );
  gateway = await startGateway(
    {
      targets: [{ name: 'legacy', url: `${proxy.base}/mcp`, era: 'legacy' }],
      // The client's GET stream lasts the whole test: one that ends (after 5 s by default) and is
      // reopened leaves a gap in which calls open the target's stream themselves, as they should. The
      // 30 calls take longer than 5 s on a loaded machine.
      clientStreamHoldSeconds: 600,
    },
    // A stream is held at most until shortly before the request's deadline (the helper's 20 s would
    // end it after 17 s, as a loaded machine's 30 calls may take): the hold above then decides.
    { dynamodbEndpoint: 'embedded', requestTimeoutMs: 900_000 },
  );
});
afterAll(async () => {
  await gateway?.close();
  await proxy?.close();
  await target?.close();
});

/**
 * A v1 SDK client whose GET requests go through `get` (the transport's `fetch` option). It declares
 * the input capabilities: only then does a call listen on the target's GET stream.
 */
async function connectV1(get: FetchLike) {
  const logs: Array<{ level: string; data: unknown }> = [];
  const client = new V1Client({ name: 'get-stream-logs', version: '1.0.0' }, { capabilities: CAPABILITIES });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push({ level: n.params.level, data: n.params.data });
  });
  const transport = new V1Transport(new URL(gateway.url), {
    fetch: (url, init) => (init?.method === 'GET' ? get(url, init) : fetch(url, init)),
  });
  await client.connect(transport, { timeout: 5000 });
  await client.setLoggingLevel('warning', { timeout: 5000 });
  const callTool = () =>
    client.callTool({ name: 'legacy___long_task', arguments: { steps: 1 } }, CallToolResultSchema, { timeout: 5000 });
  return { client, logs, callTool };
}

async function until(done: () => boolean): Promise<void> {
  await eventually(() => expect(done()).toBe(true));
}

const FINISHED = { level: 'warning', data: 'long_task finished 1' };

async function backToBack(
  callTool: () => Promise<unknown>,
  logs: ReadonlyArray<unknown>,
): Promise<{ arrivedWithResult: number }> {
  let arrivedWithResult = 0;
  for (let i = 0; i < 30; i++) {
    const seen = logs.length;
    await callTool();
    if (logs.length > seen) arrivedWithResult++;
  }
  return { arrivedWithResult };
}

/**
 * 30 back-to-back calls, each bringing every log message, in the situation the tests are about: the
 * target refuses each call's GET stream while it still thinks the last one open.
 */
async function refusedRound(callTool: () => Promise<unknown>, logs: unknown[]): Promise<void> {
  const conflictsBefore = conflicts;
  logs.length = 0;
  const { arrivedWithResult } = await backToBack(callTool, logs);
  expect(arrivedWithResult).toBe(30);
  expect(logs).toEqual(Array(30).fill(FINISHED));
  // Calls' GETs found the target still holding the last one (every one but the first on a quiet
  // machine; on a loaded one, a call more than TOLD_WITHIN_MS after the last does not).
  expect(conflicts).toBeGreaterThan(conflictsBefore);
}

test('v1 client without a GET stream: 30 back-to-back calls, each log message reaches the client', async () => {
  const { client, logs, callTool } = await connectV1(async () => new Response(null, { status: 405 }));
  try {
    await refusedRound(callTool, logs);
  } finally {
    await client.close();
  }
});

test.each(['v2 pin 2026-07-28'] as ClientKind[])(
  '%s client: 30 back-to-back calls, each log message reaches the client',
  async (kind) => {
    const client = await connectClient(kind, gateway.url, 5000);
    try {
      const meta = { 'io.modelcontextprotocol/logLevel': 'warning' };
      await refusedRound(() => client.callTool('legacy___long_task', { steps: 1 }, { meta }), client.logs);
    } finally {
      await client.close();
    }
  },
);

test('v1 client with its GET stream: the target stream stays open across 30 calls, each log message reaches the client', async () => {
  // The client's GET stream is held back until the target session exists (after the first call), so
  // the gateway's stream listens to it from its open on (the response waits for that).
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let opened: () => void = () => undefined;
  const streamOpen = new Promise<void>((resolve) => {
    opened = resolve;
  });
  const { client, logs, callTool } = await connectV1(async (url, init) => {
    await released;
    const response = await fetch(url, init);
    opened();
    return response;
  });
  try {
    await callTool();
    release();
    await streamOpen;
    // The client's stream may answer before the gateway's GET to the target is open (it waits for it a
    // bounded time, and the target may first refuse it while it has not seen the first call's stream
    // close): count from the moment the one stream the calls share is open.
    await until(() => unansweredGets === 0 && openGetStreams === 1 && lastGetStatus === 200);
    const conflictsBefore = conflicts;
    const getsBefore = targetGets;
    for (let i = 0; i < 30; i++) await callTool();
    // Each log message arrives on the client's GET stream, not necessarily before its call's result.
    await until(() => logs.length >= 31);
    expect(logs).toEqual(Array(31).fill(FINISHED));
    // Calls no longer close and reopen the target's GET stream, so the target had nothing to refuse.
    expect(targetGets).toBe(getsBefore);
    expect(conflicts).toBe(conflictsBefore);
  } finally {
    await client.close();
  }
});
