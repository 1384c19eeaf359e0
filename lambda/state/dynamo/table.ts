import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  QueryCommand,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { DYNAMODB_ITEM_LIMIT_BYTES, ItemTooLargeError } from '../../protocol/errors';
import { Backoff } from '../../scheduling/backoff';
import { type Clock, sleep } from '../../scheduling/clock';
import { itemOf } from '../attribute-values';
import type { Item } from '../items';
import { StoreUnavailableError } from '../store';

/**
 * What every part of the DynamoDB store shares (../dynamo-store.ts composes them): the client and the
 * table, the bound on one operation, paged queries, batched writes, and the handling of refused
 * conditions and of what DynamoDB leaves unprocessed.
 */

/**
 * The longest one DynamoDB operation may take by default, retries included (the client's own request
 * timeout and retries are in ../dynamo-client.ts): past it the operation is abandoned and the request
 * answers 503 + Retry-After. DynamoDB answers in milliseconds; this only bounds an outage.
 * Configurable as `storeOperationTimeoutMs`.
 */
export const STORE_OPERATION_TIMEOUT_MS = 5000;

export interface DynamoStoreOptions {
  /**
   * The gateway's clock: what a write says is now (expiries, leases, claims) and what a read compares
   * with. The same clock as the callers', so a test's fake clock need not start at the wall clock's time.
   */
  clock: Clock;
  /** The bound of one operation, retries included (default STORE_OPERATION_TIMEOUT_MS). */
  operationTimeoutMs?: number;
}

/**
 * Runs one operation within `timeoutMs`, and wraps SDK failures other than a refused condition, so
 * callers can answer "try again" — except DynamoDB's item size limit, which no retry fixes (4xx
 * naming the limit).
 */
async function guarded<T>(timeoutMs: number, operation: (signal: AbortSignal) => Promise<T>): Promise<T> {
  try {
    return await operation(AbortSignal.timeout(timeoutMs));
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException || error instanceof ItemTooLargeError) throw error;
    const { name, message } = error as { name?: string; message?: string };
    if (name === 'ValidationException' && /item size|maximum allowed size/i.test(message ?? '')) {
      throw new ItemTooLargeError('the item', DYNAMODB_ITEM_LIMIT_BYTES, { cause: error });
    }
    throw new StoreUnavailableError(error);
  }
}

/**
 * The item a refused conditional write found, as plain values, from the refusal itself: asked for with
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`, DynamoDB puts it on the exception (`Item`, left
 * marshalled by the document client, which converts only a command's output). Undefined when the
 * refusal carries none: there was no item — or a DynamoDB-compatible endpoint that ignores the option
 * (dynalite, the local and tests' DynamoDB, does), so a caller that needs the item reads it instead.
 */
export function refusedItem(error: ConditionalCheckFailedException): Item | undefined {
  return error.Item ? itemOf(error.Item) : undefined;
}

/**
 * Sends `requests`, then again what DynamoDB left unprocessed (throttling: `send` returns it), backing
 * off 50, 100, 200… ms, `attempts` times at most; past them the operation fails as StoreUnavailable.
 */
export async function untilProcessed<T>(
  clock: Clock,
  requests: T[],
  attempts: number,
  what: string,
  send: (requests: T[]) => Promise<T[]>,
): Promise<void> {
  const backoff = new Backoff({ firstMs: 50, factor: 2 });
  for (let attempt = 0, left = requests; left.length > 0; attempt++) {
    if (attempt === attempts)
      throw new StoreUnavailableError(new Error(`unprocessed ${what} after ${attempts} attempts`));
    left = await send(left);
    if (left.length) await sleep(clock, backoff.next());
  }
}

/** One request of a BatchWriteItem. */
export type BatchWrite =
  | { DeleteRequest: { Key: Record<string, unknown> } }
  | { PutRequest: { Item: Record<string, unknown> } };

/** The gateway table, as the parts of the DynamoDB store use it. */
export class DynamoTable {
  private readonly operationTimeoutMs: number;
  readonly clock: Clock;

  constructor(
    readonly client: DynamoDBDocumentClient,
    readonly name: string,
    options: DynamoStoreOptions,
  ) {
    this.operationTimeoutMs = options.operationTimeoutMs ?? STORE_OPERATION_TIMEOUT_MS;
    this.clock = options.clock;
  }

  /** Now on the gateway's clock, in epoch ms. */
  nowMs(): number {
    return this.clock.now();
  }

  /** Now on the gateway's clock, in epoch seconds (what items' expiries are counted in). */
  nowSeconds(): number {
    return Math.floor(this.clock.now() / 1000);
  }

  /** One operation, bounded by the store's operation timeout (see `guarded`). */
  guarded<T>(operation: (signal: AbortSignal) => Promise<T>): Promise<T> {
    return guarded(this.operationTimeoutMs, operation);
  }

  /** A conditional operation: undefined when applied, else DynamoDB's refusal (other failures thrown). */
  async refusal(
    operation: (signal: AbortSignal) => Promise<unknown>,
  ): Promise<ConditionalCheckFailedException | undefined> {
    try {
      await this.guarded(operation);
      return undefined;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return error;
      throw error;
    }
  }

  /** A conditional operation: false when its condition refused it. */
  async applied(operation: (signal: AbortSignal) => Promise<unknown>): Promise<boolean> {
    return (await this.refusal(operation)) === undefined;
  }

  /** A consistent Query of this table, page by page (each page bounded by the store's timeouts). */
  async *pages(input: Omit<QueryCommandInput, 'TableName' | 'ConsistentRead' | 'ExclusiveStartKey'>) {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.guarded((abortSignal) =>
        this.client.send(
          new QueryCommand({ ...input, TableName: this.name, ConsistentRead: true, ExclusiveStartKey: startKey }),
          { abortSignal },
        ),
      );
      yield page;
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }

  /** Writes in chunks of 25 (BatchWriteItem's limit), in order; what is left unprocessed is sent again (5 attempts). */
  async batchWrite(writes: BatchWrite[]): Promise<void> {
    for (let i = 0; i < writes.length; i += 25) {
      await untilProcessed(this.clock, writes.slice(i, i + 25), 5, 'writes', async (requests) => {
        const result = await this.guarded((abortSignal) =>
          this.client.send(new BatchWriteCommand({ RequestItems: { [this.name]: requests } }), { abortSignal }),
        );
        return (result.UnprocessedItems?.[this.name] ?? []) as BatchWrite[];
      });
    }
  }

  batchDelete(keys: Array<{ pk: string; sk: string }>): Promise<void> {
    return this.batchWrite(keys.map((Key) => ({ DeleteRequest: { Key } })));
  }
}
