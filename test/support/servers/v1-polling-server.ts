import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { type EventStore, StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ElicitResultSchema, isInitializeRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { SessionEventStore } from './v1-push-server';

/**
 * A 2025-11-25 server that polls with SSE (SEP-1699), written with the v1 SDK as its docs show:
 * `StreamableHTTPServerTransport` with an event store (so every POST stream starts with a priming
 * event: an `id`, empty data, and `retry: <retryMs>`) and a tool that ends its call's stream mid-call
 * with `extra.closeSSEStream()`. The client must reconnect with GET + `Last-Event-ID` to see the rest.
 *
 * `poll_deploy`: logs on the call's stream, ends the stream, waits until the client resumed it (at
 * most 5 s), asks a form elicitation on the resumed stream, ends the stream again once answered, and
 * returns the result (kept in the event store, replayed on the second resume).
 *
 * `deploy`: asks once on the call's own stream (`extra.sendRequest`) and answers after the answer:
 * with an event store its stream can be resumed after any event, without one it cannot.
 *
 * `answer_while_closed`: built like the official conformance suite's everything-server
 * (`test_reconnection`): ends its stream with the transport's `closeSSEStream(requestId)` and answers
 * ANSWER_AFTER_CLOSE_MS later — before a client that waits the `retry` (as the 2025-11-25 transports
 * page says it MUST) has reconnected, so the result reaches it only from the event store. The v1 SDK
 * keeps what is sent while a request's stream is closed from 1.30.0 on; 1.29.0 and earlier drop it
 * (and throw inside the transport), so with those such a tool loses its result for every client that
 * waits the `retry`, the official ones directly as well as the gateway.
 *
 * Without an event store (`eventStore: false`) the same tool ends its stream with no event id ever
 * sent (`transport.closeSSEStream`, which the SDK exposes either way): nothing to resume from.
 * `eventStore: 'stream-keyed'` is the everything-server's kind of store (StreamKeyedEventStore below).
 */

export interface PollingServerStats {
  /** GET requests with `Last-Event-ID`, with the headers a resumption must carry. */
  resumes: Array<{ lastEventId: string; sessionId?: string; protocolVersion?: string; accept?: string }>;
  toolCalls: number;
  /** Elicitation answers the tool received, in order. */
  answers: unknown[];
  /** Results `answer_while_closed` sent while its stream was closed (no reconnect had come yet). */
  answeredWhileClosed: number;
}

export interface PollingServer {
  url: string;
  stats: PollingServerStats;
  close(): Promise<void>;
}

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

/** The one question both asking tools put (form elicitation). */
const confirmDeploy = (env: string) => ({
  method: 'elicitation/create' as const,
  params: {
    mode: 'form' as const,
    message: `Deploy to ${env}?`,
    requestedSchema: {
      type: 'object' as const,
      properties: { confirm: { type: 'boolean' as const } },
      required: ['confirm'],
    },
  },
});

/** The SDK's default (60 s) is shorter than a person may take; a tool that asks people sets its own. */
const ASK_TIMEOUT = { timeout: 600_000 };

/** How long `answer_while_closed` works after ending its stream (the everything-server's 100 ms). */
const ANSWER_AFTER_CLOSE_MS = 100;

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw ? JSON.parse(raw) : undefined;
}

function jsonError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

/**
 * An event store as the conformance suite's everything-server keeps one: an event's id is
 * `<streamId>::<epoch ms>_<uuid>` (opaque and long, unlike SessionEventStore's counter), a replay
 * sends the stream's events whose ids sort after the one named, and there is no
 * `getStreamIdForEventId`, so the SDK does not refuse (409) a reconnect while the stream is connected.
 */
class StreamKeyedEventStore implements EventStore {
  private readonly events = new Map<string, { streamId: string; message: JSONRPCMessage }>();

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}::${Date.now()}_${randomUUID()}`;
    this.events.set(id, { streamId, message });
    return id;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const streamId = lastEventId.split('::')[0] ?? '';
    const later = [...this.events]
      .filter(([id, event]) => event.streamId === streamId && id > lastEventId)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    // Priming events are stored as `{}`: nothing to send again.
    for (const [id, { message }] of later) if (Object.keys(message).length > 0) await send(id, message);
    return streamId;
  }
}

export async function startPollingServer(
  options: { retryMs?: number; eventStore?: boolean | 'stream-keyed' } = {},
): Promise<PollingServer> {
  const withStore = options.eventStore ?? true;
  const newStore = (): EventStore =>
    options.eventStore === 'stream-keyed' ? new StreamKeyedEventStore() : new SessionEventStore();
  const stats: PollingServerStats = { resumes: [], toolCalls: 0, answers: [], answeredWhileClosed: 0 };
  const transports: Record<string, StreamableHTTPServerTransport> = {};
  const servers = new Set<McpServer>();

  let closed = false;
  const RESUME_WAIT_MAX_MS = 5000;
  /** Told of each resume (and of the close), to end the waits of `resumed`. */
  const onResume = new Set<() => void>();
  /**
   * Until the client's next resume, or RESUME_WAIT_MAX_MS at most: a target that polls answers anyway
   * after that (the scenario, a bound: a gateway that never resumes still gets its answer).
   */
  const resumed = (before: number): Promise<void> =>
    new Promise((resolve) => {
      const done = () => {
        clearTimeout(bound);
        onResume.delete(look);
        resolve();
      };
      const look = () => {
        if (stats.resumes.length > before || closed) done();
      };
      const bound = setTimeout(done, RESUME_WAIT_MAX_MS);
      onResume.add(look);
      look();
    });

  const build = (transport: () => StreamableHTTPServerTransport): McpServer => {
    const server = new McpServer({ name: 'v1-polling-server', version: '1.0.0' }, { capabilities: { logging: {} } });
    server.registerTool(
      'poll_deploy',
      {
        description: 'Ends its stream twice while it works (SSE polling) and asks once.',
        inputSchema: { env: z.string() },
      },
      async ({ env }, extra) => {
        stats.toolCalls++;
        await extra.sendNotification({
          method: 'notifications/message',
          params: { level: 'info', data: `preparing ${env}` },
        });
        const before = stats.resumes.length;
        if (extra.closeSSEStream) extra.closeSSEStream();
        else transport().closeSSEStream(extra.requestId);
        await resumed(before);
        const answer = await extra.sendRequest(confirmDeploy(env), ElicitResultSchema, ASK_TIMEOUT);
        stats.answers.push(answer);
        extra.closeSSEStream?.();
        if (answer.action === 'accept' && answer.content?.confirm === true) return text(`deployed to ${env}`);
        return text(`not deployed to ${env} (${answer.action})`);
      },
    );
    server.registerTool(
      'deploy',
      {
        description: "Asks on the call's own stream (form elicitation), as most tools do, and reports progress.",
        inputSchema: { env: z.string() },
      },
      async ({ env }, extra) => {
        stats.toolCalls++;
        const answer = await extra.sendRequest(confirmDeploy(env), ElicitResultSchema, ASK_TIMEOUT);
        stats.answers.push(answer);
        await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'deploying' } });
        if (answer.action === 'accept' && answer.content?.confirm === true) return text(`deployed to ${env}`);
        return text(`not deployed to ${env} (${answer.action})`);
      },
    );
    server.registerTool(
      'answer_while_closed',
      {
        description: 'Ends its stream at once and answers shortly after, before the client can have reconnected.',
        inputSchema: {},
      },
      async (_args, extra) => {
        stats.toolCalls++;
        const before = stats.resumes.length;
        // The transport's own method, as the everything-server calls it (not `extra.closeSSEStream`).
        transport().closeSSEStream(extra.requestId);
        // The scenario, a duration: the answer comes shortly after the close, before a reconnect.
        await new Promise((resolve) => setTimeout(resolve, ANSWER_AFTER_CLOSE_MS));
        if (stats.resumes.length === before) stats.answeredWhileClosed++;
        return text('answered while the stream was closed');
      },
    );
    server.registerTool(
      'slow_deploy',
      {
        description:
          'Works for `ms` milliseconds (one log message first), then answers: longer than a function timeout.',
        inputSchema: { env: z.string(), ms: z.number() },
      },
      async ({ env, ms }, extra) => {
        stats.toolCalls++;
        await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'working' } });
        await new Promise((resolve) => setTimeout(resolve, ms));
        return text(`deployed to ${env} after ${ms} ms`);
      },
    );
    return server;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if ((req.url ?? '').split('?')[0] !== '/mcp') return void res.writeHead(404).end();
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    if (req.method === 'POST') {
      const body = await readJson(req);
      let transport = sessionId ? transports[sessionId] : undefined;
      if (!transport && !sessionId && isInitializeRequest(body)) {
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          ...(withStore ? { eventStore: newStore(), retryInterval: options.retryMs ?? 50 } : {}),
          onsessioninitialized: (id) => {
            transports[id] = created;
          },
        });
        const server = build(() => created);
        servers.add(server);
        await server.connect(created);
        transport = created;
      }
      if (!transport) return jsonError(res, sessionId ? 404 : 400, sessionId ? 'Session not found' : 'No session');
      await transport.handleRequest(req, res, body);
      return;
    }
    if (req.method === 'GET' || req.method === 'DELETE') {
      const transport = sessionId ? transports[sessionId] : undefined;
      if (!transport) return jsonError(res, sessionId ? 404 : 400, 'Invalid or missing session ID');
      const lastEventId = req.headers['last-event-id'];
      if (req.method === 'GET' && typeof lastEventId === 'string') {
        stats.resumes.push({
          lastEventId,
          sessionId,
          protocolVersion: req.headers['mcp-protocol-version'] as string | undefined,
          accept: req.headers.accept,
        });
        for (const tell of [...onResume]) tell();
      }
      await transport.handleRequest(req, res);
      return;
    }
    res.writeHead(405, { allow: 'GET, POST, DELETE' }).end();
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) jsonError(res, 500, String(error));
      else res.destroy();
    });
  });
  http.requestTimeout = 0;
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stats,
    close: async () => {
      closed = true;
      for (const tell of [...onResume]) tell();
      await Promise.allSettled([...servers].map((s) => s.close()));
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}
