import { createMcpHandler } from '@modelcontextprotocol/server';
import { serveFetch } from './serve-fetch';
import { createToolFactory, newToolStats, type V2ToolStats } from './v2-tools';
import { newTraffic, recordTraffic, type Traffic } from './v2-traffic';

/**
 * A 2026-07-28-only server: the v2 SDK's `createMcpHandler(factory, { legacy: 'reject' })` alone, the
 * same era-agnostic tools as the dual server's modern leg. 2025-era requests (`initialize`) are refused
 * with -32022 naming 2026-07-28; there is no session, no GET stream, no push-style tool.
 */

export interface V2ModernServerStats extends V2ToolStats {
  modern: Traffic;
}

export interface V2ModernServer {
  url: string;
  stats(): V2ModernServerStats;
  close(): Promise<void>;
}

export async function startV2ModernServer(): Promise<V2ModernServer> {
  const stats: V2ModernServerStats = { ...newToolStats(), modern: newTraffic() };
  const build = createToolFactory(stats);
  const handler = createMcpHandler(({ era }) => build(era), { legacy: 'reject', onerror: () => undefined });
  const served = await serveFetch(async (request) => {
    if (request.method === 'POST') recordTraffic(stats.modern, await request.clone().text());
    return handler.fetch(request);
  });
  return {
    url: served.url,
    stats: () => structuredClone(stats),
    close: async () => {
      await handler.close().catch(() => undefined);
      await served.close();
    },
  };
}
