import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/**
 * A 2025-era target written the way much real server code is: v1 SDK, one sessionful transport per
 * session, and tools that ask the user with `server.server.elicitInput(params)` /
 * `server.server.createMessage(params)` WITHOUT a related request id — so the SDK sends those
 * requests on the session's standalone GET stream (and drops them when none is open).
 */
export interface PushTarget {
  url: string;
  stats: { getStreams: number; requestsByMethod: Record<string, number>; cancelled: unknown[] };
  close(): Promise<void>;
}

export async function startPushTarget(): Promise<PushTarget> {
  const stats: PushTarget['stats'] = { getStreams: 0, requestsByMethod: {}, cancelled: [] };
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const servers: McpServer[] = [];

  const newServer = () => {
    const server = new McpServer({ name: 'push-target', version: '1.0.0' });
    server.registerTool('ask', { description: 'asks the user (GET stream)', inputSchema: {} }, async () => {
      const answer = await server.server.elicitInput({
        message: 'Proceed?',
        requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
      });
      return {
        content: [{ type: 'text', text: `answered: ${answer.action} ${JSON.stringify(answer.content ?? {})}` }],
      };
    });
    server.registerTool('ask_twice', { description: 'asks the user twice', inputSchema: {} }, async () => {
      const first = await server.server.elicitInput({
        message: 'First?',
        requestedSchema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
      });
      const second = await server.server.elicitInput({
        message: 'Second?',
        requestedSchema: { type: 'object', properties: { b: { type: 'string' } }, required: ['b'] },
      });
      return { content: [{ type: 'text', text: `got ${first.content?.a} and ${second.content?.b}` }] };
    });
    server.registerTool(
      'sample',
      { description: 'samples (GET stream)', inputSchema: { prompt: z.string() } },
      async ({ prompt }) => {
        const result = await server.server.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
          maxTokens: 20,
        });
        const text = result.content.type === 'text' ? result.content.text : '?';
        return { content: [{ type: 'text', text: `sampled: ${text}` }] };
      },
    );
    server.registerTool(
      'wait',
      { description: 'waits until cancelled', inputSchema: { ms: z.number() } },
      async ({ ms }, extra) => {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          extra.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        // The SDK sends no response for a cancelled request, and leaves the call's stream open.
        return { content: [{ type: 'text', text: extra.signal.aborted ? 'cancelled' : 'waited' }] };
      },
    );
    server.registerTool('echo', { description: 'echo', inputSchema: { text: z.string() } }, async ({ text }) => ({
      content: [{ type: 'text', text: `echo: ${text}` }],
    }));
    servers.push(server);
    return server;
  };

  const readBody = (req: IncomingMessage) =>
    new Promise<unknown>((resolve) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve(text ? JSON.parse(text) : undefined);
      });
    });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    if (req.method === 'GET') {
      const transport = sessionId ? transports.get(sessionId) : undefined;
      if (!transport) return void res.writeHead(404).end();
      stats.getStreams++;
      await transport.handleRequest(req, res);
      return;
    }
    const body = await readBody(req);
    const messages = (Array.isArray(body) ? body : [body]) as Array<{
      method?: string;
      params?: { requestId?: unknown };
    }>;
    for (const m of messages) {
      if (m?.method) stats.requestsByMethod[m.method] = (stats.requestsByMethod[m.method] ?? 0) + 1;
      if (m?.method === 'notifications/cancelled') stats.cancelled.push(m.params?.requestId);
    }
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId) return void res.writeHead(404).end();
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          transports.set(id, created);
        },
      });
      transport = created;
      await newServer().connect(created);
    }
    await transport.handleRequest(req, res, body);
  };

  const http: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stats,
    close: async () => {
      for (const server of servers) await server.close().catch(() => undefined);
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
