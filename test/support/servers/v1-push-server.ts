import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { MemoryEventStore as SessionEventStore } from '../../../examples/targets/event-store';
import { liveStreamSessions } from './serve-fetch';

/**
 * A 2025-era MCP server written the way the v1 SDK's own examples write one
 * (`examples/server/simpleStreamableHttp.ts` in `@modelcontextprotocol/sdk`): `McpServer` + one sessionful
 * `StreamableHTTPServerTransport` per session, kept in a map by session id, standalone GET stream
 * and DELETE served by the transport, an in-memory event store for resumability (`Last-Event-ID`).
 *
 * Its tools ask the client the way much real server code does: `server.server.elicitInput(params)`,
 * `server.server.createMessage(...)`, `server.server.listRoots()` with NO `relatedRequestId`, so the
 * SDK sends them on the session's standalone GET stream (or stores them in the event store and sends
 * nothing when no GET stream is open). Log messages go out with `server.sendLoggingMessage(...,
 * sessionId)` (also the GET stream; filtered by the session's `logging/setLevel`); progress with
 * `extra.sendNotification` (related: the call's POST stream).
 */

export interface V1PushServerStats {
  initializeCount: number;
  /** DELETE requests that ended a session. */
  deleteCount: number;
  /** Sessions the server holds now (initialized, not ended). */
  liveSessions: number;
  /** Sessions whose standalone GET stream is open now (answered 200, not ended). */
  liveGetStreams: string[];
  /** GET requests received (opens and reconnects). */
  getRequests: number;
  /** `Last-Event-ID` values received on GET (resumption). */
  lastEventIds: string[];
  /** Client-to-server messages received, by method (requests and notifications). */
  requestsByMethod: Record<string, number>;
  /** Levels received with `logging/setLevel`, in order. */
  logLevels: string[];
  /** Server-to-client requests the tools sent, by method, and the answers they got back. */
  asked: Record<string, number>;
  answered: Record<string, number>;
  /** Request ids named by the client's `notifications/cancelled`. */
  cancelledRequestIds: Array<string | number>;
  /** Tool calls whose handler saw its abort signal fire (cancelled while running). */
  abortedTools: string[];
  /** Abortable tool handlers that started (a test cancels a call once it runs). */
  startedTools: string[];
}

export interface V1PushServer {
  url: string;
  stats(): V1PushServerStats;
  /** Ends every session's standalone GET stream (as a server polling with SSE does); clients reconnect with Last-Event-ID. */
  closeGetStreams(): void;
  close(): Promise<void>;
}

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

function buildServer(stats: V1PushServerStats, authorized: Set<string>): McpServer {
  const server = new McpServer({ name: 'v1-push-server', version: '1.0.0' }, { capabilities: { logging: {} } });

  const count = (map: Record<string, number>, key: string) => {
    map[key] = (map[key] ?? 0) + 1;
  };

  server.registerTool(
    'deploy',
    { description: 'Asks for confirmation (form elicitation) before deploying.', inputSchema: { env: z.string() } },
    async ({ env }) => {
      count(stats.asked, 'elicitation/create');
      const answer = await server.server.elicitInput({
        mode: 'form',
        message: `Deploy to ${env}?`,
        requestedSchema: {
          type: 'object',
          properties: { confirm: { type: 'boolean', title: 'Deploy now?' } },
          required: ['confirm'],
        },
      });
      count(stats.answered, 'elicitation/create');
      if (answer.action === 'accept' && answer.content?.confirm === true) return text(`deployed to ${env}`);
      return text(`not deployed to ${env} (${answer.action})`);
    },
  );

  server.registerTool(
    'deploy_polling',
    {
      description:
        'Logs on the GET stream, ends it (SSE polling: the client reconnects with Last-Event-ID), then asks (form).',
      inputSchema: { env: z.string() },
    },
    async ({ env }, extra) => {
      await server.sendLoggingMessage({ level: 'info', data: `preparing ${env}` }, extra.sessionId);
      extra.closeStandaloneSSEStream?.();
      count(stats.asked, 'elicitation/create');
      // Sent while the GET stream is closed: kept in the event store until the client resumes.
      const answer = await server.server.elicitInput({
        mode: 'form',
        message: `Deploy to ${env}?`,
        requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
      });
      count(stats.answered, 'elicitation/create');
      if (answer.action === 'accept' && answer.content?.confirm === true) return text(`deployed to ${env}`);
      return text(`not deployed to ${env} (${answer.action})`);
    },
  );

  server.registerTool(
    'connect_account',
    { description: 'Sends the user to a consent page (URL elicitation).', inputSchema: { service: z.string() } },
    async ({ service }) => {
      const elicitationId = randomUUID();
      count(stats.asked, 'elicitation/create');
      const answer = await server.server.elicitInput({
        mode: 'url',
        elicitationId,
        url: `https://accounts.example/connect?service=${encodeURIComponent(service)}&id=${elicitationId}`,
        message: `Connect your ${service} account`,
      });
      count(stats.answered, 'elicitation/create');
      return text(answer.action === 'accept' ? `connected ${service}` : `${service} not connected (${answer.action})`);
    },
  );

  server.registerTool(
    'read_private',
    {
      description: 'Needs an out-of-band authorization first (URLElicitationRequiredError, -32042).',
      inputSchema: { resource: z.string() },
    },
    async ({ resource }) => {
      if (authorized.has(resource)) return text(`contents of ${resource}`);
      // The user is expected to complete the URL flow and retry; this server trusts that.
      authorized.add(resource);
      throw new UrlElicitationRequiredError([
        {
          mode: 'url',
          elicitationId: randomUUID(),
          url: `https://auth.example/grant?resource=${encodeURIComponent(resource)}`,
          message: `Grant access to ${resource}`,
        },
      ]);
    },
  );

  server.registerTool(
    'summarize',
    { description: 'Asks the client LLM for a summary (sampling).', inputSchema: { topic: z.string() } },
    async ({ topic }) => {
      count(stats.asked, 'sampling/createMessage');
      const result = await server.server.createMessage({
        messages: [{ role: 'user', content: { type: 'text', text: `Summarize ${topic}` } }],
        maxTokens: 50,
      });
      count(stats.answered, 'sampling/createMessage');
      const content = Array.isArray(result.content) ? result.content[0] : result.content;
      return text(`summary by ${result.model}: ${content?.type === 'text' ? content.text : '?'}`);
    },
  );

  server.registerTool(
    'release',
    {
      description: 'Two questions in one call: confirm (form), then release notes from the client LLM (sampling).',
      inputSchema: { version: z.string() },
    },
    async ({ version }) => {
      count(stats.asked, 'elicitation/create');
      const confirm = await server.server.elicitInput({
        mode: 'form',
        message: `Release ${version}?`,
        requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
      });
      count(stats.answered, 'elicitation/create');
      if (confirm.action !== 'accept' || confirm.content?.confirm !== true) return text(`${version} not released`);
      count(stats.asked, 'sampling/createMessage');
      const notes = await server.server.createMessage({
        messages: [{ role: 'user', content: { type: 'text', text: `Release notes for ${version}` } }],
        maxTokens: 50,
      });
      count(stats.answered, 'sampling/createMessage');
      const content = Array.isArray(notes.content) ? notes.content[0] : notes.content;
      return text(`released ${version}: ${content?.type === 'text' ? content.text : '?'}`);
    },
  );

  server.registerTool('list_workspace', { description: "Lists the client's roots." }, async () => {
    count(stats.asked, 'roots/list');
    const { roots } = await server.server.listRoots();
    count(stats.answered, 'roots/list');
    return text(`roots: ${roots.map((r) => r.uri).join(',')}`);
  });

  server.registerTool(
    'long_task',
    {
      description: 'Reports progress per step and logs (debug and info per step, a warning at the end).',
      inputSchema: { steps: z.number().int().min(1).max(10) },
    },
    async ({ steps }, extra) => {
      const progressToken = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        // A duration, not a gate: the logs below go on the session's GET stream, which a gateway opens
        // for the call beside it (and the target may refuse while it still thinks the last one open).
        // What reaches the client then is what test/eras/get-stream-logs.test.ts pins down; a tool that
        // waited for the stream would take that situation away.
        await new Promise((resolve) => setTimeout(resolve, 20));
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: i, total: steps, message: `step ${i}` },
          });
        }
        await server.sendLoggingMessage({ level: 'debug', data: `step ${i} detail` }, extra.sessionId);
        await server.sendLoggingMessage({ level: 'info', data: `step ${i}` }, extra.sessionId);
      }
      await server.sendLoggingMessage({ level: 'warning', data: `long_task finished ${steps}` }, extra.sessionId);
      return text(`finished ${steps} steps`);
    },
  );

  server.registerTool(
    'wait',
    { description: 'Waits (abortable by notifications/cancelled).', inputSchema: { ms: z.number().int().max(60_000) } },
    async ({ ms }, extra) => {
      stats.startedTools.push('wait');
      const done = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(true), ms);
        extra.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve(false);
        });
      });
      if (!done) stats.abortedTools.push('wait');
      return text(done ? `waited ${ms}` : 'cancelled');
    },
  );

  return server;
}

/**
 * Events kept per session for `Last-Event-ID` resumption. Not the SDK's example `InMemoryEventStore`:
 * that one reads the stream id back as the event id's text before the first `_`, and the transport
 * names the standalone stream `_GET_stream`, so a resumed GET stream replays nothing and is then
 * registered under the wrong stream (found while writing these tests, SDK 1.32.2).
 */
/** Events per session for `Last-Event-ID`: the demo targets' store (examples/targets/event-store.ts). */
export { SessionEventStore };

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

export async function startV1PushServer(): Promise<V1PushServer> {
  const stats: V1PushServerStats = {
    initializeCount: 0,
    deleteCount: 0,
    liveSessions: 0,
    liveGetStreams: [],
    getRequests: 0,
    lastEventIds: [],
    requestsByMethod: {},
    logLevels: [],
    asked: {},
    answered: {},
    cancelledRequestIds: [],
    abortedTools: [],
    startedTools: [],
  };
  const authorized = new Set<string>();
  const transports: Record<string, StreamableHTTPServerTransport> = {};
  const servers = new Set<McpServer>();
  const getResponses = new Map<ServerResponse, string>();

  const record = (body: unknown) => {
    for (const message of Array.isArray(body) ? body : [body]) {
      const m = message as { method?: string; params?: { level?: string; requestId?: string | number } } | undefined;
      if (!m?.method) continue;
      stats.requestsByMethod[m.method] = (stats.requestsByMethod[m.method] ?? 0) + 1;
      if (m.method === 'logging/setLevel' && m.params?.level) stats.logLevels.push(m.params.level);
      if (m.method === 'notifications/cancelled' && m.params?.requestId !== undefined)
        stats.cancelledRequestIds.push(m.params.requestId);
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if ((req.url ?? '').split('?')[0] !== '/mcp') return void res.writeHead(404).end();
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    if (req.method === 'POST') {
      const body = await readJson(req);
      record(body);
      let transport = sessionId ? transports[sessionId] : undefined;
      if (!transport && !sessionId && isInitializeRequest(body)) {
        const eventStore = new SessionEventStore();
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          eventStore,
          onsessioninitialized: (id) => {
            transports[id] = created;
            stats.initializeCount++;
          },
        });
        created.onclose = () => {
          if (created.sessionId) delete transports[created.sessionId];
        };
        const server = buildServer(stats, authorized);
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
      if (req.method === 'GET') {
        stats.getRequests++;
        const lastEventId = req.headers['last-event-id'];
        if (typeof lastEventId === 'string') stats.lastEventIds.push(lastEventId);
        getResponses.set(res, transport.sessionId ?? '');
        res.once('close', () => getResponses.delete(res));
      } else {
        stats.deleteCount++;
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
    stats: () => ({
      ...structuredClone(stats),
      liveSessions: Object.keys(transports).length,
      liveGetStreams: liveStreamSessions(getResponses),
    }),
    closeGetStreams: () => {
      for (const transport of Object.values(transports)) transport.closeStandaloneSSEStream();
    },
    close: async () => {
      await Promise.allSettled([...servers].map((s) => s.close()));
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}
