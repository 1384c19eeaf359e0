import * as path from 'node:path';
import { Annotations, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { type GatewayConfig, type GatewayConfigInput, parseConfig } from '../lambda/config/schema';
import { DEFAULT_METRICS_NAMESPACE, MetricDimension, MetricName } from '../lambda/observability/metrics';
import { configReferences, FULL_SECRET_ARN_PATTERN } from './context';

/**
 * The DynamoDB actions the runtime performs (lambda/state/dynamo-store.ts), and nothing else.
 * `test/cdk/mcp-gateway.test.ts` compares this list with the SDK commands the code sends, so a new
 * command in the store fails the tests until it is granted here (and an unused grant fails too).
 */
export const TABLE_ACTIONS = [
  'dynamodb:BatchWriteItem',
  'dynamodb:DeleteItem',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:Query',
  'dynamodb:UpdateItem',
] as const;

/** The only Secrets Manager action granted, on the named secrets only. */
export const SECRET_ACTIONS = ['secretsmanager:GetSecretValue'] as const;

/** The DynamoDB TTL attribute (epoch seconds); see lambda/state/store.ts `expiresAt`. */
export const TTL_ATTRIBUTE = 'expiresAt';

/** Where the runtime looks for the requestState key secret (lambda/crypto/keys.ts `SECRET_ARN_ENV`). */
export const REQUEST_STATE_SECRET_ENV = 'GATEWAY_REQUEST_STATE_SECRET_ARN';

/** Lambda allows 4 KB for all environment variables together. */
export const LAMBDA_ENVIRONMENT_LIMIT_BYTES = 4096;

/** The Lambda handler, bundled by esbuild. */
export const DEFAULT_ENTRY = path.join(__dirname, '..', 'lambda', 'handler.ts');
const PROJECT_ROOT = path.join(__dirname, '..');

/** How clients reach the function URL: signed with SigV4, or open because the gateway checks JWTs itself. */
export function functionUrlAuthFor(authType: string): lambda.FunctionUrlAuthType {
  return authType === 'jwt' ? lambda.FunctionUrlAuthType.NONE : lambda.FunctionUrlAuthType.AWS_IAM;
}

export interface McpGatewayProps {
  /**
   * The gateway configuration (lambda/config/schema.ts), validated here; invalid input throws an
   * error naming the field. `tableName`, when set, becomes the table's physical name; otherwise
   * CloudFormation names the table and the function is told the generated name.
   * @default {} (no targets, schema defaults)
   */
  readonly config?: GatewayConfigInput;
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
  /** Applies to the table and the log group. @default RemovalPolicy.RETAIN */
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
  /** The handler file. @default lambda/handler.ts of this package */
  readonly entry?: string;
}

/**
 * An MCP gateway: one Lambda function behind a streaming function URL, its DynamoDB table, least-privilege
 * IAM, a log group, metrics, a dashboard and alarms.
 *
 * @example
 * ```ts
 * const gateway = new McpGateway(this, 'Gateway', {
 *   config: { targets: [{ name: 'docs', url: 'https://docs.example.com/mcp' }] },
 *   alarmEmail: 'ops@example.com',
 * });
 * gateway.grantInvokeUrl(someRole); // when the URL uses AWS_IAM
 * new CfnOutput(this, 'Url', { value: gateway.url });
 * ```
 */
export class McpGateway extends Construct {
  /** The validated configuration as written to GATEWAY_CONFIG (tableName filled in). */
  readonly config: GatewayConfig;
  readonly table: dynamodb.Table;
  readonly function: nodejs.NodejsFunction;
  readonly functionUrl: lambda.FunctionUrl;
  readonly url: string;
  readonly urlAuthType: lambda.FunctionUrlAuthType;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
  readonly dashboard: cloudwatch.Dashboard;
  readonly errorsAlarm: cloudwatch.Alarm;
  readonly throttlesAlarm: cloudwatch.Alarm;
  readonly durationAlarm: cloudwatch.Alarm;
  readonly alarmTopic?: sns.Topic;
  /** The requestState key secret the function reads through GATEWAY_REQUEST_STATE_SECRET_ARN, if any. */
  readonly requestStateSecret?: secretsmanager.ISecret;
  readonly metricsNamespace: string;
  readonly metricsServiceName: string;

  constructor(scope: Construct, id: string, props: McpGatewayProps = {}) {
    super(scope, id);
    const input = props.config ?? {};
    const parsed = parseConfig(input, 'McpGateway config');
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const timeout = props.timeout ?? Duration.seconds(900);
    const extraEnvironment = props.environment ?? {};
    const secretArns = secretsToGrant(props.secretArns ?? [], parsed, extraEnvironment);
    const stateKeyConfigured =
      configField(parsed, 'requestStateSecretArn') !== undefined ||
      configField(parsed, 'requestStateKeys') !== undefined;
    if (parsed.pendingRequestTimeoutSeconds >= timeout.toSeconds()) {
      throw new Error(
        `pendingRequestTimeoutSeconds (${parsed.pendingRequestTimeoutSeconds}) must be less than the function timeout (${timeout.toSeconds()} s)`,
      );
    }
    this.metricsNamespace = props.metricsNamespace ?? DEFAULT_METRICS_NAMESPACE;
    this.metricsServiceName = props.metricsServiceName ?? Stack.of(this).stackName;

    // --- State: one table, one partition per session (DESIGN.md).
    this.table = new dynamodb.Table(this, 'Table', {
      tableName: input.tableName,
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: TTL_ATTRIBUTE,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      removalPolicy,
      deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
    });
    this.config = { ...parsed, tableName: this.table.tableName };

    // --- Logs and role: no managed policies, only this log group, this table, the named secrets.
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy,
    });
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'MCP gateway function: its log group, its table, named secrets only',
    });
    this.logGroup.grantWrite(this.role);
    this.role.addToPolicy(
      new iam.PolicyStatement({ sid: 'GatewayTable', actions: [...TABLE_ACTIONS], resources: [this.table.tableArn] }),
    );
    // One key for the whole fleet, or a retry that reaches another instance cannot open its requestState.
    if (!stateKeyConfigured) {
      this.requestStateSecret =
        props.requestStateSecret ??
        new secretsmanager.Secret(this, 'RequestStateKey', {
          description:
            'MCP gateway: key material that seals 2026-07-28 requestState (rotate by putting a new value; AWSPREVIOUS still opens)',
          generateSecretString: { passwordLength: 64, excludePunctuation: true },
          removalPolicy,
        });
      if (!this.requestStateSecret.secretFullArn) {
        throw new Error(
          'requestStateSecret: import the secret by its full ARN (Secret.fromSecretCompleteArn), so exactly that secret is granted',
        );
      }
      secretArns.push(this.requestStateSecret.secretFullArn);
      if (!props.requestStateSecret) {
        Validations.of(this.requestStateSecret).acknowledge({
          id: 'AwsSolutions-SMG4',
          reason:
            'The requestState sealing key is random key material, not a credential of another service; it is rotated by putting a new secret value (the runtime keeps accepting the AWSPREVIOUS version), which needs no rotation Lambda.',
        });
      }
    }
    if (secretArns.length > 0) {
      this.role.addToPolicy(
        new iam.PolicyStatement({ sid: 'GatewaySecrets', actions: [...SECRET_ACTIONS], resources: secretArns }),
      );
    }

    // --- The function.
    const reserved = [
      'GATEWAY_CONFIG',
      'POWERTOOLS_METRICS_NAMESPACE',
      'POWERTOOLS_SERVICE_NAME',
      'NODE_OPTIONS',
      REQUEST_STATE_SECRET_ENV,
    ];
    for (const key of Object.keys(extraEnvironment)) {
      if (reserved.includes(key)) throw new Error(`environment: ${key} is set by the construct`);
    }
    const environment: Record<string, string> = {
      ...extraEnvironment,
      GATEWAY_CONFIG: Stack.of(this).toJsonString(this.config),
      POWERTOOLS_METRICS_NAMESPACE: this.metricsNamespace,
      POWERTOOLS_SERVICE_NAME: this.metricsServiceName,
      NODE_OPTIONS: '--enable-source-maps',
    };
    if (this.requestStateSecret) environment[REQUEST_STATE_SECRET_ENV] = this.requestStateSecret.secretFullArn!;
    checkEnvironmentSize(environment, parsed, input.tableName);
    warnAboutInlineSecrets(this, parsed);

    this.function = new nodejs.NodejsFunction(this, 'Function', {
      entry: props.entry ?? DEFAULT_ENTRY,
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
      runtime: props.runtime ?? lambda.Runtime.NODEJS_24_X,
      architecture: props.architecture ?? lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 1024,
      timeout,
      reservedConcurrentExecutions: props.reservedConcurrency,
      role: this.role,
      logGroup: this.logGroup,
      environment,
      description: 'MCP gateway (streaming function URL)',
      bundling: {
        format: nodejs.OutputFormat.ESM,
        // Pinned SDK versions travel with the code instead of whatever the runtime ships.
        bundleAwsSDK: true,
        minify: true,
        keepNames: true,
        sourceMap: true,
        sourcesContent: false,
        mainFields: ['module', 'main'],
        // Some bundled CommonJS still calls require() for Node built-ins; ESM has no require.
        banner:
          "import { createRequire as __gatewayCreateRequire } from 'node:module'; const require = __gatewayCreateRequire(import.meta.url);",
        forceDockerBundling: false,
      },
    });

    this.urlAuthType = functionUrlAuthFor(parsed.auth.type);
    this.functionUrl = this.function.addFunctionUrl({
      authType: this.urlAuthType,
      invokeMode: lambda.InvokeMode.RESPONSE_STREAM,
    });
    this.url = this.functionUrl.url;

    // --- Alarms, optional e-mail, dashboard.
    if (props.alarmEmail) {
      this.alarmTopic = new sns.Topic(this, 'AlarmTopic', { displayName: 'MCP gateway alarms', enforceSSL: true });
      const subscription = new subscriptions.EmailSubscription(props.alarmEmail);
      this.alarmTopic.addSubscription(subscription);
      Validations.of(this.alarmTopic).acknowledge({
        id: 'Serverless-SNSRedrivePolicy',
        reason:
          'The only subscription is an e-mail address; a redrive queue for undeliverable alarm e-mails would itself need monitoring and adds nothing an operator would act on.',
      });
    }
    const five = Duration.minutes(5);
    this.errorsAlarm = this.alarm(
      'ErrorsAlarm',
      this.function.metricErrors({ period: five, statistic: 'Sum' }),
      1,
      'The gateway function failed (unhandled errors or crashes) at least once in 5 minutes.',
    );
    this.throttlesAlarm = this.alarm(
      'ThrottlesAlarm',
      this.function.metricThrottles({ period: five, statistic: 'Sum' }),
      1,
      'Invocations of the gateway function were throttled (concurrency limit reached).',
    );
    const ratio = props.durationAlarmRatio ?? 0.9;
    this.durationAlarm = this.alarm(
      'DurationAlarm',
      this.function.metricDuration({ period: five, statistic: 'Maximum' }),
      Math.round(timeout.toMilliseconds() * ratio),
      `An invocation ran for ${Math.round(ratio * 100)}% or more of the ${timeout.toSeconds()} s timeout: a wait was not bounded and the stream risks being cut.`,
    );

    this.dashboard = this.createDashboard(parsed, timeout);

    // --- cdk-nag acknowledgements, each with its reason.
    Validations.of(this.function).acknowledge(
      {
        id: 'Serverless-LambdaDLQ',
        reason:
          'Invoked only synchronously through its function URL; a dead-letter queue applies to asynchronous invocations, which never happen.',
      },
      {
        id: 'Serverless-LambdaTracing',
        reason:
          'X-Ray tracing needs xray:PutTraceSegments on Resource "*", which the no-wildcard IAM policy forbids; requests are correlated through structured logs (session, gateway request id, target) and metrics instead.',
      },
    );
  }

  /** Lets a principal call the URL when it uses AWS_IAM auth (lambda:InvokeFunctionUrl on this function). */
  grantInvokeUrl(grantee: iam.IGrantable): iam.Grant {
    return this.function.grantInvokeUrl(grantee);
  }

  /** A metric the gateway publishes through Powertools Metrics (EMF). */
  gatewayMetric(
    name: string,
    dimensions: Record<string, string> = {},
    options: cloudwatch.MetricOptions = {},
  ): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: this.metricsNamespace,
      metricName: name,
      dimensionsMap: { service: this.metricsServiceName, ...dimensions },
      period: Duration.minutes(5),
      ...options,
    });
  }

  private alarm(id: string, metric: cloudwatch.IMetric, threshold: number, description: string): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, {
      metric,
      threshold,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: description,
    });
    if (this.alarmTopic) {
      alarm.addAlarmAction(new cloudwatchActions.SnsAction(this.alarmTopic));
      alarm.addOkAction(new cloudwatchActions.SnsAction(this.alarmTopic));
    }
    return alarm;
  }

  /** CloudWatch SEARCH over one gateway metric, one line per value of `dimension`. */
  private search(metricName: string, dimension: string, statistic: string, label: string): cloudwatch.MathExpression {
    const schema = `{${this.metricsNamespace},${dimension},service}`;
    return new cloudwatch.MathExpression({
      expression: `SEARCH('${schema} service="${this.metricsServiceName}" MetricName="${metricName}"', '${statistic}', 300)`,
      label,
      period: Duration.minutes(5),
      usingMetrics: {},
    });
  }

  private createDashboard(config: GatewayConfig, timeout: Duration): cloudwatch.Dashboard {
    const fn = this.function;
    const five = Duration.minutes(5);
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(3) });
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Invocations, errors, throttles',
        left: [
          fn.metricInvocations({ period: five }),
          fn.metricErrors({ period: five }),
          fn.metricThrottles({ period: five }),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Duration (ms)',
        left: [
          fn.metricDuration({ period: five, statistic: 'p50' }),
          fn.metricDuration({ period: five, statistic: 'p99' }),
          fn.metricDuration({ period: five, statistic: 'Maximum' }),
        ],
        leftAnnotations: [{ value: timeout.toMilliseconds(), label: 'timeout', color: cloudwatch.Color.RED }],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Concurrent executions',
        left: [fn.metric('ConcurrentExecutions', { period: five, statistic: 'Maximum' })],
        width: 8,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Input requests relayed / answered / expired (by method)',
        left: [
          this.search(MetricName.RelayedInputRequests, MetricDimension.method, 'Sum', 'relayed'),
          this.search(MetricName.AnsweredInputRequests, MetricDimension.method, 'Sum', 'answered'),
          this.search(MetricName.ExpiredInputRequests, MetricDimension.method, 'Sum', 'expired'),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Errors answered to clients (by code)',
        left: [this.search(MetricName.GatewayErrors, MetricDimension.code, 'Sum', 'errors')],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Target latency p99 (ms)',
        left:
          config.targets.length > 0
            ? config.targets.map((target) =>
                this.gatewayMetric(
                  MetricName.TargetLatency,
                  { [MetricDimension.target]: target.name },
                  { statistic: 'p99', label: target.name },
                ),
              )
            : [this.search(MetricName.TargetLatency, MetricDimension.target, 'p99', 'latency')],
        width: 8,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'DynamoDB consumed capacity',
        left: [
          this.table.metricConsumedReadCapacityUnits({ period: five }),
          this.table.metricConsumedWriteCapacityUnits({ period: five }),
        ],
        width: 12,
      }),
      new cloudwatch.AlarmStatusWidget({
        title: 'Alarms',
        alarms: [this.errorsAlarm, this.throttlesAlarm, this.durationAlarm],
        width: 12,
      }),
    );
    return dashboard;
  }
}

/**
 * Lambda refuses a function whose environment exceeds 4 KB, but only at deploy time; fail at synth
 * instead. A generated table name is counted at its maximum length (255).
 */
function checkEnvironmentSize(
  environment: Record<string, string>,
  config: GatewayConfig,
  tableName: string | undefined,
): void {
  const configBytes = Buffer.byteLength(JSON.stringify({ ...config, tableName: tableName ?? 'x'.repeat(255) }));
  let total = configBytes + 'GATEWAY_CONFIG'.length;
  for (const [key, value] of Object.entries(environment)) {
    // An unresolved token (an ARN) is counted generously.
    if (key !== 'GATEWAY_CONFIG') total += key.length + (Token.isUnresolved(value) ? 256 : Buffer.byteLength(value));
  }
  if (total > LAMBDA_ENVIRONMENT_LIMIT_BYTES) {
    throw new Error(
      `targets: the gateway configuration needs ${total} bytes of Lambda environment, more than the ${LAMBDA_ENVIRONMENT_LIMIT_BYTES}-byte limit; shorten the targets (move credentials to secrets)`,
    );
  }
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
      throw new Error(
        `secretArns[${index}]: "${arn}" is not a full Secrets Manager secret ARN (with its 6-character suffix, no wildcards)`,
      );
    }
  });
  const all = [...named];
  for (const reference of configReferences(config)) {
    const where = reference.path.join('.');
    if (reference.kind === 'fromEnv') {
      if (!(reference.value in environment)) {
        throw new Error(
          `${where}: the function has no environment variable ${reference.value} (pass it in \`environment\`, or use {"secretArn": ...})`,
        );
      }
      continue;
    }
    if (!FULL_SECRET_ARN_PATTERN.test(reference.value)) {
      throw new Error(
        `${where}: "${reference.value}" must be a full Secrets Manager secret ARN (with its 6-character suffix), so the function is granted exactly that secret`,
      );
    }
    all.push(reference.value);
  }
  return [...new Set(all)];
}

/** Secret material given inline ends up in plain text in the template and the function configuration. */
function warnAboutInlineSecrets(scope: Construct, config: GatewayConfig): void {
  const CREDENTIAL_HEADER = /authorization|api[-_]?key|token|secret|password|cookie|credential/i;
  const inline = config.targets.flatMap((target) =>
    Object.entries((target.headers ?? {}) as Record<string, unknown>)
      .filter(([name, value]) => typeof value === 'string' && CREDENTIAL_HEADER.test(name))
      .map(([name]) => `${target.name}: ${name}`),
  );
  if (inline.length > 0) {
    Annotations.of(scope).addWarningV2(
      'mcp-gateway:inline-target-headers',
      `static target headers that look like credentials (${inline.join(', ')}) are stored in plain text in the CloudFormation template and the function environment; use {"secretArn": "..."} references instead.`,
    );
  }
  if (configField(config, 'requestStateKeys') !== undefined) {
    Annotations.of(scope).addWarningV2(
      'mcp-gateway:inline-request-state-keys',
      'requestStateKeys are stored in plain text in the CloudFormation template and the function environment; prefer requestStateSecretArn (or neither: the stack then generates a secret).',
    );
  }
}
