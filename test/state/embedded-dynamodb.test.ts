import { CreateTableCommand, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';

/**
 * The local default store (dynalite on loopback) closes without leaving its hosting process a
 * surprise: a request it is still working on when close() is called gets its answer first. dynalite
 * closes its database when its server closes; a request still inside it then threw "Database is
 * closed" as an uncaught exception in the process that hosts it (`npm start`, a test's gateway).
 */

const client = (endpoint: string) =>
  new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });

it('a request it is answering when close() is called gets its answer, and nothing throws afterwards', async () => {
  const dynamo = await startEmbeddedDynamo();
  const db = client(dynamo.endpoint);
  let closing: Promise<void> | undefined;
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);
  process.on('uncaughtException', onUncaught);
  try {
    await db.send(
      new CreateTableCommand({
        TableName: 'writes',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    // Many writes in flight, then the close once the first is answered: the others are on their way
    // in, or inside dynalite, when it is called.
    const writes = Array.from({ length: 50 }, (_, i) =>
      db.send(new PutItemCommand({ TableName: 'writes', Item: { pk: { S: `item-${i}` } } })).then(
        () => 'answered',
        (error: NodeJS.ErrnoException) => error.code ?? error.message,
      ),
    );
    await Promise.race(writes);
    closing = dynamo.close();
    await closing;
    const outcomes = await Promise.all(writes);
    // A write dynalite took is answered before its database closes. The others were never taken: the
    // port closed (ECONNREFUSED), or their connection closed before dynalite read them (ECONNRESET).
    expect(outcomes.filter((o) => o !== 'answered' && !/ECONNREFUSED|ECONNRESET/.test(o))).toEqual([]);
    expect(outcomes.filter((o) => o === 'answered').length).toBeGreaterThan(1);
    // What dynalite would still have done after its database closed runs in later turns.
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(uncaught).toEqual([]);
  } finally {
    process.off('uncaughtException', onUncaught);
    db.destroy();
    await (closing ?? dynamo.close());
  }
});
