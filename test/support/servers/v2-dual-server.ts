import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { liveStreamSessions, serveFetch } from './serve-fetch';
import { createToolFactory, newToolStats, type V2ToolStats } from './v2-tools';
import { newTraffic, recordTraffic, type Traffic } from './v2-traffic';

/**
 * A dual-era server on the v2 SDK, wired as the v2 SDK's `isLegacyRequest`
 * documentation describes: `isLegacyRequest(request)` routes 2025-era traffic to a sessionful
 * `WebStandardStreamableHTTPServerTransport` leg (one transport and server per session, standalone GET
 * stream and DELETE supported), everything else to `createMcpHandler(factory, { legacy: 'reject' })`.
 * One tool factory backs both legs; the push-style tools exist only on the 2025 leg (`v2-tools.ts`).
 */

export interface V2DualServerStats extends V2ToolStats {
  legacy: Traffic & { initializeCount: number; liveGetStreams: string[]; getRequests: number };
  modern: Traffic;
}

export interface V2DualServer {
  url: string;
  stats(): V2DualServerStats;
  close(): Promise<void>;
}

export async function startV2DualServer(): Promise<V2DualServer> {
  const stats: V2DualServerStats = {
    ...newToolStats(),
    legacy: { ...newTraffic(), initializeCount: 0, liveGetStreams: [], getRequests: 0 },
    modern: newTraffic(),
  };
  const build = createToolFactory(stats);
  const modern = createMcpHandler(({ era }) => build(era), { legacy: 'reject', onerror: () => undefined });
  const transports = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const getResponses = new Map<ServerResponse, string>();

  const legacyLeg = async (request: Request): Promise<Response> => {
    const sessionId = request.headers.get('mcp-session-id');
    const existing = sessionId ? transports.get(sessionId) : undefined;
    if (existing) return existing.handleRequest(request);
    if (sessionId)
      return Response.json(
        { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null },
        { status: 404 },
      );
    const body: unknown = request.method === 'POST' ? await request.clone().json() : undefined;
    if (!isInitializeRequest(body)) {
      return Response.json(
        { jsonrpc: '2.0', error: { code: -32000, message: 'No session' }, id: null },
        { status: 400 },
      );
    }
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports.set(id, transport);
        stats.legacy.initializeCount++;
      },
      onsessionclosed: (id) => {
        transports.delete(id);
      },
    });
    await build('legacy').connect(transport);
    return transport.handleRequest(request);
  };

  const served = await serveFetch(
    async (request) => {
      const legacy = await isLegacyRequest(request);
      if (request.method === 'POST') recordTraffic(legacy ? stats.legacy : stats.modern, await request.clone().text());
      return legacy ? legacyLeg(request) : modern.fetch(request);
    },
    (req, res) => {
      if (req.method !== 'GET') return;
      stats.legacy.getRequests++;
      getResponses.set(res, String(req.headers['mcp-session-id'] ?? ''));
      res.once('close', () => getResponses.delete(res));
    },
  );

  return {
    url: served.url,
    stats: () => {
      const snapshot = structuredClone(stats);
      snapshot.legacy.liveGetStreams = liveStreamSessions(getResponses);
      return snapshot;
    },
    close: async () => {
      await modern.close().catch(() => undefined);
      await Promise.allSettled([...transports.values()].map((t) => t.close()));
      await served.close();
    },
  };
}
