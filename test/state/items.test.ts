import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { systemClock } from '../../lambda/scheduling/clock';
import { createDocumentClient, ensureTable } from '../../lambda/state/dynamo-client';
import { DynamoSessionStore } from '../../lambda/state/dynamo-store';
import {
  endMarker,
  eventSk,
  type Item,
  MalformedItemError,
  pendingOf,
  pendingSk,
  SESSION_SK,
  sessionOf,
  sessionPk,
  streamEventOf,
  targetSessionOf,
  targetSk,
  waitingCallOf,
  waitingCallSk,
} from '../../lambda/state/items';
import type {
  PendingRecord,
  SessionRecord,
  StreamEventRecord,
  TargetSessionRecord,
  WaitingCallRecord,
} from '../../lambda/state/store';
import { startCountedDynamo } from '../support/dynamo';

/**
 * The stored items of both stores are parsed into records (lambda/state/items.ts): every record
 * comes back as it was written, whatever the key attributes beside it, and an item that is not the
 * record its key says is refused with an error naming the record and the field, never returned as a
 * wrong record.
 */

const session: SessionRecord = {
  id: 's-1',
  principal: 'anonymous',
  protocolVersion: '2025-11-25',
  clientCapabilities: { elicitation: { form: {} } },
  clientInfo: { name: 'client', version: '1.0.0' },
  logLevel: 'debug',
  createdAt: 1_900_000_000,
  expiresAt: 1_900_003_600,
};
const targetSession: TargetSessionRecord = {
  target: 'demo',
  targetSessionId: 'target-session',
  protocolVersion: '2025-06-18',
  declaredCapabilities: { roots: { listChanged: true } },
  lastEventId: 'event-7',
  expiresAt: 1_900_003_600,
};
const pending: PendingRecord = {
  gatewayId: 'gw-1',
  kind: 'relayed',
  method: 'elicitation/create',
  target: 'demo',
  targetSessionId: 'target-session',
  targetRequestId: 3,
  targetProtocolVersion: '2025-06-18',
  clientRequestId: 'call-1',
  status: 'delivering',
  createdAt: 1_900_000_000,
  expiresAt: 1_900_000_300,
  answer: '{"action":"accept"}',
  claim: 'token',
  claimedAt: 1_900_000_001_000,
  holderUntil: 1_900_000_030_000,
  ack: 'token',
};
const event: StreamEventRecord = { streamId: 'stream', seq: 4, data: '{"jsonrpc":"2.0"}', end: true, expiresAt: 1 };
const waitingCall: WaitingCallRecord = {
  streamId: 'stream',
  version: 2,
  state: 'held',
  holder: 'holder',
  holderUntil: 1_900_000_030_000,
  seq: 5,
  snapshot: '{}',
  expiresAt: 1_900_000_900,
};

describe('a stored item parsed into its record', () => {
  it.each<[string, (item: Item) => unknown, object, Item]>([
    ['session', sessionOf, session, { pk: sessionPk('s-1'), sk: SESSION_SK }],
    ['target session', targetSessionOf, targetSession, { pk: sessionPk('s-1'), sk: targetSk('demo') }],
    ['pending record', pendingOf, pending, { pk: sessionPk('s-1'), sk: pendingSk('gw-1') }],
    ['stream event', streamEventOf, event, { pk: sessionPk('s-1'), sk: eventSk('stream', 4) }],
    ['waiting call', waitingCallOf, waitingCall, { pk: sessionPk('s-1'), sk: waitingCallSk('stream') }],
  ])('a %s comes back as it was written, without its key attributes', (_name, parse, record, key) => {
    expect(parse({ ...key, ...record })).toStrictEqual(record);
  });

  it('leaves the optional fields a record did not have absent (not undefined)', () => {
    const minimal: PendingRecord = {
      gatewayId: 'gw-2',
      kind: 'question',
      method: 'elicitation/create',
      target: 'demo',
      targetRequestId: 'gw-2',
      clientRequestId: 1,
      status: 'pending',
      createdAt: 1,
      expiresAt: 2,
    };
    expect(Object.keys(pendingOf({ ...minimal }))).toEqual(Object.keys(minimal));
  });

  it.each<[string, () => unknown, RegExp]>([
    [
      'a session without its principal',
      () => sessionOf({ ...session, principal: undefined }),
      /malformed session item: principal should be a string, found nothing/,
    ],
    [
      'a session whose expiry is text',
      () => sessionOf({ ...session, expiresAt: '1900003600' }),
      /malformed session item: expiresAt should be a number, found a string/,
    ],
    [
      'a target session whose capabilities are a list',
      () => targetSessionOf({ ...targetSession, declaredCapabilities: [] }),
      /malformed target session item: declaredCapabilities should be an object, found an array/,
    ],
    [
      'a pending record of an unknown status',
      () => pendingOf({ ...pending, status: 'lost' }),
      /malformed pending item: status should be one of pending, delivering, recorded, answered, expired, found a string/,
    ],
    [
      'a pending record whose target request id is an object',
      () => pendingOf({ ...pending, targetRequestId: { id: 3 } }),
      /malformed pending item: targetRequestId should be a string or a number, found an object/,
    ],
    [
      'a stream event without its data',
      () => streamEventOf({ ...event, data: undefined }),
      /malformed stream event item: data should be a string, found nothing/,
    ],
    [
      'a waiting call of an unknown state',
      () => waitingCallOf({ ...waitingCall, state: 'gone' }),
      /malformed waiting call item: state should be one of held, released/,
    ],
  ])('refuses %s, naming the record and the field', (_name, parse, message) => {
    expect(parse).toThrow(MalformedItemError);
    expect(parse).toThrow(message);
  });
});

describe('the DynamoDB store reading an item that is not the record its key says', () => {
  it('fails with MalformedItemError instead of returning a wrong record', async () => {
    const dynamo = await startCountedDynamo();
    const client = createDocumentClient({ endpoint: dynamo.endpoint });
    try {
      await ensureTable(client, 'items');
      const store = new DynamoSessionStore(client, 'items', { clock: systemClock });
      // A pending record written by something else: no status, and its expiry as text.
      await client.send(
        new PutCommand({
          TableName: 'items',
          Item: { pk: sessionPk('s-1'), sk: pendingSk('gw-1'), ...pending, status: undefined, expiresAt: 'later' },
        }),
      );
      await expect(store.getPending('s-1', 'gw-1', 0)).rejects.toThrow(MalformedItemError);
    } finally {
      client.destroy();
      await dynamo.close();
    }
  });
});

describe('a call marker', () => {
  it('reads the relay’s end reasons, and the names markers carried before them', () => {
    expect(endMarker('answer-lost')).toBe('answer-lost');
    expect(endMarker('answer-undeliverable')).toBe('answer-lost');
    expect(endMarker('client-cancelled')).toBe('client-cancelled');
    expect(endMarker('cancelled')).toBe('client-cancelled');
    expect(endMarker(undefined)).toBe('client-cancelled');
  });
});
