import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/**
 * A 2025-only MCP server (v1 SDK `McpServer`, one sessionful `StreamableHTTPServerTransport` per
 * session) whose tools ask the client during the call, on the call's own stream
 * (`elicitInput(params, { relatedRequestId })`), in the shapes the bridged path must cope with: several
 * questions in one round, a large question in round 2, a large result. It counts how often each tool
 * ran to its end, so a test can tell a re-run from a returned outcome.
 */

export interface AskingServerStats {
  /** Tool runs started, by tool. */
  started: Record<string, number>;
  /** Tool runs that got every answer and returned, by tool. */
  completed: Record<string, number>;
  /** Answers the tools received (elicitation results), in order. */
  answers: unknown[];
  /** Tool runs the client (the gateway) cancelled (notifications/cancelled), by tool. */
  cancelled: Record<string, number>;
}

export interface AskingServer {
  url: string;
  stats(): AskingServerStats;
  close(): Promise<void>;
}

const form = (message: string) => ({
  mode: 'form' as const,
  message,
  requestedSchema: { type: 'object' as const, properties: { ok: { type: 'boolean' as const } }, required: ['ok'] },
});

function buildServer(stats: AskingServerStats): McpServer {
  const server = new McpServer({ name: 'asking', version: '1.0.0' });
  const count = (map: Record<string, number>, key: string) => {
    map[key] = (map[key] ?? 0) + 1;
  };
  const ask = async (message: string, relatedRequestId: string | number) => {
    const answer = await server.server.elicitInput(form(message), { relatedRequestId });
    stats.answers.push(answer);
    return answer;
  };
  const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

  server.registerTool(
    'ask_many',
    { description: 'Asks n questions at once (one round of n requests).', inputSchema: { n: z.number().int() } },
    async ({ n }, extra) => {
      count(stats.started, 'ask_many');
      extra.signal.addEventListener('abort', () => count(stats.cancelled, 'ask_many'), { once: true });
      const answers = await Promise.all(Array.from({ length: n }, (_, i) => ask(`question ${i + 1}`, extra.requestId)));
      count(stats.completed, 'ask_many');
      return text(`answered ${answers.length}: ${answers.map((a) => a.action).join(',')}`);
    },
  );

  server.registerTool(
    'ask_then_big',
    {
      description: 'Asks once, waits `delayMs` after the answer, then returns `bytes` times `char` (x).',
      inputSchema: { bytes: z.number().int(), delayMs: z.number().int().optional(), char: z.string().optional() },
    },
    async ({ bytes, delayMs, char }, extra) => {
      count(stats.started, 'ask_then_big');
      await ask('go?', extra.requestId);
      if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
      count(stats.completed, 'ask_then_big');
      return text((char ?? 'x').repeat(bytes));
    },
  );

  server.registerTool(
    'ask_big_second',
    {
      description: 'Asks once, then asks a question of `bytes` characters, then returns.',
      inputSchema: { bytes: z.number().int() },
    },
    async ({ bytes }, extra) => {
      count(stats.started, 'ask_big_second');
      await ask('first?', extra.requestId);
      await ask(`second ${'y'.repeat(bytes)}`, extra.requestId);
      count(stats.completed, 'ask_big_second');
      return text('both answered');
    },
  );
  return server;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw ? JSON.parse(raw) : undefined;
}

export async function startAskingServer(): Promise<AskingServer> {
  const stats: AskingServerStats = { started: {}, completed: {}, answers: [], cancelled: {} };
  const transports = new Map<string, StreamableHTTPServerTransport>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    const existing = sessionId ? transports.get(sessionId) : undefined;
    if (existing) return existing.handleRequest(req, res, body);
    if (sessionId || !isInitializeRequest(body)) {
      res.writeHead(sessionId ? 404 : 400, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'No session' }, id: null }));
    }
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void transports.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) transports.delete(transport.sessionId);
    };
    await buildServer(stats).connect(transport);
    return transport.handleRequest(req, res, body);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  http.requestTimeout = 0;
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stats: () => structuredClone(stats),
    close: async () => {
      for (const transport of transports.values()) await transport.close().catch(() => undefined);
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}
