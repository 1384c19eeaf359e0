import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, type GatewayConfigInput } from '../config/schema';
import { runLambdaMode } from './lambda-runtime/cli';
import { startLocalGateway } from './local-gateway';

// The local server runs on the developer's Node 20; the Lambda runs Node 22+, where the AWS SDK's
// notice about future Node 22 requirements does not apply. Silenced here only (set it to 'false' to see it).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const USAGE =
  'usage: npm start -- [--lambda] [--port N] [--host H] [--config FILE] [--dynamodb-endpoint URL] [--no-demo]';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      config: { type: 'string' },
      'dynamodb-endpoint': { type: 'string' },
      'no-demo': { type: 'boolean' },
      // The deployment bundle in local Lambda execution environments (lambda/local/lambda-runtime).
      lambda: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const port = values.port === undefined ? 8080 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`--port: not a port number: ${values.port}`);
  let config: GatewayConfigInput | undefined;
  if (values.config) {
    try {
      config = JSON.parse(readFileSync(values.config, 'utf8'));
    } catch (error) {
      throw new ConfigError(`--config ${values.config}: ${(error as Error).message}`);
    }
  }
  if (values.lambda) {
    return runLambdaMode({
      host: values.host ?? '127.0.0.1',
      port,
      config,
      dynamodbEndpoint: values['dynamodb-endpoint'],
      demo: !values['no-demo'],
    });
  }
  const gateway = await startLocalGateway({
    host: values.host ?? '127.0.0.1',
    port,
    config,
    dynamodbEndpoint: values['dynamodb-endpoint'],
    demo: !values['no-demo'],
  });
  const targets = gateway.config.targets.map((t) => `${t.name} → ${t.url}`).join(', ') || 'none';
  console.log(`MCP gateway ready: ${gateway.url}`);
  console.log(`  targets: ${targets}`);
  console.log(
    `  DynamoDB: ${values['dynamodb-endpoint'] ?? `embedded (${gateway.dynamodbEndpoint})`}, table ${gateway.config.tableName}`,
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: shutting down`);
    // Bounded: a stuck stream must not keep the process alive.
    setTimeout(() => process.exit(0), 5000).unref();
    void gateway.close().then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((error) => {
  const message =
    error instanceof ConfigError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
      ? `${(error as Error).message}\n${USAGE}`
      : `failed to start: ${(error as Error).message}`;
  console.error(message);
  process.exit(1);
});
