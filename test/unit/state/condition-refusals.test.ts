import { type AttributeValue, ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { WaitingCall } from '../../../lambda/legacy/waiting-call';
import { writeOutcome } from '../../../lambda/modern/bridge-outcome';
import { systemClock } from '../../../lambda/scheduling/clock';
import { DynamoSessionStore } from '../../../lambda/state/dynamo-store';
import type { SessionRecord } from '../../../lambda/state/store';

/**
 * A refused conditional write tells the DynamoDB store what it found (`ReturnValuesOnConditionCheckFailure:
 * 'ALL_OLD'`: the item on the exception, marshalled), so it sends no second request to learn why; a
 * refusal without the item (dynalite ignores the option) falls back to one consistent read. Against a
 * fake client that answers each command as DynamoDB would and records what was sent.
 */

type Sent = { name: string; input: Record<string, unknown> };

/** A document client whose `send` records each command and answers with `answer` (throwing what it throws). */
function fakeClient(answer: (sent: Sent) => unknown): { client: DynamoDBDocumentClient; sent: Sent[] } {
  const sent: Sent[] = [];
  const client = {
    send: async (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      const one = { name: command.constructor.name, input: command.input };
      sent.push(one);
      return answer(one);
    },
  };
  // Only `send` is used by the store; the cast keeps the fake to that one method.
  return { client: client as unknown as DynamoDBDocumentClient, sent };
}

/** DynamoDB's refusal, with the item it found when one is given. */
function refusal(item?: Record<string, AttributeValue>): ConditionalCheckFailedException {
  return new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: {},
    ...(item ? { Item: item } : {}),
  });
}

const NOW = Math.floor(Date.now() / 1000);
const session: SessionRecord = {
  id: 'session-1',
  principal: 'anonymous',
  protocolVersion: '2025-11-25',
  clientCapabilities: {},
  createdAt: NOW,
  expiresAt: NOW + 3600,
};

const keptTarget: Record<string, AttributeValue> = {
  pk: { S: 'S#session-1' },
  sk: { S: 'T#demo' },
  target: { S: 'demo' },
  targetSessionId: { S: 'kept-by-the-other' },
  protocolVersion: { S: '2025-11-25' },
  declaredCapabilities: { M: { elicitation: { M: {} } } },
  expiresAt: { N: String(NOW + 3600) },
};

const answeredPending: Record<string, AttributeValue> = {
  pk: { S: 'S#session-1' },
  sk: { S: 'P#gw-1' },
  gatewayId: { S: 'gw-1' },
  kind: { S: 'relayed' },
  method: { S: 'elicitation/create' },
  target: { S: 'demo' },
  targetRequestId: { N: '1' },
  clientRequestId: { N: '7' },
  status: { S: 'answered' },
  createdAt: { N: String(NOW) },
  // Past its TTL: the refusal returns the item as it is, and it still tells what happened.
  expiresAt: { N: String(NOW - 5) },
};

describe('a conditional write refused with the item it found (ALL_OLD)', () => {
  it('putTargetSession: the target session another instance kept, from the refusal: one request', async () => {
    const { client, sent } = fakeClient(() => {
      throw refusal(keptTarget);
    });
    const store = new DynamoSessionStore(client, 'table', { clock: systemClock });
    const kept = await store.putTargetSession(session, {
      target: 'demo',
      targetSessionId: 'mine',
      protocolVersion: '2025-11-25',
      declaredCapabilities: {},
    });
    expect(kept).toEqual({
      target: 'demo',
      targetSessionId: 'kept-by-the-other',
      protocolVersion: '2025-11-25',
      declaredCapabilities: { elicitation: {} },
    });
    expect(sent.map((s) => s.name)).toEqual(['PutCommand']);
    expect(sent[0]?.input.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
  });

  it('expirePending: why it was refused (answered), from the refusal: one request', async () => {
    const { client, sent } = fakeClient(() => {
      throw refusal(answeredPending);
    });
    const store = new DynamoSessionStore(client, 'table', { clock: systemClock });
    const outcome = await store.expirePending('session-1', 'gw-1');
    expect(outcome).toMatchObject({ written: false, current: { gatewayId: 'gw-1', status: 'answered' } });
    expect(sent.map((s) => s.name)).toEqual(['UpdateCommand']);
    expect(sent[0]?.input.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
  });

  it('expirePending applied: expired, one request', async () => {
    const { client, sent } = fakeClient(() => ({}));
    const store = new DynamoSessionStore(client, 'table', { clock: systemClock });
    expect(await store.expirePending('session-1', 'gw-1')).toEqual({ written: true });
    expect(sent).toHaveLength(1);
  });
});

describe("a bridged round's outcome written again after its reply was lost", () => {
  const payload = { kind: 'result' as const, response: { jsonrpc: '2.0' as const, id: 1, result: { content: [] } } };
  const stored = (answer: string): Record<string, AttributeValue> => ({
    ...answeredPending,
    sk: { S: 'P#round-1' },
    gatewayId: { S: 'round-1' },
    kind: { S: 'held' },
    answer: { S: answer },
  });
  const write = (store: DynamoSessionStore) =>
    writeOutcome(store, 'bridge-1', 'round-1', payload, {
      maxBytes: 4 * 1024 * 1024,
      attempt: 0,
      template: { target: 'demo', clientRequestId: 7, createdAt: NOW, expiresAt: NOW + 60 },
    });

  it('is stored when the refusal found its own answer there (the first attempt was applied): one request', async () => {
    const mine = JSON.stringify({ jsonrpc: '2.0', id: 'round-1', result: payload });
    const { client, sent } = fakeClient(() => {
      throw refusal(stored(mine));
    });
    expect(await write(new DynamoSessionStore(client, 'table', { clock: systemClock }))).toBe('stored');
    expect(sent.map((s) => s.name)).toEqual(['UpdateCommand']);
    expect(sent[0]?.input.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
  });

  it('is not stored when the refusal found another answer, or none', async () => {
    for (const found of [stored('{"other":true}'), undefined]) {
      const { client } = fakeClient(({ name }) => {
        if (name === 'UpdateCommand') throw refusal(found);
        return {}; // the fallback read (no item on the refusal): nothing there
      });
      expect(await write(new DynamoSessionStore(client, 'table', { clock: systemClock }))).toBe('not-stored');
    }
  });
});

describe('a refusal without the item (dynalite ignores ALL_OLD; or DynamoDB found none)', () => {
  it('putTargetSession reads the kept one: a second request', async () => {
    const { client, sent } = fakeClient(({ name }) => {
      if (name === 'PutCommand') throw refusal();
      return {
        Item: {
          target: 'demo',
          targetSessionId: 'kept-by-the-other',
          protocolVersion: '2025-11-25',
          declaredCapabilities: {},
          expiresAt: NOW + 3600,
        },
      };
    });
    const store = new DynamoSessionStore(client, 'table', { clock: systemClock });
    const kept = await store.putTargetSession(session, {
      target: 'demo',
      protocolVersion: '2025-11-25',
      declaredCapabilities: {},
    });
    expect(kept.targetSessionId).toBe('kept-by-the-other');
    expect(sent.map((s) => s.name)).toEqual(['PutCommand', 'GetCommand']);
    expect(sent[1]?.input.ConsistentRead).toBe(true);
  });

  it('expirePending reads the record (past its TTL too): a second request', async () => {
    const { client, sent } = fakeClient(({ name }) => {
      if (name === 'UpdateCommand') throw refusal();
      return {
        Item: {
          gatewayId: 'gw-1',
          kind: 'relayed',
          method: 'elicitation/create',
          target: 'demo',
          targetRequestId: 1,
          clientRequestId: 7,
          status: 'delivering',
          claim: 'theirs',
          claimedAt: Date.now(),
          createdAt: NOW,
          expiresAt: NOW - 5,
        },
      };
    });
    const store = new DynamoSessionStore(client, 'table', { clock: systemClock });
    expect(await store.expirePending('session-1', 'gw-1')).toMatchObject({
      written: false,
      current: { status: 'delivering', claim: 'theirs' },
    });
    expect(sent.map((s) => s.name)).toEqual(['UpdateCommand', 'GetCommand']);
  });

  it('expirePending of a record that is gone: refused, nothing found', async () => {
    const { client } = fakeClient(({ name }) => {
      if (name === 'UpdateCommand') throw refusal();
      return {};
    });
    const store = new DynamoSessionStore(client, 'table', { clock: systemClock });
    expect(await store.expirePending('session-1', 'gw-1')).toEqual({ written: false, current: undefined });
  });
});

describe("a waiting call's end", () => {
  it('is one conditional delete on the holder token, no read; refused (another holder): nothing, no error', async () => {
    for (const refused of [false, true]) {
      const { client, sent } = fakeClient(({ name }) => {
        if (name === 'PutCommand') return {};
        if (refused) throw refusal();
        return {};
      });
      const store = new DynamoSessionStore(client, 'table', { clock: systemClock });
      const waiting = new WaitingCall(store, 'session-1', 'stream-aaaaaaaaaa', () => NOW + 600, systemClock);
      const snapshot = {
        call: { target: 'demo', method: 'tools/call', clientRequestId: 7, params: {} },
        step: { kind: 'confirm' as const, request: { gatewayId: 'gw-1', method: 'elicitation/create', askedAt: 1 } },
        relayed: [],
        records: ['gw-1'],
        leased: [],
      };
      expect(await waiting.hold(snapshot, 2)).toBe(true);
      const token = (sent[0]?.input.Item as { holder?: string } | undefined)?.holder;
      expect(token).toEqual(expect.any(String));
      await waiting.finish();
      expect(sent.map((s) => s.name)).toEqual(['PutCommand', 'DeleteCommand']);
      expect(sent[1]?.input).toMatchObject({
        ConditionExpression: '#holder = :holder',
        ExpressionAttributeValues: { ':holder': token },
      });
    }
  });
});
