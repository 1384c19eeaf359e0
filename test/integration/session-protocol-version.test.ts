import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startDemoTarget } from '../../examples/targets/demo-target';
import type { GatewayKind } from '../support/gateways';
import { initSession, post, readMessage } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * Within a 2025-era session the client SHOULD send the protocol version negotiated at initialize (the
 * 2025-11-25 transports page), and a request with an invalid or unsupported version MUST be answered
 * 400. Another version the gateway serves is served, as the official SDK servers do and the official
 * conformance suite expects (it sends 2025-03-26 within a 2025-11-25 session); the session's negotiated
 * version decides how the request is read. No header stays accepted (2025-03-26 clients send none).
 */
// The function-URL handler runs in the Lambda runtime (the real one, locally); in-process alone it would add nothing.
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];

describe.each(kinds)('MCP-Protocol-Version within a session, through the %s', (kind) => {
  const gw = withGateway({}, { kind, targets: { demo: () => startDemoTarget() } });

  it('an unsupported version is refused with 400 naming the supported ones; another served version, the negotiated one and none are served', async () => {
    const { headers } = await initSession(gw.url, { protocolVersion: '2025-11-25' });
    expect(headers['mcp-protocol-version']).toBe('2025-11-25');
    const list = (id: number, version?: string) =>
      post(
        gw.url,
        { 'mcp-session-id': headers['mcp-session-id']!, ...(version ? { 'mcp-protocol-version': version } : {}) },
        { jsonrpc: '2.0', id, method: 'tools/list' },
      );

    const unsupported = await list(1, '2000-01-01');
    expect(unsupported.status).toBe(400);
    const refusal = await unsupported.json();
    expect(refusal).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32600, message: 'Bad Request: unsupported MCP-Protocol-Version "2000-01-01"' },
    });
    expect(refusal.error.data).toMatchObject({ requested: '2000-01-01' });
    expect(refusal.error.data.supported).toContain('2025-11-25');

    for (const [id, version] of [
      [2, '2025-03-26'],
      [3, '2025-06-18'],
      [4, '2025-11-25'],
      [5, undefined],
    ] as const) {
      const served = await list(id, version);
      expect(served.status).toBe(200);
      expect((await readMessage(served)).result.tools.length).toBeGreaterThan(0);
    }
  });

  it('a notification and a DELETE with an unsupported version are refused too; the session is untouched', async () => {
    const { headers } = await initSession(gw.url, { protocolVersion: '2025-06-18' });
    const wrong = { ...headers, 'mcp-protocol-version': '1999-01-01' };
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
