import { Duration, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { MetricDimension, MetricName } from '../lambda/observability/metric-names';

/** The JSON-RPC code of the errors that are the gateway's (or a target's) fault, not the client's. */
export const SERVER_ERROR_CODE = '-32603';

export interface GatewayMonitoringProps {
  /**
   * The function whose Lambda metrics (Errors, Throttles, Duration, ConcurrentExecutions) get alarms and
   * the dashboard's first row. Omitted for a gateway that is no `lambda.Function` (the Web Function form):
   * those three alarms and that row are then not made; the gateway's own metrics and the table's remain.
   * @default - no function alarms
   */
  readonly function?: lambda.IFunction;
  readonly table: dynamodb.ITable;
  /** The function timeout (the duration alarm and the dashboard's timeout line). */
  readonly timeout: Duration;
  /** CloudWatch namespace of the gateway's own metrics (EMF, lambda/observability/metrics.ts). */
  readonly metricsNamespace: string;
  /** Their `service` dimension. */
  readonly metricsServiceName: string;
  /** Target names, for one latency line each on the dashboard. @default - one SEARCH line per target seen */
  readonly targetNames?: string[];
  /** E-mail address subscribed to the alarm topic. @default - alarms notify nobody */
  readonly alarmEmail?: string;
  /** The duration alarm fires when the longest invocation reaches this share of the timeout. @default 0.9 */
  readonly durationAlarmRatio?: number;
  /** Server-side gateway errors (code -32603: internal, target failed, store unavailable) per 5 minutes. @default 5 */
  readonly gatewayErrorsThreshold?: number;
  /** Relayed input requests (elicitation, sampling, roots) that expired unanswered, per 5 minutes. @default 3 */
  readonly expiredInputThreshold?: number;
  /** Lists in which a target could not be listed (any target), per 5 minutes. @default 5 */
  readonly targetListFailuresThreshold?: number;
}

/** The alarms on a Lambda function's own metrics (with `function` only). */
export interface FunctionAlarms {
  readonly errors: cloudwatch.Alarm;
  readonly throttles: cloudwatch.Alarm;
  readonly duration: cloudwatch.Alarm;
}

/**
 * The gateway's CloudWatch side: alarms (Lambda errors, throttles, an invocation near the timeout — with
 * `function` only —, the gateway's own server errors and expired input requests, DynamoDB throttling), an
 * optional SNS topic with one e-mail subscription, and a dashboard. The metric names and dimensions are the
 * contract in lambda/observability/metrics.ts.
 */
export class GatewayMonitoring extends Construct {
  readonly dashboard: cloudwatch.Dashboard;
  /** Errors, Throttles and Duration of `function`; undefined without it (the Web Function form). */
  readonly functionAlarms?: FunctionAlarms;
  /** GatewayErrors with code -32603, summed over the period. */
  readonly gatewayErrorsAlarm: cloudwatch.Alarm;
  /** ExpiredInputRequests over every method. */
  readonly expiredInputAlarm: cloudwatch.Alarm;
  /** ReadThrottleEvents + WriteThrottleEvents of the table. */
  readonly tableThrottlesAlarm: cloudwatch.Alarm;
  /** TargetListFailures over every target. */
  readonly targetListFailuresAlarm: cloudwatch.Alarm;
  readonly alarmTopic?: sns.Topic;
  private readonly props: GatewayMonitoringProps;

  constructor(scope: Construct, id: string, props: GatewayMonitoringProps) {
    super(scope, id);
    this.props = props;
    const five = Duration.minutes(5);

    if (props.alarmEmail) {
      this.alarmTopic = new sns.Topic(this, 'AlarmTopic', { displayName: 'MCP gateway alarms', enforceSSL: true });
      this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
      Validations.of(this.alarmTopic).acknowledge({
        id: 'Serverless-SNSRedrivePolicy',
        reason:
          'The only subscription is an e-mail address; a redrive queue for undeliverable alarm e-mails would itself need monitoring and adds nothing an operator would act on.',
      });
    }

    if (props.function) this.functionAlarms = this.functionAlarmsOf(props.function);
    const errorsThreshold = props.gatewayErrorsThreshold ?? 5;
    this.gatewayErrorsAlarm = this.alarm(
      'GatewayErrorsAlarm',
      this.gatewayMetric(MetricName.GatewayErrors, { [MetricDimension.code]: SERVER_ERROR_CODE }, { statistic: 'Sum' }),
      errorsThreshold,
      `The gateway answered ${errorsThreshold} or more requests with -32603 in 5 minutes (internal error, a target failed, or the session store was unavailable); see the function's log for the causes.`,
    );
    const expiredThreshold = props.expiredInputThreshold ?? 3;
    this.expiredInputAlarm = this.alarm(
      'ExpiredInputAlarm',
      // A Metrics Insights query sums every method; alarms cannot use SEARCH, and the methods are open-ended.
      new cloudwatch.MathExpression({
        expression: `SELECT SUM(${MetricName.ExpiredInputRequests}) FROM SCHEMA("${props.metricsNamespace}", ${MetricDimension.method}, service) WHERE service = '${props.metricsServiceName}'`,
        usingMetrics: {},
        period: five,
        label: 'expired input requests',
      }),
      expiredThreshold,
      `${expiredThreshold} or more relayed elicitation, sampling or roots requests expired unanswered in 5 minutes: clients are not answering, or answers are not reaching the gateway.`,
    );
    const listThreshold = props.targetListFailuresThreshold ?? 5;
    this.targetListFailuresAlarm = this.alarm(
      'TargetListFailuresAlarm',
      // Summed over targets like the expired-input alarm; the dashboard shows which target (by dimension).
      new cloudwatch.MathExpression({
        expression: `SELECT SUM(${MetricName.TargetListFailures}) FROM SCHEMA("${props.metricsNamespace}", ${MetricDimension.target}, service) WHERE service = '${props.metricsServiceName}'`,
        usingMetrics: {},
        period: five,
        label: 'target list failures',
      }),
      listThreshold,
      `A target could not be listed ${listThreshold} or more times in 5 minutes: its tools are missing from clients' lists. The log line "target skipped in an aggregated list" names it; GET /health?targets=1 shows its last error.`,
    );
    this.tableThrottlesAlarm = this.alarm(
      'TableThrottlesAlarm',
      new cloudwatch.MathExpression({
        expression: 'FILL(reads, 0) + FILL(writes, 0)',
        usingMetrics: {
          reads: props.table.metric('ReadThrottleEvents', { statistic: 'Sum', period: five }),
          writes: props.table.metric('WriteThrottleEvents', { statistic: 'Sum', period: five }),
        },
        period: five,
        label: 'throttled table requests',
      }),
      1,
      'DynamoDB throttled requests to the gateway table (read or write) in 5 minutes; requests then fail with 503 and Retry-After.',
    );

    this.dashboard = this.createDashboard();
  }

  /** The function's Errors alarm (with `function` only; throws without it). */
  get errorsAlarm(): cloudwatch.Alarm {
    return this.requireFunctionAlarms('errorsAlarm').errors;
  }

  /** The function's Throttles alarm (with `function` only; throws without it). */
  get throttlesAlarm(): cloudwatch.Alarm {
    return this.requireFunctionAlarms('throttlesAlarm').throttles;
  }

  /** The function's Duration alarm (with `function` only; throws without it). */
  get durationAlarm(): cloudwatch.Alarm {
    return this.requireFunctionAlarms('durationAlarm').duration;
  }

  /** Every alarm, e.g. for a CodeDeploy deployment group's rollback. */
  get alarms(): cloudwatch.Alarm[] {
    const fn = this.functionAlarms;
    return [
      ...(fn ? [fn.errors, fn.throttles, fn.duration] : []),
      this.gatewayErrorsAlarm,
      this.expiredInputAlarm,
      this.tableThrottlesAlarm,
      this.targetListFailuresAlarm,
    ];
  }

  /** A metric the gateway publishes through Powertools Metrics (EMF). */
  gatewayMetric(
    name: string,
    dimensions: Record<string, string> = {},
    options: cloudwatch.MetricOptions = {},
  ): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: this.props.metricsNamespace,
      metricName: name,
      dimensionsMap: { service: this.props.metricsServiceName, ...dimensions },
      period: Duration.minutes(5),
      ...options,
    });
  }

  private functionAlarmsOf(fn: lambda.IFunction): FunctionAlarms {
    const five = Duration.minutes(5);
    const ratio = this.props.durationAlarmRatio ?? 0.9;
    const timeout = this.props.timeout;
    return {
      errors: this.alarm(
        'ErrorsAlarm',
        fn.metricErrors({ period: five, statistic: 'Sum' }),
        1,
        'The gateway function failed (unhandled errors or crashes) at least once in 5 minutes.',
      ),
      throttles: this.alarm(
        'ThrottlesAlarm',
        fn.metricThrottles({ period: five, statistic: 'Sum' }),
        1,
        'Invocations of the gateway function were throttled (concurrency limit reached).',
      ),
      duration: this.alarm(
        'DurationAlarm',
        fn.metricDuration({ period: five, statistic: 'Maximum' }),
        Math.round(timeout.toMilliseconds() * ratio),
        `An invocation ran for ${Math.round(ratio * 100)}% or more of the ${timeout.toSeconds()} s timeout: a wait was not bounded and the stream risks being cut.`,
      ),
    };
  }

  private requireFunctionAlarms(name: string): FunctionAlarms {
    if (!this.functionAlarms) {
      throw new Error(
        `GatewayMonitoring.${name}: this monitoring has no function (the Web Function form), so no alarms on Lambda function metrics`,
      );
    }
    return this.functionAlarms;
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
    const schema = `{${this.props.metricsNamespace},${dimension},service}`;
    return new cloudwatch.MathExpression({
      expression: `SEARCH('${schema} service="${this.props.metricsServiceName}" MetricName="${metricName}"', '${statistic}', 300)`,
      label,
      period: Duration.minutes(5),
      usingMetrics: {},
    });
  }

  /** The dashboard's first row: the function's invocations, errors, throttles, duration and concurrency. */
  private addFunctionWidgets(dashboard: cloudwatch.Dashboard, fn: lambda.IFunction): void {
    const five = Duration.minutes(5);
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
        leftAnnotations: [
          { value: this.props.timeout.toMilliseconds(), label: 'timeout', color: cloudwatch.Color.RED },
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Concurrent executions',
        left: [fn.metric('ConcurrentExecutions', { period: five, statistic: 'Maximum' })],
        width: 8,
      }),
    );
  }

  private createDashboard(): cloudwatch.Dashboard {
    const fn = this.props.function;
    const five = Duration.minutes(5);
    const targets = this.props.targetNames ?? [];
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(3) });
    if (fn) this.addFunctionWidgets(dashboard, fn);
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
        title: 'Errors answered to clients (by code); targets not listed, target streams resumed (by target)',
        left: [this.search(MetricName.GatewayErrors, MetricDimension.code, 'Sum', 'errors')],
        right: [
          this.search(MetricName.TargetListFailures, MetricDimension.target, 'Sum', 'not listed'),
          // A target that polls (closes its call streams, SSE polling) is resumed: normal, but worth seeing.
          this.search(MetricName.TargetStreamResumes, MetricDimension.target, 'Sum', 'resumed'),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Target latency p99 (ms)',
        left:
          targets.length > 0
            ? targets.map((target) =>
                this.gatewayMetric(
                  MetricName.TargetLatency,
                  { [MetricDimension.target]: target },
                  { statistic: 'p99', label: target },
                ),
              )
            : [this.search(MetricName.TargetLatency, MetricDimension.target, 'p99', 'latency')],
        width: 8,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'DynamoDB consumed capacity and throttled requests',
        left: [
          this.props.table.metricConsumedReadCapacityUnits({ period: five }),
          this.props.table.metricConsumedWriteCapacityUnits({ period: five }),
        ],
        right: [
          this.props.table.metric('ReadThrottleEvents', { statistic: 'Sum', period: five }),
          this.props.table.metric('WriteThrottleEvents', { statistic: 'Sum', period: five }),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        // Per-user OAuth (targets with userOAuth): consents started, completed, failed; refreshes; revocations.
        title: 'Per-user connections (by event)',
        left: [this.search(MetricName.Connections, MetricDimension.event, 'Sum', 'connections')],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        // With policies: tool calls allowed, denied, and (logOnly) that would have been denied.
        title: 'Policy decisions (by decision)',
        left: [this.search(MetricName.PolicyDecisions, MetricDimension.decision, 'Sum', 'decisions')],
        width: 8,
      }),
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 8 }),
    );
    return dashboard;
  }
}
