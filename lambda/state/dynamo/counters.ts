import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  BRIDGED_CALLS,
  bucketOfSk,
  bucketStartOf,
  COUNTER_TTL_SLACK_SECONDS,
  LIVE_SESSIONS,
  type LiveCounter,
  principalPk,
  rateSk,
} from '../principal-counters';
import type { Admission, PrincipalCounters } from '../store';
import type { DynamoTable } from './table';

/** The per-principal counters of the DynamoDB store (../principal-counters.ts says how they count). */
export class DynamoPrincipalCounters implements PrincipalCounters {
  constructor(private readonly table: DynamoTable) {}

  async countInitialize(
    principal: string,
    windowStart: number,
    windowSeconds: number,
    limit: number,
  ): Promise<boolean> {
    return this.conditionalCount({ pk: principalPk(principal), sk: rateSk(windowStart) }, 1, {
      condition: 'attribute_not_exists(#n) OR #n < :bound',
      bound: limit,
      ttl: windowStart + windowSeconds + COUNTER_TTL_SLACK_SECONDS,
    });
  }

  admitSession(
    principal: string,
    expiresAt: number,
    limits: { max: number; bucketSeconds: number },
    now = this.table.nowSeconds(),
  ): Promise<Admission> {
    return this.admitLive(LIVE_SESSIONS, principal, expiresAt, limits, now);
  }

  async releaseSession(principal: string, expiresAt: number, bucketSeconds: number): Promise<void> {
    await this.releaseLive(LIVE_SESSIONS, principal, expiresAt, bucketSeconds);
  }

  admitBridgedCall(
    principal: string,
    expiresAt: number,
    limits: { max: number; bucketSeconds: number },
    now = this.table.nowSeconds(),
  ): Promise<Admission> {
    return this.admitLive(BRIDGED_CALLS, principal, expiresAt, limits, now);
  }

  async releaseBridgedCall(principal: string, expiresAt: number, bucketSeconds: number): Promise<void> {
    await this.releaseLive(BRIDGED_CALLS, principal, expiresAt, bucketSeconds);
  }

  /** One more live item of `counter` (./principal-counters.ts): read the live buckets, grow only its own. */
  private async admitLive(
    counter: LiveCounter,
    principal: string,
    expiresAt: number,
    limits: { max: number; bucketSeconds: number },
    now: number,
  ): Promise<Admission> {
    const partition = principalPk(principal);
    const own = bucketStartOf(expiresAt, limits.bucketSeconds);
    let others = 0;
    let firstEnd = own + limits.bucketSeconds;
    for await (const page of this.table.pages({
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': partition,
        ':from': counter.sk(bucketStartOf(now, limits.bucketSeconds)),
        ':to': counter.end,
      },
    })) {
      for (const item of page.Items ?? []) {
        const bucket = bucketOfSk(item.sk as string);
        const count = Number(item.count ?? 0);
        if (count > 0) firstEnd = Math.min(firstEnd, bucket + limits.bucketSeconds);
        if (bucket !== own) others += count;
      }
    }
    const refused: Admission = { admitted: false, retryAfterSeconds: Math.max(1, firstEnd - now) };
    const room = limits.max - others;
    if (room <= 0) return refused;
    const admitted = await this.conditionalCount({ pk: partition, sk: counter.sk(own) }, 1, {
      condition: 'attribute_not_exists(#n) OR #n < :bound',
      bound: room,
      ttl: own + limits.bucketSeconds + COUNTER_TTL_SLACK_SECONDS,
    });
    return admitted ? { admitted: true } : refused;
  }

  private async releaseLive(
    counter: LiveCounter,
    principal: string,
    expiresAt: number,
    bucketSeconds: number,
  ): Promise<void> {
    const own = bucketStartOf(expiresAt, bucketSeconds);
    await this.conditionalCount({ pk: principalPk(principal), sk: counter.sk(own) }, -1, {
      condition: '#n > :bound',
      bound: 0,
      ttl: own + bucketSeconds + COUNTER_TTL_SLACK_SECONDS,
    });
  }

  /** `ADD count delta` on one counter item when `condition` holds (its TTL set with it); false when it did not. */
  private async conditionalCount(
    key: { pk: string; sk: string },
    delta: number,
    options: { condition: string; bound: number; ttl: number },
  ): Promise<boolean> {
    try {
      await this.table.guarded((abortSignal) =>
        this.table.client.send(
          new UpdateCommand({
            TableName: this.table.name,
            Key: key,
            UpdateExpression: 'ADD #n :delta SET expiresAt = :ttl',
            ConditionExpression: options.condition,
            ExpressionAttributeNames: { '#n': 'count' },
            ExpressionAttributeValues: { ':delta': delta, ':ttl': options.ttl, ':bound': options.bound },
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
}
