import { createMcpHandler, McpServer, ResourceTemplate } from '@modelcontextprotocol/server';
import { serveFetch } from './serve-fetch';
import { newTraffic, recordTraffic, type Traffic } from './v2-traffic';

/**
 * A 2026-07-28-only v2 SDK server (`createMcpHandler`, `legacy: 'reject'`) with many resources: `count`
 * static ones, `<scheme>://item/<i>`, and one template, `<scheme>://thing/{id}`. It declares
 * `resources.subscribe`, so the SDK's own listen router acknowledges the resource URIs a listen asks
 * for. What it receives is counted by method (`stats().modern`), for tests that count what the gateway
 * sent (one `resources/list` per listen, not one per URI).
 */

export interface V2ResourcesServer {
  url: string;
  /** The URI of static resource `i`. */
  uri(i: number): string;
  stats(): { modern: Traffic };
  close(): Promise<void>;
}

export async function startV2ResourcesServer(options: {
  scheme: string;
  count: number;
  /** Each static URI padded to this many characters (`<scheme>://item/<i>/xxx…`): the longest a listen takes. */
  uriLength?: number;
}): Promise<V2ResourcesServer> {
  const { scheme, count, uriLength } = options;
  const uri = (i: number) => {
    const short = `${scheme}://item/${i}`;
    return uriLength === undefined ? short : `${short}/`.padEnd(uriLength, 'x');
  };
  const modern = newTraffic();
  const build = () => {
    const server = new McpServer(
      { name: `${scheme}-resources`, version: '1.0.0' },
      { capabilities: { resources: { subscribe: true, listChanged: true } } },
    );
    for (let i = 0; i < count; i++) {
      server.registerResource(`item-${i}`, uri(i), { mimeType: 'text/plain' }, async (read) => ({
        contents: [{ uri: read.href, text: `item ${i}` }],
      }));
    }
    server.registerResource(
      'thing',
      new ResourceTemplate(`${scheme}://thing/{id}`, { list: undefined }),
      { mimeType: 'text/plain' },
      async (read) => ({ contents: [{ uri: read.href, text: 'a thing' }] }),
    );
    return server;
  };
  const handler = createMcpHandler(build, { legacy: 'reject', onerror: () => undefined });
  const served = await serveFetch(async (request) => {
    if (request.method === 'POST') recordTraffic(modern, await request.clone().text());
    return handler.fetch(request);
  });
  return {
    url: served.url,
    uri,
    stats: () => ({ modern: structuredClone(modern) }),
    close: async () => {
      await handler.close().catch(() => undefined);
      await served.close();
    },
  };
}
