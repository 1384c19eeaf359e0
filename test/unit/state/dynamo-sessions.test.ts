import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { systemClock } from '../../../lambda/scheduling/clock';
import { DynamoSessionStore } from '../../../lambda/state/dynamo-store';

/**
 * Deleting a session removes its pending records by a write before the one that removes the session
 * item: an answer recorded without the session read (a conditional write on the pending record alone)
 * never finds a record of a session whose item is gone, whatever fails in between.
 */

type Sent = { name: string; input: Record<string, any> };

function fakeClient(items: Array<{ pk: string; sk: string }>): { client: DynamoDBDocumentClient; sent: Sent[] } {
  const sent: Sent[] = [];
  const client = {
    send: async (command: { constructor: { name: string }; input: Record<string, any> }) => {
      sent.push({ name: command.constructor.name, input: command.input });
      return command.constructor.name === 'QueryCommand' ? { Items: items } : {};
    },
  };
  return { client: client as unknown as DynamoDBDocumentClient, sent };
}

const keysOf = (sent: Sent) =>
  (sent.input.RequestItems.table as Array<{ DeleteRequest: { Key: { sk: string } } }>).map(
    (r) => r.DeleteRequest.Key.sk,
  );

describe('deleting a session', () => {
  const partition = (sks: string[]) => sks.map((sk) => ({ pk: 'S#s-1', sk }));

  it('removes the pending records first, then the session item before the rest', async () => {
    const { client, sent } = fakeClient(
      partition(['C#1', 'E#a#0000000000', 'P#gw-1', 'P#gw-2', 'R#a', 'SESSION', 'T#demo']),
    );
    await new DynamoSessionStore(client, 'table', { clock: systemClock }).deleteSession('s-1');
    expect(sent.map((s) => s.name)).toEqual(['QueryCommand', 'BatchWriteCommand', 'BatchWriteCommand']);
    expect(keysOf(sent[1]!)).toEqual(['P#gw-1', 'P#gw-2']);
    expect(keysOf(sent[2]!)).toEqual(['SESSION', 'C#1', 'E#a#0000000000', 'R#a', 'T#demo']);
  });

  it('without pending records: one write, the session item first, as before', async () => {
    const { client, sent } = fakeClient(partition(['E#a#0000000000', 'SESSION', 'T#demo']));
    await new DynamoSessionStore(client, 'table', { clock: systemClock }).deleteSession('s-1');
    expect(sent.map((s) => s.name)).toEqual(['QueryCommand', 'BatchWriteCommand']);
    expect(keysOf(sent[1]!)).toEqual(['SESSION', 'E#a#0000000000', 'T#demo']);
  });
});
