import { Agent } from 'node:http';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface DynamoClientOptions {
  /** A local DynamoDB API (dynalite); absent in AWS, where the SDK's defaults apply. */
  endpoint?: string;
  region?: string;
}

/** One document client per process, reused across invocations (keep-alive sockets). */
export function createDocumentClient(options: DynamoClientOptions = {}): DynamoDBDocumentClient {
  const local = options.endpoint !== undefined;
  const client = new DynamoDBClient({
    region: options.region ?? process.env.AWS_REGION ?? (local ? 'local' : undefined),
    endpoint: options.endpoint,
    // Local endpoints accept any credentials; never fall back to a developer's real ones there.
    credentials: local ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined,
    maxAttempts: 3,
    requestHandler: local
      ? { httpAgent: new Agent({ keepAlive: true }), connectionTimeout: 2000, requestTimeout: 5000 }
      : undefined,
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
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
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
