import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  isInitializeRequest,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { MemoryEventStore } from '../../../examples/targets/event-store';
import { readJsonBody } from '../loopback';
import { liveStreamSessions } from './serve-fetch';

/**
 * A 2025-era v1 SDK server that talks outside calls, the way the SDK sends what is not tied to a
 * request: on the session's standalone GET stream (and into its event store when none is open).
 * - `resources/subscribe` / `unsubscribe` of its resources (kept per session, as a server must);
 *   the tool `touch` changes a resource and sends `notifications/resources/updated` to subscribers;
 * - the tool `add_tool` registers a new tool (the SDK sends `notifications/tools/list_changed`);
 * - the tool `ask_later` answers at once and asks the user (form elicitation) a moment later, tied to
 *   no call: the answer is recorded in `stats().laterAnswers`;
 * - the tool `log` sends a log message at a level (filtered by the session's `logging/setLevel`).
 */

export interface V1NotifyingServerStats {
  sessions: string[];
  getRequests: number;
  /** `Last-Event-ID` values received on GET (a resumed stream). */
  lastEventIds: string[];
  liveGetStreams: string[];
  subscribed: Record<string, string[]>;
  laterAnswers: unknown[];
  deletedSessions: string[];
}

export interface V1NotifyingServer {
  url: string;
  stats(): V1NotifyingServerStats;
  /** Sends `notifications/resources/updated` for `uri` to every session subscribed to it (outside any call). */
  touch(uri: string): Promise<void>;
  /** Announces a change of its tool or resource list to every session (outside any call). */
  announce(list: 'tools' | 'resources'): Promise<void>;
  close(): Promise<void>;
}

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

/** `getStream: false`: it answers GET with 405, as a server that sends nothing outside calls may. */
export async function startV1NotifyingServer(
  options: { eventStore?: boolean; getStream?: boolean } = {},
): Promise<V1NotifyingServer> {
  const stats: V1NotifyingServerStats = {
    sessions: [],
    getRequests: 0,
    lastEventIds: [],
    liveGetStreams: [],
    subscribed: {},
    laterAnswers: [],
    deletedSessions: [],
  };
  const transports: Record<string, StreamableHTTPServerTransport> = {};
  const servers = new Map<string, McpServer>();
  const getResponses = new Map<ServerResponse, string>();

  const notifyUpdated = async (uri: string) => {
    await Promise.all(
      Object.entries(stats.subscribed)
        .filter(([, uris]) => uris.includes(uri))
        .map(([sessionId]) => servers.get(sessionId)?.server.sendResourceUpdated({ uri })),
    );
  };

  const build = (sessionOf: () => string): McpServer => {
    const server = new McpServer(
      { name: 'v1-notifying-server', version: '1.0.0' },
      { capabilities: { logging: {}, resources: { subscribe: true, listChanged: true } } },
    );
    server.registerResource('greeting', 'note://greeting', { mimeType: 'text/plain' }, async (uri) => ({
      contents: [{ uri: uri.href, text: 'hello' }],
    }));
    server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
      const id = sessionOf();
      const list = stats.subscribed[id] ?? [];
      if (!list.includes(request.params.uri)) list.push(request.params.uri);
      stats.subscribed[id] = list;
      return {};
    });
    server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
      const id = sessionOf();
      stats.subscribed[id] = (stats.subscribed[id] ?? []).filter((u) => u !== request.params.uri);
      return {};
    });
    server.registerTool('touch', { inputSchema: { uri: z.string() } }, async ({ uri }) => {
      await notifyUpdated(uri);
      return text(`touched ${uri}`);
    });
    server.registerTool('add_tool', { inputSchema: { name: z.string() } }, async ({ name }) => {
      server.registerTool(name, { description: 'added at run time' }, async () => text(`${name} ran`));
      return text(`added ${name}`);
    });
    server.registerTool('ask_later', { description: 'Asks the user a moment after answering.' }, async () => {
      setTimeout(() => {
        server.server
          .elicitInput({
            mode: 'form',
            message: 'Rate the gateway',
            requestedSchema: { type: 'object', properties: { stars: { type: 'number' } }, required: ['stars'] },
          })
          .then(
            (answer) => stats.laterAnswers.push(answer),
            (error: unknown) => stats.laterAnswers.push({ error: String(error) }),
          );
      }, 100);
      return text('will ask');
    });
    server.registerTool(
      'log',
      { inputSchema: { level: z.enum(['debug', 'info', 'warning', 'error']), data: z.string() } },
      async ({ level, data }, extra) => {
        await server.sendLoggingMessage({ level, data }, extra.sessionId);
        return text('logged');
      },
    );
    return server;
  };

  const jsonError = (res: ServerResponse, status: number, message: string) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    if (req.method === 'POST') {
      const body = await readJsonBody(req);
      let transport = sessionId ? transports[sessionId] : undefined;
      if (!transport && !sessionId && isInitializeRequest(body)) {
        let id = '';
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          eventStore: options.eventStore ? new MemoryEventStore() : undefined,
          onsessioninitialized: (sid) => {
            id = sid;
            transports[sid] = created;
            servers.set(sid, server);
            stats.sessions.push(sid);
          },
        });
        created.onclose = () => {
          if (created.sessionId) delete transports[created.sessionId];
        };
        const server = build(() => id);
        await server.connect(created);
        transport = created;
      }
      if (!transport) return jsonError(res, sessionId ? 404 : 400, sessionId ? 'Session not found' : 'No session');
      await transport.handleRequest(req, res, body);
      return;
    }
    if (req.method === 'GET' && options.getStream === false) {
      stats.getRequests++;
      res.writeHead(405, { allow: 'POST, DELETE' }).end();
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
      } else if (sessionId) {
        stats.deletedSessions.push(sessionId);
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
    stats: () => ({ ...structuredClone(stats), liveGetStreams: liveStreamSessions(getResponses) }),
    touch: notifyUpdated,
    announce: async (list) => {
      await Promise.all(
        [...servers.values()].map((server) =>
          list === 'tools' ? server.sendToolListChanged() : server.sendResourceListChanged(),
        ),
      );
    },
    close: async () => {
      await Promise.allSettled([...servers.values()].map((s) => s.close()));
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}
