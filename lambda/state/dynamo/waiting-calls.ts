import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { sessionPk as pk, waitingCallOf, waitingCallSk } from '../items';
import type { WaitingCallRecord, WaitingCallStore } from '../store';
import type { DynamoTable } from './table';

/** The waiting-call part of the DynamoDB store: a released call's record, written on its version. */
export class DynamoWaitingCalls implements WaitingCallStore {
  constructor(private readonly table: DynamoTable) {}

  async getWaitingCall(
    sessionId: string,
    streamId: string,
    now = this.table.nowSeconds(),
  ): Promise<WaitingCallRecord | undefined> {
    const out = await this.table.guarded((abortSignal) =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.name,
          Key: { pk: pk(sessionId), sk: waitingCallSk(streamId) },
          ConsistentRead: true,
        }),
        { abortSignal },
      ),
    );
    const record = out.Item && waitingCallOf(out.Item);
    return record && record.expiresAt > now ? record : undefined;
  }

  async swapWaitingCall(
    sessionId: string,
    next: WaitingCallRecord,
    expectedVersion: number | undefined,
  ): Promise<boolean> {
    try {
      await this.table.guarded((abortSignal) =>
        this.table.client.send(
          new PutCommand({
            TableName: this.table.name,
            Item: { pk: pk(sessionId), sk: waitingCallSk(next.streamId), ...next },
            ...(expectedVersion === undefined
              ? { ConditionExpression: 'attribute_not_exists(pk)' }
              : {
                  // Attribute names are placeholders: DynamoDB reserves many plain words.
                  ConditionExpression: '#v = :v',
                  ExpressionAttributeNames: { '#v': 'version' },
                  ExpressionAttributeValues: { ':v': expectedVersion },
                }),
          }),
          { abortSignal },
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async deleteWaitingCall(sessionId: string, streamId: string, holder?: string): Promise<void> {
    try {
      await this.table.guarded((abortSignal) =>
        this.table.client.send(
          new DeleteCommand({
            TableName: this.table.name,
            Key: { pk: pk(sessionId), sk: waitingCallSk(streamId) },
            ...(holder === undefined
              ? {}
              : {
                  ConditionExpression: '#holder = :holder',
                  ExpressionAttributeNames: { '#holder': 'holder' },
                  ExpressionAttributeValues: { ':holder': holder },
                }),
          }),
          { abortSignal },
        ),
      );
    } catch (error) {
      // Another holder's now (or gone): it is not this holder's to remove.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}
