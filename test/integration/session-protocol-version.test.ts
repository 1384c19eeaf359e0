import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startDemoTarget } from '../../lambda/local/demo-target';
import type { GatewayKind } from '../support/gateways';
import { initSession, post, readMessage } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * Within a 2025-era session the client sends the protocol version negotiated at initialize (the
 * 2025-11-25 transports page); any other one — even a version the gateway serves — is answered 400,
 * as an unsupported version must be. No header stays accepted (2025-03-26 clients send none).
 */
const kinds: GatewayKind[] = ['local server', 'lambda handler', 'lambda runtime'];

describe.each(kinds)('MCP-Protocol-Version within a session, through the %s', (kind) => {
  const gw = withGateway({}, { kind, targets: { demo: () => startDemoTarget() } });

  it('a version other than the negotiated one is refused with 400, naming both; the negotiated one and none are served', async () => {
    const { headers } = await initSession(gw.url, { protocolVersion: '2025-11-25' });
    expect(headers['mcp-protocol-version']).toBe('2025-11-25');
    const list = (id: number, version?: string) =>
      post(
        gw.url,
        { 'mcp-session-id': headers['mcp-session-id']!, ...(version ? { 'mcp-protocol-version': version } : {}) },
        { jsonrpc: '2.0', id, method: 'tools/list' },
      );

    const other = await list(1, '2025-06-18');
    expect(other.status).toBe(400);
    expect(await other.json()).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: {
        code: -32600,
        message:
          'Bad Request: MCP-Protocol-Version "2025-06-18" is not this session\'s protocol version "2025-11-25" (negotiated at initialize)',
        data: { negotiated: '2025-11-25', requested: '2025-06-18' },
      },
    });

    const same = await list(2, '2025-11-25');
    expect(same.status).toBe(200);
    expect((await readMessage(same)).result.tools.length).toBeGreaterThan(0);
    const none = await list(3);
    expect(none.status).toBe(200);
  });

  it('a notification and a DELETE with another version are refused too; the session is untouched', async () => {
    const { headers } = await initSession(gw.url, { protocolVersion: '2025-06-18' });
    const wrong = { ...headers, 'mcp-protocol-version': '2025-11-25' };
    const notification = await post(gw.url, wrong, { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(notification.status).toBe(400);
    const deleted = await fetch(gw.url, { method: 'DELETE', headers: wrong });
    expect(deleted.status).toBe(400);
    const ping = await post(gw.url, headers, { jsonrpc: '2.0', id: 'p', method: 'ping' });
    expect(ping.status).toBe(200);
    expect((await readMessage(ping)).result).toEqual({});
  });

  it('the official SDK client sends its negotiated version and is served', async () => {
    const client = new Client({ name: 'version-check', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
    try {
      const result = await client.callTool({ name: 'demo___echo', arguments: { text: 'v' } });
      expect(result.content).toEqual([{ type: 'text', text: 'echo: v' }]);
    } finally {
      await client.close();
    }
  });
});
