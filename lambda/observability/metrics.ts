import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { MetricUnit as MetricUnitValue } from '@aws-lambda-powertools/metrics/types';
import { authoredErrorOf } from '../protocol/errors';
import {
  type ConnectionEvent,
  DEFAULT_METRICS_NAMESPACE,
  DEFAULT_METRICS_SERVICE,
  MetricDimension,
  MetricName,
  type PolicyDecision,
} from './metric-names';

/**
 * Gateway metrics as CloudWatch Embedded Metric Format (EMF) lines, written with Powertools Metrics.
 * In Lambda, CloudWatch Logs turns each line into metrics; no `PutMetricData` permission is needed.
 *
 * Each helper emits its metric and does nothing else (the access log learns what the client was sent
 * from the messages themselves: ./request-context.ts). They are safe to call anywhere: they do nothing
 * unless metrics are enabled, which happens when `POWERTOOLS_METRICS_NAMESPACE` is set (the CDK stack
 * sets it) or after `configureMetrics()`.
 * Locally (`npm start`, tests) nothing is printed. Every metric is emitted at once as its own EMF
 * line, because one Lambda invocation may stream for minutes and carries different dimensions
 * (method, code, target) per metric.
 *
 * @example
 * ```ts
 * import { recordRelayedInput, recordTargetLatency } from '../observability/metrics';
 * recordRelayedInput('elicitation/create');
 * recordTargetLatency('github', 182);
 * ```
 *
 * The names and dimensions below are a contract with the CloudWatch dashboard and alarms in
 * `lib/monitoring.ts`; change them together.
 */

// The names live apart from the Powertools code, so the CDK construct can read them without loading it.
export { DEFAULT_METRICS_NAMESPACE, DEFAULT_METRICS_SERVICE, MetricDimension, MetricName } from './metric-names';

export interface MetricsSettings {
  /** Force metrics on (true) or off (false); by default on only when POWERTOOLS_METRICS_NAMESPACE is set. */
  enabled?: boolean;
  namespace?: string;
  serviceName?: string;
}

let settings: MetricsSettings = {};
let instance: Metrics | undefined;

function isEnabled(): boolean {
  if (settings.enabled !== undefined) return settings.enabled;
  return Boolean(process.env.POWERTOOLS_METRICS_NAMESPACE);
}

function metrics(): Metrics {
  instance ??= new Metrics({
    namespace: settings.namespace ?? process.env.POWERTOOLS_METRICS_NAMESPACE ?? DEFAULT_METRICS_NAMESPACE,
    serviceName: settings.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? DEFAULT_METRICS_SERVICE,
  });
  return instance;
}

/** Overrides the environment-derived settings (tests, or a local run that wants EMF output). */
export function configureMetrics(next: MetricsSettings): void {
  settings = { ...next };
  instance = undefined;
}

function emit(name: string, unit: MetricUnitValue, value: number, dimension?: { name: string; value: string }): void {
  if (!isEnabled()) return;
  try {
    const single = metrics().singleMetric();
    if (dimension) single.addDimension(dimension.name, dimension.value || 'unknown');
    // A single-metric instance writes its EMF line as soon as the metric is added.
    single.addMetric(name, unit, value);
  } catch {
    // Metrics must never break a request.
  }
}

/** A server-to-client request was forwarded to the client (`method`: elicitation/create, ...). */
export function recordRelayedInput(method: string): void {
  emit(MetricName.RelayedInputRequests, MetricUnit.Count, 1, { name: MetricDimension.method, value: method });
}

/** The client's answer to a relayed request was claimed and delivered. */
export function recordAnsweredInput(method: string): void {
  emit(MetricName.AnsweredInputRequests, MetricUnit.Count, 1, { name: MetricDimension.method, value: method });
}

/** A relayed request expired unanswered. */
export function recordExpiredInput(method: string): void {
  emit(MetricName.ExpiredInputRequests, MetricUnit.Count, 1, { name: MetricDimension.method, value: method });
}

/** An error answered to a client; `code` is the JSON-RPC error code (or an HTTP status). */
export function recordError(code: number | string): void {
  emit(MetricName.GatewayErrors, MetricUnit.Count, 1, { name: MetricDimension.code, value: String(code) });
}

/**
 * A message the gateway sends, to a client or to a target: one `GatewayErrors` (by code) when it is an
 * error the gateway authored (`protocol/errors.ts` marks those, and leaves out the kinds its table marks
 * `expected`). The two places that send call it: `http/client-messages.ts` and `targets/legacy-client.ts`.
 */
export function recordSentError(message: unknown): void {
  const authored = authoredErrorOf(message);
  if (authored) recordError(authored.code);
}

/** Latency of one request to a target. */
export function recordTargetLatency(target: string, ms: number): void {
  if (!Number.isFinite(ms) || ms < 0) return;
  emit(MetricName.TargetLatency, MetricUnit.Milliseconds, ms, { name: MetricDimension.target, value: target });
}

/** The gateway reconnected to a target's stream that ended before the response. */
export function recordTargetStreamResume(target: string): void {
  emit(MetricName.TargetStreamResumes, MetricUnit.Count, 1, { name: MetricDimension.target, value: target });
}

/** One event of a per-user OAuth connection (metric-names.ts lists them). */
export function recordConnectionEvent(event: ConnectionEvent): void {
  emit(MetricName.Connections, MetricUnit.Count, 1, { name: MetricDimension.event, value: event });
}

/** A tool call the configured policies decided. */
export function recordPolicyDecision(decision: PolicyDecision): void {
  emit(MetricName.PolicyDecisions, MetricUnit.Count, 1, { name: MetricDimension.decision, value: decision });
}

/** A target could not be listed (unreachable, failed, timed out) and was left out of a list. */
export function recordTargetListFailure(target: string): void {
  emit(MetricName.TargetListFailures, MetricUnit.Count, 1, { name: MetricDimension.target, value: target });
}

/**
 * Publishes anything still buffered. The helpers above emit immediately, so this only matters if
 * metrics were added to the shared instance directly; call it at the end of an invocation.
 */
export function flushMetrics(): void {
  if (!isEnabled() || !instance) return;
  try {
    if (instance.hasStoredMetrics()) instance.publishStoredMetrics();
  } catch {
    // Never let metrics break a response.
  }
}
