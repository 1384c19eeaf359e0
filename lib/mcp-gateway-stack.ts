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
import {
  DEFAULT_DEPLOYMENT_FORM,
  type DeploymentForm,
  type GatewayContext,
  type GradualDeployment,
  readGatewayContext,
  type VpcContext,
} from './context';
import { LIVE_ALIAS, McpGateway } from './mcp-gateway';
import { McpWebFunctionGateway } from './web-function-gateway';

export interface McpGatewayStackProps extends StackProps {
  /** Validated context (lib/context.ts). */
  readonly settings: GatewayContext;
}

/**
 * The deployable stack: one gateway configured from CDK context, in the deployment form it names
 * (`deploymentForm`: McpGateway behind a function URL, or McpWebFunctionGateway), with its endpoint and
 * names as outputs. The outputs have the same names in both forms.
 */
export class McpGatewayStack extends Stack {
  readonly deploymentForm: DeploymentForm;
  /** The gateway of either form (table, role, log group, requestState key, AppConfig, monitoring, endpoint). */
  readonly deployedGateway: McpGateway | McpWebFunctionGateway;

  constructor(scope: Construct, id: string, props: McpGatewayStackProps) {
    const form = props.settings.deployment.deploymentForm ?? DEFAULT_DEPLOYMENT_FORM;
    super(scope, id, {
      description:
        form === 'webFunction'
          ? 'MCP gateway: Lambda Web Function + DynamoDB'
          : 'MCP gateway: streaming Lambda function URL + DynamoDB',
      ...props,
    });
    this.deploymentForm = form;
    const { gateway, outputs } =
      form === 'webFunction' ? this.webFunctionForm(props.settings) : this.functionUrlForm(props.settings);
    this.deployedGateway = gateway;
    this.addOutputs(gateway, outputs);
  }

  /** The outputs, the same names in both forms; what differs is given by the form. */
  private addOutputs(gateway: McpGateway | McpWebFunctionGateway, form: FormOutputs): void {
    new CfnOutput(this, 'McpEndpoint', {
      value: gateway.endpoint,
      description: 'The MCP endpoint (Streamable HTTP): give this URL to MCP clients',
    });
    new CfnOutput(this, 'GatewayUrl', { value: gateway.url, description: form.urlDescription });
    new CfnOutput(this, 'UrlAuthType', { value: form.authType, description: form.authTypeDescription });
    new CfnOutput(this, 'TableName', {
      value: gateway.table.tableName,
      description: 'The DynamoDB table holding sessions and pending requests',
    });
    new CfnOutput(this, 'FunctionName', { value: form.functionName, description: form.functionNameDescription });
    if (gateway.connectionsKey) {
      new CfnOutput(this, 'ConnectionsKeyArn', {
        value: gateway.connectionsKey.keyArn,
        description:
          "The KMS key that wraps users' stored connections (targets with userOAuth); the configuration's connections.kmsKeyArn (keep it in a configuration edited in AppConfig)",
      });
    }
    if (gateway.appConfig) {
      new CfnOutput(this, 'AppConfig', {
        value: gateway.appConfig.locator,
        description:
          'AppConfig application/environment/configuration profile ids holding the gateway configuration; a new hosted version plus start-deployment changes it, read by each new execution environment',
      });
    }
  }

  /** The function-URL form's gateway (deploymentForm functionUrl); throws for the other form. */
  get gateway(): McpGateway {
    if (!(this.deployedGateway instanceof McpGateway)) {
      throw new Error('this stack deploys the Web Function form (deploymentForm webFunction): see webFunctionGateway');
    }
    return this.deployedGateway;
  }

  /** The Web Function form's gateway (deploymentForm webFunction); throws for the other form. */
  get webFunctionGateway(): McpWebFunctionGateway {
    if (!(this.deployedGateway instanceof McpWebFunctionGateway)) {
      throw new Error('this stack deploys the function URL form (deploymentForm functionUrl): see gateway');
    }
    return this.deployedGateway;
  }

  private functionUrlForm(settings: GatewayContext): { gateway: McpGateway; outputs: FormOutputs } {
    const d = settings.deployment;
    const gateway = new McpGateway(this, 'Gateway', {
      config: settings.configInput,
      configSource: d.configSource,
      memorySize: d.memorySize,
      architecture: d.architecture === 'x86_64' ? lambda.Architecture.X86_64 : lambda.Architecture.ARM_64,
      timeout: Duration.seconds(d.timeoutSeconds),
      logRetention: d.logRetentionDays as RetentionDays,
      reservedConcurrency: d.reservedConcurrency,
      alarmEmail: d.alarmEmail,
      removalPolicy: removalPolicyOf(settings),
      secretArns: d.secretArns,
      gradualDeployment: d.gradualDeployment === 'none' ? undefined : CODEDEPLOY_CONFIGS[d.gradualDeployment],
      activeTracing: d.tracing === 'active',
      ...(d.vpc ? importVpc(this, d.vpc) : {}),
    });
    const region = Stack.of(this).region;
    return {
      gateway,
      outputs: {
        urlDescription: 'The function URL (ends with /); the MCP endpoint is McpEndpoint (<GatewayUrl>mcp)',
        authType: gateway.urlAuthType,
        authTypeDescription:
          gateway.urlAuthType === lambda.FunctionUrlAuthType.AWS_IAM
            ? `AWS_IAM: clients sign every request with SigV4 (service lambda, region ${Token.isUnresolved(region) ? 'of the stack' : region}), e.g. through mcp-proxy-for-aws`
            : 'NONE: the function URL is public; the gateway requires a JWT (Authorization: Bearer) from the configured issuer',
        functionName: gateway.function.functionName,
        functionNameDescription: `The gateway function; the function URL serves its alias "${LIVE_ALIAS}"`,
      },
    };
  }

  private webFunctionForm(settings: GatewayContext): { gateway: McpWebFunctionGateway; outputs: FormOutputs } {
    const d = settings.deployment;
    const gateway = new McpWebFunctionGateway(this, 'Gateway', {
      config: settings.configInput,
      configSource: d.configSource,
      timeout: Duration.seconds(d.timeoutSeconds),
      maxConcurrencyPerEnvironment: d.maxConcurrencyPerEnvironment,
      logRetention: d.logRetentionDays as RetentionDays,
      alarmEmail: d.alarmEmail,
      removalPolicy: removalPolicyOf(settings),
      secretArns: d.secretArns,
    });
    return {
      gateway,
      outputs: {
        urlDescription:
          "The Web Function endpoint's URL (https://<its domain name>/); the MCP endpoint is McpEndpoint (<GatewayUrl>mcp)",
        authType: gateway.endpointAuthType,
        authTypeDescription:
          gateway.endpointAuthType === lambda.WebFunctionAuthType.IAM_AUTH
            ? 'IamAuth: clients sign every request with SigV4 and send the X-Amz-Content-SHA256 header (also without a body); a caller needs lambda:InvokeWebFunctionEndpoint on the endpoint'
            : 'ApplicationManaged: the Web Function endpoint is public; the gateway requires a JWT (Authorization: Bearer) from the configured issuer',
        functionName: gateway.webFunctionName,
        functionNameDescription: 'The gateway Web Function; its endpoint serves the revision of the latest deployment',
      },
    };
  }
}

/** What the outputs say that differs between the forms. */
interface FormOutputs {
  urlDescription: string;
  authType: string;
  authTypeDescription: string;
  functionName: string;
  functionNameDescription: string;
}

function removalPolicyOf(settings: GatewayContext): RemovalPolicy {
  return settings.deployment.removalPolicy === 'destroy' ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
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
