import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { initSession, type Json, post, sseEvents } from '../support/mcp-http';
import { serveFetch } from '../support/servers/serve-fetch';
import { withGateway } from '../support/with-gateway';

/**
 * A 2025 session calling a 2026-07-28-only target (the official v2 SDK server): what the target sends
 * just before its result (progress 0, 50, 100 and log messages back to back, as the conformance
 * suite's reference server does) reaches the client before the result, none of it dropped.
 */

async function startBurstTarget(): Promise<{ url: string; close(): Promise<void> }> {
  const build = () => {
    const server = new McpServer({ name: 'burst', version: '1.0.0' }, { capabilities: { logging: {} } });
    server.registerTool(
      'burst',
      {
        description: 'Progress 0, 50, 100 and three log messages, then the result at once.',
        inputSchema: z.object({}),
      },
      async (_args, ctx) => {
        const progressToken = ctx.mcpReq._meta?.progressToken;
        for (const progress of [0, 50, 100]) {
          if (progressToken !== undefined) {
            await ctx.mcpReq.notify({
              method: 'notifications/progress',
              params: { progressToken, progress, total: 100 },
            });
          }
        }
        for (const n of [1, 2, 3]) await ctx.mcpReq.log('info', `message ${n}`);
        return { content: [{ type: 'text', text: 'burst done' }] };
      },
    );
    return server;
  };
  const handler = createMcpHandler(() => build(), { legacy: 'reject', onerror: () => undefined });
  const served = await serveFetch((request) => handler.fetch(request));
  return {
    url: served.url,
    close: async () => {
      await handler.close().catch(() => undefined);
      await served.close();
    },
  };
}

describe('a 2025 session calling a 2026-07-28 target: notifications sent just before the result', () => {
  const gw = withGateway({ logLevel: 'SILENT' }, { targets: { burst: startBurstTarget } });

  it('every progress notification and every log message reaches the client, before the result (20 calls)', async () => {
    const { headers } = await initSession(gw.url);
    const level = await post(gw.url, headers, {
      jsonrpc: '2.0',
      id: 'lvl',
      method: 'logging/setLevel',
      params: { level: 'info' },
    });
    expect(level.status).toBe(200);
    for (let i = 0; i < 20; i++) {
      const res = await post(gw.url, headers, {
        jsonrpc: '2.0',
        id: `b${i}`,
        method: 'tools/call',
        params: { name: 'burst___burst', arguments: {}, _meta: { progressToken: `p${i}` } },
      });
      const messages: Json[] = [];
      for await (const event of sseEvents(res)) if (event.message) messages.push(event.message);
      const progress = messages
        .filter((m) => m.method === 'notifications/progress')
        .map((m) => [m.params.progressToken, m.params.progress]);
      const logs = messages.filter((m) => m.method === 'notifications/message').map((m) => m.params.data);
      expect({ progress, logs }).toEqual({
        progress: [
          [`p${i}`, 0],
          [`p${i}`, 50],
          [`p${i}`, 100],
        ],
        logs: ['message 1', 'message 2', 'message 3'],
      });
      expect(messages.at(-1)).toMatchObject({ id: `b${i}`, result: { content: [{ text: 'burst done' }] } });
    }
  }, 30_000);
});
