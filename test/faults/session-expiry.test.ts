import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { createDocumentClient } from '../../lambda/state/dynamo-client';
import type { GatewayKind } from '../support/gateways';
import { eventually, initSession, post, readMessage, sessionItems } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * Target sessions end with the gateway session: DELETE ends them, and so
 * does the first request that finds its session expired but still stored (DynamoDB's TTL deletes
 * lazily) — the client gets 404 as for any expired session, its target sessions are terminated and
 * its partition removed. (A session whose client never returns: see lambda/README.md.)
 */
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];

describe.each(kinds)('an expired session, %s', (kind) => {
  const gw = withGateway({ logLevel: 'SILENT' }, { kind, targets: { demo: () => startDemoTarget() } });

  it('is ended when its client comes back: 404, its target session terminated, its partition removed', async () => {
    const { headers, sessionId } = await initSession(gw.url);
    const before = gw.targets.demo.stats().sessions;
    const call = await readMessage(
      await post(gw.url, headers, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'demo___echo', arguments: { text: 'x' } },
      }),
    );
    expect(call.result.content[0].text).toBe('echo: x');
    expect(gw.targets.demo.stats().sessions).toBe(before + 1);
    // As if sessionTimeoutSeconds had passed (the item is still there: TTL deletion is lazy).
    const client = createDocumentClient({ endpoint: gw.dynamodbEndpoint });
    await client.send(
      new UpdateCommand({
        TableName: 'mcp-gateway',
        Key: { pk: `S#${sessionId}`, sk: 'SESSION' },
        UpdateExpression: 'SET expiresAt = :past',
        ExpressionAttributeValues: { ':past': Math.floor(Date.now() / 1000) - 1 },
      }),
    );
    client.destroy();
    const res = await post(gw.url, headers, { jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(res.status).toBe(404);
    expect((await res.json()).error.code).toBe(-32600);
    await eventually(() => expect(gw.targets.demo.stats().sessions).toBe(before));
    expect(await sessionItems(gw.dynamodbEndpoint, sessionId)).toEqual([]);
  });
});
