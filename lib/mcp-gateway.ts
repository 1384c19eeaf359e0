import { existsSync } from 'node:fs';
import * as path from 'node:path';
import {
  Annotations,
  AssetHashType,
  type DockerImage,
  Duration,
  RemovalPolicy,
  Stack,
  Token,
  Validations,
} from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as codedeploy from 'aws-cdk-lib/aws-codedeploy';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3assets from 'aws-cdk-lib/aws-s3-assets';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { ENV, readEnvironment } from '../lambda/config/environment';
import { ConfigError, type GatewayConfig, type GatewayConfigInput, parseConfig } from '../lambda/config/schema';
import { APPCONFIG_ENV, CONFIG_ENV, TABLE_NAME_ENV } from '../lambda/config/source';
import { CORS_ALLOWED_HEADERS, CORS_BY_ENV, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS } from '../lambda/http/cors';
import { DEFAULT_METRICS_NAMESPACE } from '../lambda/observability/metric-names';
import { checkPolicies, describePolicyProblem } from '../lambda/policy/cedar/policies';
import { TABLE_KEYS, TTL_ATTRIBUTE } from '../lambda/state/table-schema';
import { GatewayAppConfig } from './app-config';
import { HANDLER_ENTRY, HANDLER_FILE, PREBUILT_HANDLER_DIR, PREBUILT_HANDLER_FILE, writeBundle } from './bundling';
import { configReferences, FULL_SECRET_ARN_PATTERN } from './context';
import { GatewayMonitoring } from './monitoring';

/**
 * The DynamoDB actions the runtime performs (lambda/state/dynamo-store.ts), and nothing else.
 * `test/cdk/mcp-gateway.test.ts` compares this list with the SDK commands the code sends, so a new
 * command in the store fails the tests until it is granted here (and an unused grant fails too).
 */
export const TABLE_ACTIONS = [
  'dynamodb:BatchGetItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:DeleteItem',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:Query',
  'dynamodb:UpdateItem',
] as const;

/** The only Secrets Manager action granted, on the named secrets only. */
export const SECRET_ACTIONS = ['secretsmanager:GetSecretValue'] as const;

/**
 * The KMS actions the connection vault performs (lambda/connections/envelope.ts: a data key per stored
 * connection, unwrapped to read it), granted on the connections key only, with targets that have
 * `userOAuth`. `test/cdk/connections.test.ts` compares this list with the KMS commands the code sends.
 */
export const CONNECTIONS_KEY_ACTIONS = ['kms:Decrypt', 'kms:GenerateDataKey'] as const;

/**
 * The `purpose` of the encryption context every vault call carries (`contextOf` in
 * lambda/connections/vault.ts); the key grant requires it, so the role cannot use the key for anything else.
 */
export const CONNECTIONS_KEY_PURPOSE = 'mcp-gateway/connection';

/** The table's keys and TTL attribute are the runtime's own (lambda/state/table-schema.ts). */
export { TTL_ATTRIBUTE };

/** Where the runtime looks for the requestState key secret (lambda/crypto/keys.ts `SECRET_ARN_ENV`). */
export const REQUEST_STATE_SECRET_ENV = ENV.requestStateSecretArn;
const TRACING_ENV = ENV.tracing;

/** Lambda allows 4 KB for all environment variables together. */
export const LAMBDA_ENVIRONMENT_LIMIT_BYTES = 4096;

const PROJECT_ROOT = path.join(__dirname, '..');
/** The Lambda handler's source, bundled by esbuild at synth time (present in this repository only). */
export const DEFAULT_ENTRY = path.join(PROJECT_ROOT, HANDLER_ENTRY);
/**
 * The handler as the published package ships it: bundled once by its `prepack` script with the same
 * options (lib/bundling.ts), so an app that installs the package synthesizes without esbuild, these
 * sources or this lockfile. Next to the compiled construct: `<package>/dist/lib/` → `<package>/dist/`.
 */
export const PREBUILT_HANDLER = path.join(PROJECT_ROOT, PREBUILT_HANDLER_DIR);

/**
 * Where the function's code comes from: an explicit `entry`, or the handler source when it sits next to
 * this file (a checkout of the repository, where a change to lambda/ must reach the next synth), are
 * bundled now; otherwise (the installed package, which has no sources) the prebuilt bundle is the code.
 */
export function handlerCodeSource(entry: string | undefined): 'source' | 'prebuilt' {
  if (entry !== undefined || existsSync(DEFAULT_ENTRY)) return 'source';
  if (existsSync(path.join(PREBUILT_HANDLER, PREBUILT_HANDLER_FILE))) return 'prebuilt';
  throw new Error(
    `McpGateway: neither the handler source (${DEFAULT_ENTRY}) nor the prebuilt bundle (${PREBUILT_HANDLER}) exists; reinstall the package, or pass \`entry\``,
  );
}

/** How clients reach the function URL: signed with SigV4, or open because the gateway checks JWTs itself. */
export function functionUrlAuthFor(authType: string): lambda.FunctionUrlAuthType {
  return authType === 'jwt' ? lambda.FunctionUrlAuthType.NONE : lambda.FunctionUrlAuthType.AWS_IAM;
}

/** The alias that serves the function URL; a deployment moves it to the new version (or CodeDeploy shifts it). */
export const LIVE_ALIAS = 'live';

export type { GatewayAppConfigProps } from './app-config';
export type { GatewayMonitoringProps } from './monitoring';
export type { GatewayConfig, GatewayConfigInput };
/** The same lists the gateway core answers with locally (lambda/http/cors.ts), so the two never differ. */
// This module is the published package's entry point (packages/construct): what an app needs to type
// the props, catch a configuration error, or use the parts the construct exposes.
export { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, ConfigError, GatewayAppConfig, GatewayMonitoring };

/**
 * The function URL's own CORS setting, from the configuration's `cors`; undefined when no origin is
 * allowed. Deployed, this is the only CORS: the function is told (GATEWAY_CORS=function-url) to add no
 * CORS headers, because the URL answers preflights itself and its headers would take precedence anyway.
 */
export function functionUrlCors(config: GatewayConfig): lambda.FunctionUrlCorsOptions | undefined {
  const origins = config.cors.allowedOrigins;
  if (origins.length === 0) return undefined;
  return {
    allowedOrigins: [...origins],
    allowedMethods: [lambda.HttpMethod.POST, lambda.HttpMethod.GET, lambda.HttpMethod.DELETE],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: Duration.seconds(CORS_MAX_AGE_SECONDS),
  };
}

/** Where the function reads its configuration (lambda/config/source.ts). */
export type ConfigSource = 'environment' | 'appconfig';

export interface McpGatewayProps {
  /**
   * The gateway configuration (lambda/config/schema.ts), validated here; invalid input throws an
   * error naming the field. `tableName`, when set, becomes the table's physical name; otherwise
   * CloudFormation names the table and the function is told the generated name.
   * @default {} (no targets, schema defaults)
   */
  readonly config?: GatewayConfigInput;
  /**
   * `environment`: the configuration is the GATEWAY_CONFIG variable (it must fit Lambda's 4 KB
   * environment; a change is a stack deployment). `appconfig`: it is an AWS AppConfig hosted
   * configuration (up to 1 MB; a change is an AppConfig deployment), read once per cold start.
   * @default 'environment'
   */
  readonly configSource?: ConfigSource;
  /** @default 1024 */
  readonly memorySize?: number;
  /** @default lambda.Architecture.ARM_64 */
  readonly architecture?: lambda.Architecture;
  /** @default Duration.seconds(900), the Lambda maximum: elicitations wait on people. */
  readonly timeout?: Duration;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** @default - no reserved concurrency (shared account pool) */
  readonly reservedConcurrency?: number;
  /** E-mail address subscribed to the alarm topic. @default - alarms notify nobody */
  readonly alarmEmail?: string;
  /**
   * Applies to the table, the log group, the generated secret, the connections key and the AppConfig
   * resources. @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Secrets Manager secrets the function may read (outbound credentials, the requestState sealing key),
   * as full ARNs including the 6-character suffix. Granted one by one; wildcards are refused.
   * @default []
   */
  readonly secretArns?: string[];
  /**
   * The secret holding the requestState sealing key (2026-07-28), shared by every instance. Used only
   * when the configuration names neither `requestStateSecretArn` nor `requestStateKeys`. Must be
   * addressable by its full ARN. @default a generated secret (64 random characters)
   */
  readonly requestStateSecret?: secretsmanager.ISecret;
  /**
   * Extra environment variables, e.g. for `{"fromEnv": "NAME"}` references in the configuration.
   * They are stored in plain text in the template: never put secrets here. @default {}
   */
  readonly environment?: Record<string, string>;
  /** @default lambda.Runtime.NODEJS_24_X */
  readonly runtime?: lambda.Runtime;
  /** CloudWatch namespace for the gateway's own metrics. @default 'McpGateway' */
  readonly metricsNamespace?: string;
  /** The `service` dimension of the gateway's metrics. @default the stack name */
  readonly metricsServiceName?: string;
  /** The duration alarm fires when the longest invocation reaches this share of the timeout. @default 0.9 */
  readonly durationAlarmRatio?: number;
  /**
   * Shift traffic from the old version to the new one with CodeDeploy, rolling back when the errors,
   * throttles or gateway-errors alarm fires. @default - none: the `live` alias moves at once
   */
  readonly gradualDeployment?: codedeploy.ILambdaDeploymentConfig;
  /**
   * Attach the function to a VPC (to reach targets in a private network). The subnets then need a route
   * to DynamoDB (a gateway endpoint or NAT), Secrets Manager, AppConfig (`configSource: 'appconfig'`) and
   * KMS (`userOAuth`) (interface endpoints or NAT), and to every target. @default - no VPC
   */
  readonly vpc?: ec2.IVpc;
  /** The subnets, with `vpc`. @default - the VPC's private subnets */
  readonly vpcSubnets?: ec2.SubnetSelection;
  /** Security groups, with `vpc`. @default - one that allows all outbound traffic and no inbound */
  readonly securityGroups?: ec2.ISecurityGroup[];
  /**
   * The handler file, bundled with esbuild at synth time. @default the prebuilt bundle of the installed
   * package (lambda/handler.ts bundled from source in this repository)
   */
  readonly entry?: string;
  /**
   * AWS X-Ray active tracing: Lambda records each invocation, and the function adds a subsegment per
   * MCP request (Powertools Tracer) with DynamoDB and target calls under it, annotated with the
   * request's W3C trace id. Needs `xray:PutTraceSegments`/`PutTelemetryRecords` on `*`. @default false
   */
  readonly activeTracing?: boolean;
}

/**
 * The props both deployment forms take: the configuration and where it is read from, the table's and log
 * group's lifecycle, secrets, extra environment, metrics names and the alarm e-mail (McpGateway for the
 * function URL; McpWebFunctionGateway, lib/web-function-gateway.ts, for the Web Function).
 */
export type GatewaySharedProps = Pick<
  McpGatewayProps,
  | 'config'
  | 'configSource'
  | 'logRetention'
  | 'alarmEmail'
  | 'removalPolicy'
  | 'secretArns'
  | 'requestStateSecret'
  | 'environment'
  | 'metricsNamespace'
  | 'metricsServiceName'
>;

/** Variables every form sets itself, so `environment` may not. */
const CONSTRUCT_VARIABLES = [
  CONFIG_ENV,
  APPCONFIG_ENV,
  TABLE_NAME_ENV,
  ENV.metricsNamespace,
  ENV.serviceName,
  'NODE_OPTIONS',
  REQUEST_STATE_SECRET_ENV,
  CORS_BY_ENV,
  TRACING_ENV,
];

/**
 * What both deployment forms share, in one place: the validated configuration, the table, the log group,
 * the role (its log group, its table, the named secrets, AppConfig), the requestState key secret, the
 * AppConfig configuration and the environment the gateway reads. A form adds its compute (a function
 * behind a function URL, or a Web Function), its monitoring and its own variables. The parts keep their
 * construct ids, so their logical ids are the same in both forms.
 */
export abstract class GatewayBase extends Construct {
  /** The validated configuration (tableName filled in), as written to GATEWAY_CONFIG or AppConfig. */
  readonly config: GatewayConfig;
  readonly configSource: ConfigSource;
  readonly table: dynamodb.Table;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
  /** The requestState key secret the function reads through GATEWAY_REQUEST_STATE_SECRET_ARN, if any. */
  readonly requestStateSecret?: secretsmanager.ISecret;
  /**
   * The KMS key that wraps the users' stored connections (`targets[].userOAuth`), created when a target
   * has `userOAuth` and the configuration names no `connections.kmsKeyArn`; its ARN is the deployed
   * configuration's `connections.kmsKeyArn`. Undefined otherwise (a named key is granted, not created).
   */
  readonly connectionsKey?: kms.IKey;
  /** With `configSource: 'appconfig'`. */
  readonly appConfig?: GatewayAppConfig;
  readonly metricsNamespace: string;
  readonly metricsServiceName: string;
  abstract readonly monitoring: GatewayMonitoring;
  /** The configuration as validated, before the table's name is filled in. */
  protected readonly parsedConfig: GatewayConfig;
  /** The table's, the log group's (and any other log group's) removal policy. */
  protected readonly removalPolicy: RemovalPolicy;
  /** The retention of the gateway's log group (and any other log group of the form). */
  protected readonly logRetention: logs.RetentionDays;

  protected constructor(scope: Construct, id: string, props: GatewaySharedProps, timeout: Duration, kind: string) {
    super(scope, id);
    const input = props.config ?? {};
    const parsed = parseConfig(input, `${kind} config`);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.parsedConfig = parsed;
    this.removalPolicy = removalPolicy;
    this.logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    this.configSource = props.configSource ?? 'environment';
    checkTimeout(parsed, timeout);
    checkPolicyText(parsed, kind);
    this.metricsNamespace = props.metricsNamespace ?? DEFAULT_METRICS_NAMESPACE;
    this.metricsServiceName = props.metricsServiceName ?? Stack.of(this).stackName;

    // Each step below builds one part; the constructor only assigns what they return, in dependency order.
    this.table = this.createTable(input.tableName, removalPolicy);
    this.connectionsKey = this.createConnectionsKey(parsed, removalPolicy);
    // What the function reads: the configuration with the created key's ARN, if a key was created.
    const deployed = this.connectionsKey ? withConnectionsKeyArn(parsed, this.connectionsKey.keyArn) : parsed;
    this.config = { ...deployed, tableName: this.table.tableName };
    this.logGroup = new logs.LogGroup(this, 'Logs', { retention: this.logRetention, removalPolicy });
    this.role = this.createRole();
    this.requestStateSecret = this.requestStateKey(parsed, props, removalPolicy);
    this.grantSecrets(parsed, props);
    this.grantConnectionsKey(deployed);
    if (this.configSource === 'appconfig') {
      // Read by exactly this function, this profile.
      this.appConfig = new GatewayAppConfig(this, 'AppConfig', { config: deployed, removalPolicy });
      this.appConfig.grantRead(this.role);
    }
  }

  /** A metric the gateway publishes through Powertools Metrics (EMF). */
  gatewayMetric(
    name: string,
    dimensions: Record<string, string> = {},
    options: cloudwatch.MetricOptions = {},
  ): cloudwatch.Metric {
    return this.monitoring.gatewayMetric(name, dimensions, options);
  }

  /**
   * The gateway's environment: `environment` (checked as a cold start checks it), the metrics names,
   * source maps, the form's own `variables`, then where the configuration is and the requestState key.
   * Checked against Lambda's 4 KB with what the platform adds (`added`, e.g. a Web Function's entry
   * point); none of them may be set through `environment`.
   */
  protected gatewayEnvironment(
    props: GatewaySharedProps,
    variables: Record<string, string>,
    added: Record<string, string> = {},
  ): Record<string, string> {
    const extraEnvironment = props.environment ?? {};
    for (const key of Object.keys(extraEnvironment)) {
      if (CONSTRUCT_VARIABLES.includes(key) || key in variables || key in added) {
        throw new Error(`environment: ${key} is set by the construct`);
      }
    }
    // The gateway's own variables among them (GATEWAY_LOG_LEVEL, GATEWAY_KEEPALIVE_MS, …) are checked
    // here as the function checks them at a cold start, so a typo fails the synth, not every cold start.
    // (A token, e.g. a CloudFormation parameter, is known only at deploy time: checked at the cold start.)
    readEnvironment(Object.fromEntries(Object.entries(extraEnvironment).filter(([, v]) => !Token.isUnresolved(v))));
    const environment: Record<string, string> = {
      ...extraEnvironment,
      POWERTOOLS_METRICS_NAMESPACE: this.metricsNamespace,
      POWERTOOLS_SERVICE_NAME: this.metricsServiceName,
      NODE_OPTIONS: '--enable-source-maps',
      ...variables,
    };
    if (this.appConfig) {
      environment[APPCONFIG_ENV] = this.appConfig.locator;
      environment[TABLE_NAME_ENV] = this.table.tableName;
    } else {
      environment[CONFIG_ENV] = Stack.of(this).toJsonString(this.config);
    }
    if (this.requestStateSecret) environment[REQUEST_STATE_SECRET_ENV] = this.requestStateSecret.secretFullArn!;
    // The created key's ARN is known at deploy time only: counted at the length of the longest key ARN.
    const sized = this.connectionsKey
      ? withConnectionsKeyArn(this.parsedConfig, LONGEST_KEY_ARN_STAND_IN)
      : this.parsedConfig;
    checkEnvironmentSize({ ...environment, ...added }, sized, props.config?.tableName);
    warnAboutInlineSecrets(this, this.parsedConfig, this.configSource);
    return environment;
  }

  /** State: one table, one partition per session (ARCHITECTURE.md). */
  private createTable(tableName: string | undefined, removalPolicy: RemovalPolicy): dynamodb.Table {
    return new dynamodb.Table(this, 'Table', {
      tableName,
      partitionKey: { name: TABLE_KEYS.partition, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_KEYS.sort, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: TTL_ATTRIBUTE,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      removalPolicy,
      deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
    });
  }

  /** The role: no managed policies, only this log group and this table (secrets: grantSecrets). */
  private createRole(): iam.Role {
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'MCP gateway function: its log group, its table, named secrets only',
    });
    this.logGroup.grantWrite(role);
    role.addToPolicy(
      new iam.PolicyStatement({ sid: 'GatewayTable', actions: [...TABLE_ACTIONS], resources: [this.table.tableArn] }),
    );
    return role;
  }

  /**
   * The requestState sealing key, unless the configuration names one: one key for the whole fleet, or a
   * retry that reaches another instance cannot open its requestState.
   */
  private requestStateKey(
    parsed: GatewayConfig,
    props: GatewaySharedProps,
    removalPolicy: RemovalPolicy,
  ): secretsmanager.ISecret | undefined {
    const stateKeyConfigured =
      configField(parsed, 'requestStateSecretArn') !== undefined ||
      configField(parsed, 'requestStateKeys') !== undefined;
    if (stateKeyConfigured) return undefined;
    const secret =
      props.requestStateSecret ??
      new secretsmanager.Secret(this, 'RequestStateKey', {
        description:
          'MCP gateway: key material that seals 2026-07-28 requestState (rotate by putting a new value; AWSPREVIOUS still opens)',
        generateSecretString: { passwordLength: 64, excludePunctuation: true },
        removalPolicy,
      });
    if (!secret.secretFullArn) {
      throw new Error(
        'requestStateSecret: import the secret by its full ARN (Secret.fromSecretCompleteArn), so exactly that secret is granted',
      );
    }
    if (!props.requestStateSecret) {
      Validations.of(secret).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason:
          'The requestState sealing key is random key material, not a credential of another service; it is rotated by putting a new secret value (the runtime keeps accepting the AWSPREVIOUS version), which needs no rotation Lambda.',
      });
    }
    return secret;
  }

  /**
   * The key that wraps each user's stored connection (envelope encryption, lambda/connections/envelope.ts),
   * when a target has `userOAuth` and the configuration names none: without it the function would fall
   * back to a key derived from the requestState key. Kept like the table (same removal policy): a
   * retained table's connections open only with this key.
   */
  private createConnectionsKey(parsed: GatewayConfig, removalPolicy: RemovalPolicy): kms.Key | undefined {
    if (!hasUserOAuth(parsed) || parsed.connections.kmsKeyArn !== undefined) return undefined;
    return new kms.Key(this, 'ConnectionsKey', {
      description:
        "MCP gateway: wraps the data keys of per-user OAuth connections (each user's target tokens) stored in the gateway's table",
      enableKeyRotation: true,
      removalPolicy,
    });
  }

  /**
   * With `userOAuth` targets: `kms:GenerateDataKey` and `kms:Decrypt` on the connections key (created or
   * named), only with the vault's encryption context (`purpose`). An alias ARN names no key an IAM
   * policy can hold, so a named alias is granted on the keys of its account and Region, for requests
   * that name that alias (`kms:RequestAlias`; the function always names the key as configured).
   */
  private grantConnectionsKey(deployed: GatewayConfig): void {
    const keyArn = deployed.connections.kmsKeyArn;
    if (!hasUserOAuth(deployed) || keyArn === undefined) return;
    const conditions: Record<string, Record<string, string>> = {
      StringEquals: { 'kms:EncryptionContext:purpose': CONNECTIONS_KEY_PURPOSE },
    };
    const alias = Token.isUnresolved(keyArn) ? null : KMS_ALIAS_ARN.exec(keyArn);
    const resource = alias ? `arn:${alias[1]}:kms:${alias[2]}:${alias[3]}:key/*` : keyArn;
    if (alias) conditions.StringEquals['kms:RequestAlias'] = `alias/${alias[4]}`;
    this.role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'GatewayConnectionsKey',
        actions: [...CONNECTIONS_KEY_ACTIONS],
        resources: [resource],
        conditions,
      }),
    );
    if (alias) {
      Validations.of(this.role.node.findChild('DefaultPolicy')).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${resource}]`,
        reason: `connections.kmsKeyArn names an alias, and IAM cannot grant on an alias: kms:GenerateDataKey and kms:Decrypt are granted on the keys of account ${alias[3]} in ${alias[2]} only for requests that name alias/${alias[4]} (kms:RequestAlias) with the connection vault's encryption context.`,
      });
    }
  }

  /** Only the named secrets: those the configuration references, `secretArns`, and the requestState key. */
  private grantSecrets(parsed: GatewayConfig, props: GatewaySharedProps): void {
    const secretArns = secretsToGrant(props.secretArns ?? [], parsed, props.environment ?? {});
    if (this.requestStateSecret?.secretFullArn) secretArns.push(this.requestStateSecret.secretFullArn);
    if (secretArns.length === 0) return;
    this.role.addToPolicy(
      new iam.PolicyStatement({ sid: 'GatewaySecrets', actions: [...SECRET_ACTIONS], resources: secretArns }),
    );
  }
}

/**
 * An MCP gateway: one Lambda function, published as a version behind the alias `live`, which serves a
 * streaming function URL; its DynamoDB table, least-privilege IAM, a log group, metrics, a dashboard and
 * alarms (GatewayMonitoring), and optionally AppConfig configuration, a VPC and CodeDeploy traffic shifting.
 *
 * @example
 * ```ts
 * const gateway = new McpGateway(this, 'Gateway', {
 *   config: { targets: [{ name: 'docs', url: 'https://docs.example.com/mcp' }] },
 *   alarmEmail: 'ops@example.com',
 * });
 * gateway.grantInvokeUrl(someRole); // when the URL uses AWS_IAM
 * new CfnOutput(this, 'Endpoint', { value: gateway.endpoint });
 * ```
 */
export class McpGateway extends GatewayBase {
  /** Bundled from source (`handlerFromSource`) in this repository or with `entry`; the prebuilt bundle otherwise. */
  readonly function: lambda.Function;
  /** The alias `live`: the function URL invokes it, and a deployment moves it. */
  readonly alias: lambda.Alias;
  readonly functionUrl: lambda.FunctionUrl;
  /** The function URL, ending with `/`. */
  readonly url: string;
  /** The MCP endpoint: `<url>mcp`. */
  readonly endpoint: string;
  readonly urlAuthType: lambda.FunctionUrlAuthType;
  readonly monitoring: GatewayMonitoring;
  readonly dashboard: cloudwatch.Dashboard;
  readonly errorsAlarm: cloudwatch.Alarm;
  readonly throttlesAlarm: cloudwatch.Alarm;
  readonly durationAlarm: cloudwatch.Alarm;
  readonly alarmTopic?: sns.Topic;
  /** With `gradualDeployment`. */
  readonly deploymentGroup?: codedeploy.LambdaDeploymentGroup;

  constructor(scope: Construct, id: string, props: McpGatewayProps = {}) {
    const timeout = props.timeout ?? Duration.seconds(900);
    super(scope, id, props, timeout, 'McpGateway');
    if (!props.vpc && (props.vpcSubnets || props.securityGroups)) {
      throw new Error('vpcSubnets and securityGroups need vpc');
    }
    const parsed = this.parsedConfig;
    this.function = this.createFunction(props, timeout);
    if (props.vpc) this.grantVpcNetworking(props.vpc.selectSubnets(vpcSubnetsOf(props)).subnetIds);
    ({ alias: this.alias, functionUrl: this.functionUrl, urlAuthType: this.urlAuthType } = this.publish(parsed));
    this.url = this.functionUrl.url;
    this.endpoint = `${this.url}mcp`;
    this.monitoring = new GatewayMonitoring(this, 'Monitoring', {
      function: this.function,
      table: this.table,
      timeout,
      metricsNamespace: this.metricsNamespace,
      metricsServiceName: this.metricsServiceName,
      targetNames: parsed.targets.map((target) => target.name),
      alarmEmail: props.alarmEmail,
      durationAlarmRatio: props.durationAlarmRatio,
    });
    this.dashboard = this.monitoring.dashboard;
    this.errorsAlarm = this.monitoring.errorsAlarm;
    this.throttlesAlarm = this.monitoring.throttlesAlarm;
    this.durationAlarm = this.monitoring.durationAlarm;
    this.alarmTopic = this.monitoring.alarmTopic;
    if (props.gradualDeployment) this.deploymentGroup = this.gradualDeployment(props.gradualDeployment);
    this.acknowledgeNagFindings(props);
  }

  /** The function: bundled from source (or the prebuilt bundle), its environment checked as a cold start checks it. */
  private createFunction(props: McpGatewayProps, timeout: Duration): lambda.Function {
    const environment = this.functionEnvironment(props);
    const vpcSubnets = vpcSubnetsOf(props);
    const runtime = props.runtime ?? lambda.Runtime.NODEJS_24_X;
    const functionProps: lambda.FunctionOptions = {
      architecture: props.architecture ?? lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 1024,
      timeout,
      reservedConcurrentExecutions: props.reservedConcurrency,
      role: this.role,
      logGroup: this.logGroup,
      environment,
      description: 'MCP gateway (streaming function URL)',
      vpc: props.vpc,
      vpcSubnets,
      securityGroups: props.securityGroups,
      tracing: props.activeTracing ? lambda.Tracing.ACTIVE : lambda.Tracing.DISABLED,
    };
    return new lambda.Function(this, 'Function', {
      ...functionProps,
      runtime,
      handler: `${path.parse(HANDLER_FILE).name}.handler`,
      code:
        handlerCodeSource(props.entry) === 'source'
          ? handlerFromSource(path.resolve(props.entry ?? DEFAULT_ENTRY), runtime)
          : lambda.Code.fromAsset(PREBUILT_HANDLER),
    });
  }

  /** The shared variables, plus: the function URL's CORS is the only CORS; X-Ray when opted in. */
  private functionEnvironment(props: McpGatewayProps): Record<string, string> {
    return this.gatewayEnvironment(props, {
      // The function URL's CORS setting (from the same `cors`) is the only CORS when deployed.
      [CORS_BY_ENV]: 'function-url',
      ...(props.activeTracing ? { [TRACING_ENV]: 'active' } : {}),
    });
  }

  /** Version, alias `live`, and the streaming function URL on the alias: rollback is moving the alias. */
  private publish(parsed: GatewayConfig) {
    const alias = new lambda.Alias(this, 'Live', {
      aliasName: LIVE_ALIAS,
      version: this.function.currentVersion,
      description: 'The version the function URL serves',
    });
    const urlAuthType = functionUrlAuthFor(parsed.auth.type);
    const functionUrl = alias.addFunctionUrl({
      authType: urlAuthType,
      invokeMode: lambda.InvokeMode.RESPONSE_STREAM,
      cors: functionUrlCors(parsed),
    });
    return { alias, functionUrl, urlAuthType };
  }

  /** CodeDeploy shifts the alias and rolls back on the gateway's alarms. */
  private gradualDeployment(config: codedeploy.ILambdaDeploymentConfig): codedeploy.LambdaDeploymentGroup {
    const group = new codedeploy.LambdaDeploymentGroup(this, 'Deployment', {
      alias: this.alias,
      deploymentConfig: config,
      alarms: [this.monitoring.errorsAlarm, this.monitoring.throttlesAlarm, this.monitoring.gatewayErrorsAlarm],
      autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
    });
    Validations.of(group.role).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSCodeDeployRoleForLambdaLimited]',
      reason:
        'AWSCodeDeployRoleForLambdaLimited is the AWS-maintained least-privilege policy for CodeDeploy Lambda deployments (alias update, alarm reads); a hand-written copy would drift from what CodeDeploy needs.',
    });
    return group;
  }

  /** cdk-nag acknowledgements, each with its reason. */
  private acknowledgeNagFindings(props: McpGatewayProps): void {
    Validations.of(this.function).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason:
        'Invoked only synchronously through its function URL; a dead-letter queue applies to asynchronous invocations, which never happen.',
    });
    if (props.activeTracing) {
      Validations.of(this.role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'Active tracing (opted in with tracing=active): xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level permissions, so X-Ray requires Resource "*"; the two actions only write trace data.',
      });
    } else {
      Validations.of(this.function).acknowledge({
        id: 'Serverless-LambdaTracing',
        reason:
          'X-Ray active tracing is off by default because it needs xray:PutTraceSegments on Resource "*"; it is one context key away (tracing=active). Without it, every log line and the access log carry the request id and W3C trace id, which targets receive too.',
      });
    }
  }

  /** Lets a principal call the URL when it uses AWS_IAM auth (both invoke actions, on the `live` alias). */
  grantInvokeUrl(grantee: iam.IGrantable): iam.Grant {
    return this.alias.grantInvokeUrl(grantee);
  }

  /**
   * What Lambda needs to attach the function to the VPC (it creates and removes the network interfaces
   * with the function's role). The two Describe actions support no resource-level permission; the others
   * are limited to network interfaces of this account and region, and to these subnets and groups.
   */
  private grantVpcNetworking(subnetIds: string[]): void {
    const stack = Stack.of(this);
    const ec2Arn = (resource: string) => stack.formatArn({ service: 'ec2', resource });
    this.role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'GatewayVpcDescribe',
        actions: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'],
        resources: ['*'],
      }),
    );
    this.role.addToPolicy(
      new iam.PolicyStatement({
        sid: 'GatewayVpcInterfaces',
        actions: [
          'ec2:AssignPrivateIpAddresses',
          'ec2:CreateNetworkInterface',
          'ec2:DeleteNetworkInterface',
          'ec2:UnassignPrivateIpAddresses',
        ],
        resources: [
          ec2Arn('network-interface/*'),
          ...subnetIds.map((id) => ec2Arn(`subnet/${id}`)),
          ...this.function.connections.securityGroups.map((group) => ec2Arn(`security-group/${group.securityGroupId}`)),
        ],
      }),
    );
    const reason =
      'In a VPC, Lambda manages the function\'s network interfaces with its role: ec2:DescribeNetworkInterfaces and ec2:DescribeSubnets support no resource-level permission ("*"), and the interfaces it creates have ids unknown in advance (network-interface/* of this account and region); creation is limited to the configured subnets and security groups.';
    Validations.of(this.role.node.findChild('DefaultPolicy')).acknowledge(
      { id: 'AwsSolutions-IAM5[Resource::*]', reason },
      {
        id: 'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:network-interface/*]',
        reason,
      },
    );
  }
}

/** The function's subnets in a VPC: the given ones, else the private subnets with egress. */
function vpcSubnetsOf(props: McpGatewayProps): ec2.SubnetSelection | undefined {
  return props.vpc ? (props.vpcSubnets ?? { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS }) : undefined;
}

/** The configuration and the timeout must agree before anything is built. */
/** Policies that do not validate against the schema the configuration generates fail the synth, where they are wrong. */
function checkPolicyText(parsed: GatewayConfig, kind: string): void {
  if (!parsed.policy) return;
  const checked = checkPolicies(parsed.policy.policies, parsed.policy.argumentTypes);
  if (!checked.ok) {
    throw new ConfigError(
      `invalid ${kind} config: policy.policies: ${checked.problems.map(describePolicyProblem).join('; ')}`,
    );
  }
}

function checkTimeout(parsed: GatewayConfig, timeout: Duration): void {
  // Waiting calls that may be released (streamRelease, at the latest before the deadline) hold no
  // invocation past it: then the wait may outlast it.
  if (parsed.streamRelease === 'never' && parsed.pendingRequestTimeoutSeconds >= timeout.toSeconds()) {
    throw new ConfigError(
      `pendingRequestTimeoutSeconds (${parsed.pendingRequestTimeoutSeconds}) must be less than the function timeout (${timeout.toSeconds()} s) while streamRelease is "never"`,
    );
  }
}

/**
 * The handler bundled from source at synth: the function's code asset is the folder `writeBundle`
 * fills (index.mjs and its chunks, as `npm run build` writes dist/lambda/), by CDK's local bundling with
 * the repository's esbuild, never Docker. (NodejsFunction bundles to a single `--outfile`; esbuild
 * splits a bundle into chunks only in an output folder.)
 */
export function handlerFromSource(entry: string, runtime: lambda.Runtime): lambda.Code {
  const asset = bundledFromSource(entry, runtime.bundlingImage, (outputDir) =>
    writeBundle(entry, outputDir, PROJECT_ROOT),
  );
  return lambda.Code.fromAsset(asset.path, asset.options);
}

/**
 * An asset that is `entry` bundled at synth by CDK's local bundling: the folder `write` fills (with
 * `writeBundle`, the repository's esbuild), given the project root. The function URL's handler and the
 * Web Function's server alike.
 */
export function bundledFromSource(
  entry: string,
  image: DockerImage,
  write: (outputDir: string, projectRoot: string) => void,
): { path: string; options: s3assets.AssetOptions } {
  return {
    path: PROJECT_ROOT,
    options: {
      // The hash of what is deployed, not of the repository's files.
      assetHashType: AssetHashType.OUTPUT,
      bundling: {
        // CDK requires an image, used only when local bundling declines; this one never does (it bundles or throws).
        image,
        // Never run either; it names the entry, so two entries do not share CDK's per-process bundling cache.
        command: ['esbuild', path.relative(PROJECT_ROOT, entry)],
        local: {
          tryBundle(outputDir: string): boolean {
            write(outputDir, PROJECT_ROOT);
            return true;
          },
        },
      },
    },
  };
}

/**
 * Lambda refuses a function whose environment exceeds 4 KB, but only at deploy time; fail at synth
 * instead. A generated table name is counted at its maximum length (255); an unresolved token (an ARN,
 * the AppConfig ids) generously at 256 bytes.
 */
function checkEnvironmentSize(
  environment: Record<string, string>,
  config: GatewayConfig,
  tableName: string | undefined,
): void {
  let total = 0;
  for (const [key, value] of Object.entries(environment)) {
    total += key.length;
    if (key === CONFIG_ENV) {
      total += Buffer.byteLength(JSON.stringify({ ...config, tableName: tableName ?? 'x'.repeat(255) }));
    } else {
      total += Token.isUnresolved(value) ? 256 : Buffer.byteLength(value);
    }
  }
  if (total > LAMBDA_ENVIRONMENT_LIMIT_BYTES) {
    throw new ConfigError(
      CONFIG_ENV in environment
        ? `targets: the gateway configuration needs ${total} bytes of Lambda environment, more than the ${LAMBDA_ENVIRONMENT_LIMIT_BYTES}-byte limit; keep it in AWS AppConfig instead (context configSource=appconfig), or shorten the targets (move credentials to secrets)`
        : `environment: the function's variables need ${total} bytes, more than the ${LAMBDA_ENVIRONMENT_LIMIT_BYTES}-byte Lambda limit`,
    );
  }
}

/** An alias ARN in `connections.kmsKeyArn` (the schema also accepts key ARNs): partition, Region, account, name. */
const KMS_ALIAS_ARN = /^arn:(aws[a-z-]*):kms:([a-z0-9-]+):(\d{12}):alias\/(.+)$/;

/** Longer than any KMS key ARN (partition, Region and a multi-Region key id at their longest). */
const LONGEST_KEY_ARN_STAND_IN = `arn:aws-iso-b:kms:${'x'.repeat(20)}:123456789012:key/mrk-${'0'.repeat(32)}`;

/** Per-user OAuth is configured: the function keeps users' tokens (the connection vault). */
function hasUserOAuth(config: GatewayConfig): boolean {
  return config.targets.some((target) => target.userOAuth !== undefined);
}

/** The configuration with `connections.kmsKeyArn` set (the created key's ARN). */
function withConnectionsKeyArn(config: GatewayConfig, kmsKeyArn: string): GatewayConfig {
  return { ...config, connections: { ...config.connections, kmsKeyArn } };
}

/** Reads a configuration field by name (fields evolve with the schema; absent ones read as undefined). */
function configField(config: GatewayConfig, key: string): unknown {
  return (config as unknown as Record<string, unknown>)[key];
}

/**
 * The secrets the function may read: the explicitly named ones plus every secret the configuration
 * refers to (target headers and OAuth credentials, `requestStateSecretArn`). Each must be a full ARN,
 * so the grant names exactly one secret. Environment references must name a variable the function has.
 */
function secretsToGrant(named: string[], config: GatewayConfig, environment: Record<string, string>): string[] {
  named.forEach((arn, index) => {
    if (!FULL_SECRET_ARN_PATTERN.test(arn)) {
      throw new ConfigError(
        `secretArns[${index}]: "${arn}" is not a full Secrets Manager secret ARN (with its 6-character suffix, no wildcards)`,
      );
    }
  });
  const all = [...named];
  for (const reference of configReferences(config)) {
    const where = reference.path.join('.');
    if (reference.kind === 'fromEnv') {
      if (!(reference.value in environment)) {
        throw new ConfigError(
          `${where}: the function has no environment variable ${reference.value} (pass it in \`environment\`, or use {"secretArn": ...})`,
        );
      }
      continue;
    }
    if (!FULL_SECRET_ARN_PATTERN.test(reference.value)) {
      throw new ConfigError(
        `${where}: "${reference.value}" must be a full Secrets Manager secret ARN (with its 6-character suffix), so the function is granted exactly that secret`,
      );
    }
    all.push(reference.value);
  }
  return [...new Set(all)];
}

/** Secret material given inline ends up in plain text in the template and the function configuration or AppConfig. */
function warnAboutInlineSecrets(scope: Construct, config: GatewayConfig, source: ConfigSource): void {
  const where = source === 'appconfig' ? 'the AppConfig configuration' : 'the function environment';
  const CREDENTIAL_HEADER = /authorization|api[-_]?key|token|secret|password|cookie|credential/i;
  const inline = config.targets.flatMap((target) =>
    Object.entries((target.headers ?? {}) as Record<string, unknown>)
      .filter(([name, value]) => typeof value === 'string' && CREDENTIAL_HEADER.test(name))
      .map(([name]) => `${target.name}: ${name}`),
  );
  if (inline.length > 0) {
    Annotations.of(scope).addWarningV2(
      'mcp-gateway:inline-target-headers',
      `static target headers that look like credentials (${inline.join(', ')}) are stored in plain text in the CloudFormation template and ${where}; use {"secretArn": "..."} references instead.`,
    );
  }
  if (configField(config, 'requestStateKeys') !== undefined) {
    Annotations.of(scope).addWarningV2(
      'mcp-gateway:inline-request-state-keys',
      `requestStateKeys are stored in plain text in the CloudFormation template and ${where}; prefer requestStateSecretArn (or neither: the stack then generates a secret).`,
    );
  }
  if (config.connections.localKey !== undefined) {
    Annotations.of(scope).addWarningV2(
      'mcp-gateway:inline-connections-local-key',
      `connections.localKey is stored in plain text in the CloudFormation template and ${where}, and a deployed gateway with userOAuth targets encrypts connections with a KMS key instead (connections.kmsKeyArn, or the key the stack creates); remove it.`,
    );
  }
}
