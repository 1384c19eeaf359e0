import { createMcpHandler, isLegacyRequest } from '@modelcontextprotocol/server';
import { serveFetch } from './serve-fetch';
import { createToolFactory, newToolStats, type V2ToolStats } from './v2-tools';
import { newTraffic, recordTraffic, type Traffic } from './v2-traffic';

/**
 * A v2 SDK server in its default mode: `createMcpHandler(factory)` with no options. Its 2025 leg is
 * the SDK's stateless fallback: `initialize` is answered without `Mcp-Session-Id`, GET and DELETE get
 * 405, so in 2025 it can never send a request to the client (no form, URL, sampling or roots); its
 * 2026-07-28 leg asks in input_required rounds. The tools are those of the other v2 servers.
 */

export interface V2DefaultServerStats extends V2ToolStats {
  legacy: Traffic;
  modern: Traffic;
}

export interface V2DefaultServer {
  url: string;
  stats(): V2DefaultServerStats;
  close(): Promise<void>;
}

export async function startV2DefaultServer(): Promise<V2DefaultServer> {
  const stats: V2DefaultServerStats = { ...newToolStats(), legacy: newTraffic(), modern: newTraffic() };
  const build = createToolFactory(stats);
  const handler = createMcpHandler(({ era }) => build(era));
  const served = await serveFetch(async (request) => {
    if (request.method === 'POST') {
      const legacy = await isLegacyRequest(request);
      recordTraffic(legacy ? stats.legacy : stats.modern, await request.clone().text());
    }
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
