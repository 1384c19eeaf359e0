import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { checkSize, eventSk, pendingSk, sessionPk as pk, streamEndSk, streamEventOf } from '../items';
import type { PendingRecord, StreamEventRecord, StreamLogStore } from '../store';
import type { DynamoTable } from './table';

/** The stream-log part of the DynamoDB store: the events of resumable client streams. */
export class DynamoStreamLog implements StreamLogStore {
  constructor(private readonly table: DynamoTable) {}

  async putStreamEvent(sessionId: string, event: StreamEventRecord): Promise<void> {
    const item = { pk: pk(sessionId), sk: eventSk(event.streamId, event.seq), ...event };
    checkSize('the stream event', item);
    await this.table.guarded((abortSignal) =>
      this.table.client.send(new PutCommand({ TableName: this.table.name, Item: item }), { abortSignal }),
    );
  }

  async putStreamEvents(sessionId: string, events: StreamEventRecord[], pending: PendingRecord[] = []): Promise<void> {
    const items = events.map((event) => ({ pk: pk(sessionId), sk: eventSk(event.streamId, event.seq), ...event }));
    for (const item of items) checkSize('the stream event', item);
    // The pending records first: a chunk that fails leaves no event asking what was never recorded.
    await this.table.batchWrite([
      ...pending.map((record) => ({
        PutRequest: { Item: { pk: pk(sessionId), sk: pendingSk(record.gatewayId), ...record } },
      })),
      ...items.map((Item) => ({ PutRequest: { Item } })),
    ]);
  }

  async endStream(
    sessionId: string,
    end: StreamEventRecord,
    drop: number[],
    pending: string[] = [],
    head?: StreamEventRecord,
  ): Promise<void> {
    const item = { pk: pk(sessionId), sk: eventSk(end.streamId, end.seq), ...end };
    checkSize('the stream event', item);
    if (drop.length === 0 && pending.length === 0 && !head) {
      await this.table.guarded((abortSignal) =>
        this.table.client.send(new PutCommand({ TableName: this.table.name, Item: item }), { abortSignal }),
      );
      return;
    }
    // The end first: a reader that comes between two batches finds it and stops there.
    await this.table.batchWrite([
      { PutRequest: { Item: item } },
      ...(head ? [{ PutRequest: { Item: { pk: pk(sessionId), sk: eventSk(head.streamId, 0), ...head } } }] : []),
      ...drop.map((seq) => ({ DeleteRequest: { Key: { pk: pk(sessionId), sk: eventSk(end.streamId, seq) } } })),
      ...pending.map((id) => ({ DeleteRequest: { Key: { pk: pk(sessionId), sk: pendingSk(id) } } })),
    ]);
  }

  async readStream(
    sessionId: string,
    streamId: string,
    fromSeq: number,
    now = this.table.nowSeconds(),
  ): Promise<StreamEventRecord[]> {
    const events: StreamEventRecord[] = [];
    for await (const page of this.table.pages({
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': pk(sessionId),
        ':from': eventSk(streamId, fromSeq),
        ':to': streamEndSk(streamId),
      },
    })) {
      for (const item of page.Items ?? []) {
        const event = streamEventOf(item);
        if (event.expiresAt > now) events.push(event);
      }
    }
    return events;
  }
}
