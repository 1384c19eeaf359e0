import {
  type App,
  CfnOutput,
  Duration,
  Fn,
  RemovalPolicy,
  Stack,
  type StackProps,
  Token,
  Validations,
} from 'aws-cdk-lib';
import * as codedeploy from 'aws-cdk-lib/aws-codedeploy';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { type GatewayContext, type GradualDeployment, readGatewayContext, type VpcContext } from './context';
import { LIVE_ALIAS, McpGateway } from './mcp-gateway';

export interface McpGatewayStackProps extends StackProps {
  /** Validated context (lib/context.ts). */
  readonly settings: GatewayContext;
}

/** The deployable stack: one McpGateway configured from CDK context, with its endpoint and names as outputs. */
export class McpGatewayStack extends Stack {
  readonly gateway: McpGateway;

  constructor(scope: Construct, id: string, props: McpGatewayStackProps) {
    super(scope, id, { description: 'MCP gateway: streaming Lambda function URL + DynamoDB', ...props });
    const { settings } = props;
    const d = settings.deployment;
    this.gateway = new McpGateway(this, 'Gateway', {
      config: settings.configInput,
      configSource: d.configSource,
      memorySize: d.memorySize,
      architecture: d.architecture === 'x86_64' ? lambda.Architecture.X86_64 : lambda.Architecture.ARM_64,
      timeout: Duration.seconds(d.timeoutSeconds),
      logRetention: d.logRetentionDays as RetentionDays,
      reservedConcurrency: d.reservedConcurrency,
      alarmEmail: d.alarmEmail,
      removalPolicy: d.removalPolicy === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
      secretArns: d.secretArns,
      gradualDeployment: d.gradualDeployment === 'none' ? undefined : CODEDEPLOY_CONFIGS[d.gradualDeployment],
      activeTracing: d.tracing === 'active',
      ...(d.vpc ? importVpc(this, d.vpc) : {}),
    });
    const region = Stack.of(this).region;
    new CfnOutput(this, 'McpEndpoint', {
      value: this.gateway.endpoint,
      description: 'The MCP endpoint (Streamable HTTP): give this URL to MCP clients',
    });
    new CfnOutput(this, 'GatewayUrl', {
      value: this.gateway.url,
      description: 'The function URL (ends with /); the MCP endpoint is McpEndpoint (<GatewayUrl>mcp)',
    });
    new CfnOutput(this, 'UrlAuthType', {
      value: this.gateway.urlAuthType,
      description:
        this.gateway.urlAuthType === lambda.FunctionUrlAuthType.AWS_IAM
          ? `AWS_IAM: clients sign every request with SigV4 (service lambda, region ${Token.isUnresolved(region) ? 'of the stack' : region}), e.g. through mcp-proxy-for-aws`
          : 'NONE: the function URL is public; the gateway requires a JWT (Authorization: Bearer) from the configured issuer',
    });
    new CfnOutput(this, 'TableName', {
      value: this.gateway.table.tableName,
      description: 'The DynamoDB table holding sessions and pending requests',
    });
    new CfnOutput(this, 'FunctionName', {
      value: this.gateway.function.functionName,
      description: `The gateway function; the function URL serves its alias "${LIVE_ALIAS}"`,
    });
    if (this.gateway.appConfig) {
      new CfnOutput(this, 'AppConfig', {
        value: this.gateway.appConfig.locator,
        description:
          'AppConfig application/environment/configuration profile ids holding the gateway configuration; a new hosted version plus start-deployment changes it, read by each new execution environment',
      });
    }
  }
}

/** CodeDeploy's predefined Lambda configurations by their context names. */
const CODEDEPLOY_CONFIGS: Record<Exclude<GradualDeployment, 'none'>, codedeploy.ILambdaDeploymentConfig> = {
  AllAtOnce: codedeploy.LambdaDeploymentConfig.ALL_AT_ONCE,
  Canary10Percent5Minutes: codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
  Canary10Percent10Minutes: codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_10MINUTES,
  Canary10Percent15Minutes: codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_15MINUTES,
  Canary10Percent30Minutes: codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_30MINUTES,
  Linear10PercentEvery1Minute: codedeploy.LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_1MINUTE,
  Linear10PercentEvery2Minutes: codedeploy.LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_2MINUTES,
  Linear10PercentEvery3Minutes: codedeploy.LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_3MINUTES,
  Linear10PercentEvery10Minutes: codedeploy.LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_10MINUTES,
};

/** The VPC, subnets and security groups from context, by id: no lookups, so synthesis stays offline. */
function importVpc(
  scope: Construct,
  vpc: VpcContext,
): { vpc: ec2.IVpc; vpcSubnets: ec2.SubnetSelection; securityGroups?: ec2.ISecurityGroup[] } {
  return {
    // Availability Zones matter only when selecting subnets by type; here the subnets are given explicitly.
    vpc: ec2.Vpc.fromVpcAttributes(scope, 'Vpc', { vpcId: vpc.vpcId, availabilityZones: Fn.getAzs() }),
    vpcSubnets: { subnets: vpc.subnetIds.map((id, index) => ec2.Subnet.fromSubnetId(scope, `Subnet${index}`, id)) },
    securityGroups: vpc.securityGroupIds?.map((id, index) =>
      ec2.SecurityGroup.fromSecurityGroupId(scope, `SecurityGroup${index}`, id, { mutable: false }),
    ),
  };
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
