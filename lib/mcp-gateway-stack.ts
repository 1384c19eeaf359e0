import { type App, CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { type GatewayContext, readGatewayContext } from './context';
import { McpGateway } from './mcp-gateway';

export interface McpGatewayStackProps extends StackProps {
  /** Validated context (lib/context.ts). */
  readonly settings: GatewayContext;
}

/** The deployable stack: one McpGateway configured from CDK context, with its URL as an output. */
export class McpGatewayStack extends Stack {
  readonly gateway: McpGateway;

  constructor(scope: Construct, id: string, props: McpGatewayStackProps) {
    super(scope, id, { description: 'MCP gateway: streaming Lambda function URL + DynamoDB', ...props });
    const { settings } = props;
    const d = settings.deployment;
    this.gateway = new McpGateway(this, 'Gateway', {
      config: settings.configInput,
      memorySize: d.memorySize,
      architecture: d.architecture === 'x86_64' ? lambda.Architecture.X86_64 : lambda.Architecture.ARM_64,
      timeout: Duration.seconds(d.timeoutSeconds),
      logRetention: d.logRetentionDays as RetentionDays,
      reservedConcurrency: d.reservedConcurrency,
      alarmEmail: d.alarmEmail,
      removalPolicy: d.removalPolicy === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
      secretArns: d.secretArns,
    });
    new CfnOutput(this, 'GatewayUrl', {
      value: this.gateway.url,
      description: 'MCP endpoint (POST); use it as the server URL',
    });
    new CfnOutput(this, 'UrlAuthType', {
      value: this.gateway.urlAuthType,
      description: 'AWS_IAM: sign requests with SigV4 (service lambda)',
    });
    new CfnOutput(this, 'TableName', { value: this.gateway.table.tableName });
    new CfnOutput(this, 'FunctionName', { value: this.gateway.function.functionName });
  }
}

/** Registers cdk-nag's AwsSolutions and Serverless packs: any unacknowledged finding fails synthesis. */
export function addNagChecks(app: App): void {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
}

/** Builds the whole app from its context (used by bin/app.ts and the tests). */
export function buildGatewayApp(app: App): McpGatewayStack {
  const settings = readGatewayContext(app.node);
  const stack = new McpGatewayStack(app, settings.deployment.stackName, {
    settings,
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  addNagChecks(app);
  return stack;
}
