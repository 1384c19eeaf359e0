import type { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { checkSize, pendingOf, pendingSk, sessionPk as pk } from '../items';
import {
  dynamoUpdateOf,
  PENDING_TRANSITIONS,
  type TransitionInputs,
  type TransitionName,
} from '../pending-transitions';
import { newClaimToken } from '../records';
import type { PendingRecord, PendingStore, PendingWriteOutcome, RecordOutcome, SessionRecord } from '../store';
import { type DynamoTable, refusedItem } from './table';

/**
 * One transition of a pending record (../pending-transitions.ts) as one conditional UpdateItem:
 * undefined when applied, else the refusal (with the record it found, when the transition asks for it).
 */
export function pendingTransition(
  table: DynamoTable,
  sessionId: string,
  gatewayId: string,
  name: TransitionName,
  inputs: TransitionInputs,
): Promise<ConditionalCheckFailedException | undefined> {
  const update = dynamoUpdateOf(PENDING_TRANSITIONS[name], inputs);
  return table.refusal((abortSignal) =>
    table.client.send(
      new UpdateCommand({ TableName: table.name, Key: { pk: pk(sessionId), sk: pendingSk(gatewayId) }, ...update }),
      { abortSignal },
    ),
  );
}

/** The pending-record part of the DynamoDB store (the bridged calls' places are the counters'). */
export class DynamoPendingRecords implements Omit<PendingStore, 'admitBridgedCall' | 'releaseBridgedCall'> {
  constructor(private readonly table: DynamoTable) {}

  async putPending(session: Pick<SessionRecord, 'id'>, pending: PendingRecord): Promise<void> {
    await this.table.guarded((abortSignal) =>
      this.table.client.send(
        new PutCommand({
          TableName: this.table.name,
          Item: { pk: pk(session.id), sk: pendingSk(pending.gatewayId), ...pending },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
        { abortSignal },
      ),
    );
  }

  async claimPending(sessionId: string, gatewayId: string, now = this.table.nowSeconds()): Promise<string | undefined> {
    const token = newClaimToken();
    return (await this.applied(sessionId, gatewayId, 'claim', { now, nowMs: this.table.nowMs(), token }))
      ? token
      : undefined;
  }

  async settleClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean> {
    return this.applied(sessionId, gatewayId, 'settle', {
      now: this.table.nowSeconds(),
      nowMs: this.table.nowMs(),
      token,
    });
  }

  async releaseClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean> {
    return this.applied(sessionId, gatewayId, 'release', {
      now: this.table.nowSeconds(),
      nowMs: this.table.nowMs(),
      token,
    });
  }

  async ackClaim(sessionId: string, gatewayId: string, token: string): Promise<boolean> {
    return this.applied(sessionId, gatewayId, 'ack', {
      now: this.table.nowSeconds(),
      nowMs: this.table.nowMs(),
      token,
    });
  }

  async expirePending(sessionId: string, gatewayId: string): Promise<PendingWriteOutcome> {
    // Why it was refused (answered, a delivery in flight, expired) comes back with the refusal.
    const inputs = { now: this.table.nowSeconds(), nowMs: this.table.nowMs() };
    return this.outcome(
      sessionId,
      gatewayId,
      await pendingTransition(this.table, sessionId, gatewayId, 'expire', inputs),
    );
  }

  async renewHolder(sessionId: string, gatewayIds: string[], until: number): Promise<void> {
    const inputs = { now: this.table.nowSeconds(), nowMs: this.table.nowMs(), until };
    await Promise.all(gatewayIds.map((gatewayId) => this.applied(sessionId, gatewayId, 'renewHolder', inputs)));
  }

  async deletePending(sessionId: string, gatewayIds: string[]): Promise<void> {
    const [only] = gatewayIds;
    if (only !== undefined && gatewayIds.length === 1) {
      await this.table.guarded((abortSignal) =>
        this.table.client.send(
          new DeleteCommand({ TableName: this.table.name, Key: { pk: pk(sessionId), sk: pendingSk(only) } }),
          { abortSignal },
        ),
      );
      return;
    }
    await this.table.batchDelete(gatewayIds.map((id) => ({ pk: pk(sessionId), sk: pendingSk(id) })));
  }

  async getPending(
    sessionId: string,
    gatewayId: string,
    now = this.table.nowSeconds(),
  ): Promise<PendingRecord | undefined> {
    const out = await this.table.guarded((abortSignal) =>
      this.table.client.send(
        new GetCommand({
          TableName: this.table.name,
          Key: { pk: pk(sessionId), sk: pendingSk(gatewayId) },
          ConsistentRead: true,
        }),
        { abortSignal },
      ),
    );
    const record = out.Item && pendingOf(out.Item);
    return record && record.expiresAt > now ? record : undefined;
  }

  async answerPending(
    sessionId: string,
    gatewayId: string,
    answer: string,
    now = this.table.nowSeconds(),
    options: { principal?: string } = {},
  ): Promise<PendingWriteOutcome> {
    // The answer is kept in the record: it must fit one item with the record's other attributes.
    checkSize('the answer', { answer, gatewayId, pad: 'x'.repeat(1024) });
    // Who answered first (or that this very write was applied, its reply lost) comes back with the refusal.
    const { principal } = options;
    const inputs = { now, nowMs: this.table.nowMs(), answer, principal };
    const name = principal === undefined ? 'answer' : 'answerForPrincipal';
    return this.outcome(sessionId, gatewayId, await pendingTransition(this.table, sessionId, gatewayId, name, inputs));
  }

  async recordAnswer(
    sessionId: string,
    gatewayId: string,
    answer: string,
    now = this.table.nowSeconds(),
    options: { principal?: string } = {},
  ): Promise<RecordOutcome> {
    checkSize('the answer', { answer, gatewayId, pad: 'x'.repeat(1024) });
    const { principal } = options;
    const inputs = { now, nowMs: this.table.nowMs(), answer, principal };
    const name = principal === undefined ? 'record' : 'recordForPrincipal';
    const refusal = await pendingTransition(this.table, sessionId, gatewayId, name, inputs);
    if (!refusal) return true;
    // Refused on a retry: the SDK sent the write again after a reply it never got, which may have been
    // this write applied (the record then went on without it: delivered, even removed with its call).
    return (refusal.$metadata?.attempts ?? 1) > 1 ? 'retried' : false;
  }

  /** One transition of a pending record: false when the condition refused it. */
  private async applied(
    sessionId: string,
    gatewayId: string,
    name: TransitionName,
    inputs: TransitionInputs,
  ): Promise<boolean> {
    return (await pendingTransition(this.table, sessionId, gatewayId, name, inputs)) === undefined;
  }

  /** A pending record's conditional write: written, or refused with the record it found (see `refusedItem`). */
  private async outcome(
    sessionId: string,
    gatewayId: string,
    refusal: ConditionalCheckFailedException | undefined,
  ): Promise<PendingWriteOutcome> {
    if (!refusal) return { written: true };
    const item = refusedItem(refusal);
    if (item) return { written: false, current: pendingOf(item) };
    // No item on the refusal: DynamoDB found none (the read below finds none either), or the endpoint
    // ignored ALL_OLD (dynalite): read it, past its TTL as the refusal would have returned it.
    return { written: false, current: await this.getPending(sessionId, gatewayId, 0) };
  }
}
