import { Agent } from 'node:http';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { STORE_OPERATION_TIMEOUT_MS } from './dynamo/table';
import { exactlyOnceWrites } from './exactly-once-writes';
import { TABLE_KEYS } from './table-schema';

export interface DynamoClientOptions {
  /** A local DynamoDB API (dynalite); absent in AWS, where the SDK's defaults apply. */
  endpoint?: string;
  region?: string;
}

/**
 * How long DynamoDB may take, per attempt and in all (STORE_OPERATION_TIMEOUT_MS in dynamo/table.ts
 * caps an operation at 5 s whatever the retries do). Without `throwOnRequestTimeout` the SDK only
 * logs a request over `requestTimeout` and keeps waiting — a silent DynamoDB would hang requests.
 * DynamoDB answers in milliseconds; 2 s per attempt only bounds an outage (a paused dynalite, a
 * network partition). Throttling and timeouts are retried by the SDK (standard mode, 3 attempts).
 * A local endpoint (dynalite) runs in a process sharing the machine, often the gateway's own: on a busy
 * machine an attempt there can pass 2 s, and a retry only adds the same work again (the first attempt
 * is still served), so there an attempt may take the whole operation's bound.
 */
export const DYNAMODB_TIMEOUTS = { connectionTimeout: 1000, requestTimeout: 2000, maxAttempts: 3 } as const;

/** One document client per process, reused across invocations (keep-alive sockets). */
export function createDocumentClient(options: DynamoClientOptions = {}): DynamoDBDocumentClient {
  const local = options.endpoint !== undefined;
  const timeouts = {
    connectionTimeout: DYNAMODB_TIMEOUTS.connectionTimeout,
    requestTimeout: local ? STORE_OPERATION_TIMEOUT_MS : DYNAMODB_TIMEOUTS.requestTimeout,
    throwOnRequestTimeout: true,
  };
  const client = new DynamoDBClient({
    region: options.region ?? process.env.AWS_REGION ?? (local ? 'local' : undefined),
    endpoint: options.endpoint,
    // Local endpoints accept any credentials; never fall back to a developer's real ones there.
    credentials: local ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined,
    maxAttempts: DYNAMODB_TIMEOUTS.maxAttempts,
    requestHandler: local ? { httpAgent: new Agent({ keepAlive: true }), ...timeouts } : timeouts,
  });
  // Outside the SDK's retries, before the request's length is set: a write it sends again applies once.
  client.middlewareStack.add(exactlyOnceWrites(client, [TABLE_KEYS.partition, TABLE_KEYS.sort], 'document'), {
    step: 'build',
    priority: 'high',
    name: 'exactlyOnceWrites',
  });
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: true },
  });
}

/** Creates the gateway table if it is missing (local use; in AWS the CDK stack owns the table). */
export async function ensureTable(client: DynamoDBDocumentClient, tableName: string): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: TABLE_KEYS.partition, AttributeType: 'S' },
          { AttributeName: TABLE_KEYS.sort, AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: TABLE_KEYS.partition, KeyType: 'HASH' },
          { AttributeName: TABLE_KEYS.sort, KeyType: 'RANGE' },
        ],
      }),
    );
  } catch (error) {
    // Two local processes starting together: the other one created it first.
    if ((error as { name?: string }).name !== 'ResourceInUseException') throw error;
  }
  for (let i = 0; i < 100; i++) {
    const described = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (described.Table?.TableStatus === 'ACTIVE') return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`table ${tableName} did not become ACTIVE`);
}
