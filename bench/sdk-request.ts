/**
 * `npx tsx bench/sdk-request.ts [requests]`: the AWS SDK's CPU per DynamoDB request in this process
 * (the store's client, against dynalite in its own process), for the session read as the store makes
 * it and for the variants weighed against it. Rounds alternate the variants so they share the
 * machine's state; the figure is the median round. For choosing a lever; published figures come
 * from `npm run bench`.
 */
import { QueryCommand as RawQueryCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { createDocumentClient, ensureTable } from '../lambda/state/dynamo-client';
import { startChild } from './processes';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const N = Number(process.argv[2] ?? 300);
const ROUNDS = 7;

async function main(): Promise<void> {
  const dynamo = await startChild(['bench/serve-dynamo.ts'], /ready (\S+)/);
  try {
    const client = createDocumentClient({ endpoint: dynamo.url });
    const TableName = 'bench-sdk';
    await ensureTable(client, TableName);
    const session = { principal: 'anonymous', protocolVersion: '2025-11-25', clientCapabilities: {}, expiresAt: 9e9 };
    await client.send(new PutCommand({ TableName, Item: { pk: 'S#q', sk: 'SESSION', ...session } }));
    await client.send(
      new PutCommand({
        TableName,
        Item: { pk: 'S#q', sk: 'T#legacy', targetSessionId: 'x'.repeat(36), expiresAt: 9e9 },
      }),
    );
    // The same client without the middleware a request to DynamoDB can do without: the User-Agent
    // header (SDK telemetry), the logger (no logger is configured).
    const lean = createDocumentClient({ endpoint: dynamo.url });
    for (const name of ['getUserAgentMiddleware', 'loggerMiddleware']) lean.middlewareStack.remove(name);
    const query = (c: typeof client) =>
      c.send(
        new QueryCommand({
          TableName,
          KeyConditionExpression: 'pk = :pk AND sk >= :from',
          ExpressionAttributeValues: { ':pk': 'S#q', ':from': 'S' },
          ConsistentRead: true,
        }),
        { abortSignal: AbortSignal.timeout(5000) },
      );
    const variants: Record<string, () => Promise<unknown>> = {
      'Query (sk >= S), the store client': () => query(client),
      'the same without User-Agent and logger middleware': () => query(lean),
      'the same Query, plain client (no DocumentClient marshalling)': async () => {
        const out = await client.send(
          new RawQueryCommand({
            TableName,
            KeyConditionExpression: 'pk = :pk AND sk >= :from',
            ExpressionAttributeValues: { ':pk': { S: 'S#q' }, ':from': { S: 'S' } },
            ConsistentRead: true,
          }),
          { abortSignal: AbortSignal.timeout(5000) },
        );
        return (out.Items ?? []).map((item) => unmarshall(item));
      },
      'GetItem of the session item alone': () =>
        client.send(new GetCommand({ TableName, Key: { pk: 'S#q', sk: 'SESSION' }, ConsistentRead: true }), {
          abortSignal: AbortSignal.timeout(5000),
        }),
    };
    const results: Record<string, number[]> = {};
    for (const [name, run] of Object.entries(variants)) {
      results[name] = [];
      for (let i = 0; i < 100; i++) await run();
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, run] of Object.entries(variants)) {
        const cpu = process.cpuUsage();
        for (let i = 0; i < N; i++) await run();
        const used = process.cpuUsage(cpu);
        results[name]!.push((used.user + used.system) / N / 1000);
      }
    }
    for (const [name, samples] of Object.entries(results)) {
      const sorted = [...samples].sort((a, b) => a - b);
      console.log(
        `${name}: ${sorted[Math.floor(sorted.length / 2)]!.toFixed(3)} ms CPU per request (median of ${ROUNDS} × ${N})`,
      );
    }
    client.destroy();
    lean.destroy();
  } finally {
    await dynamo.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
