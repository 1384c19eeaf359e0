/** dynalite in its own process (as DynamoDB is out of process in AWS): prints `ready <endpoint>`. */
import { startEmbeddedDynamo } from '../lambda/local/embedded-dynamodb';

void startEmbeddedDynamo().then((dynamo) => {
  console.log(`ready ${dynamo.endpoint}`);
  process.on('SIGTERM', () => void dynamo.close().then(() => process.exit(0)));
});
