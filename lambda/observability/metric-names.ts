/**
 * The gateway's metric names and dimensions: a contract between the runtime (metrics.ts, which emits
 * them) and the CDK construct's dashboard and alarms (lib/monitoring.ts). Plain data with no imports,
 * so the published construct package loads it without the Powertools runtime code.
 */

/** Namespace used when metrics are enabled by flag and no namespace is configured. */
export const DEFAULT_METRICS_NAMESPACE = 'McpGateway';
/** Service dimension used when `POWERTOOLS_SERVICE_NAME` is not set. */
export const DEFAULT_METRICS_SERVICE = 'mcp-gateway';

export const MetricName = {
  /** A server-to-client request (elicitation/create, sampling/createMessage, roots/list) forwarded to a client. */
  RelayedInputRequests: 'RelayedInputRequests',
  /** A client answer to a relayed request, accepted and delivered to the target. */
  AnsweredInputRequests: 'AnsweredInputRequests',
  /** A relayed request that was never answered before its pending record expired. */
  ExpiredInputRequests: 'ExpiredInputRequests',
  /** An error answered to a client, by JSON-RPC or HTTP code. */
  GatewayErrors: 'GatewayErrors',
  /** Time for one request to a target, in milliseconds. */
  TargetLatency: 'TargetLatency',
  /** A target left out of an aggregated list because it could not be listed. */
  TargetListFailures: 'TargetListFailures',
  /** A reconnect (GET + Last-Event-ID) to a target's stream that ended before its response (SSE polling). */
  TargetStreamResumes: 'TargetStreamResumes',
  /**
   * Per-user OAuth connections, by `event`: `consentStarted` (a call needed a connection and the user
   * got a consent link), `consentCompleted` (tokens stored), `consentFailed` (refused, expired,
   * replayed or the authorization server failed), `refreshed`, `refreshFailed` (re-consent follows),
   * `revoked`.
   */
  Connections: 'Connections',
  /** A tool call decided by the configured policies, by `decision`: `allow`, `deny`, `wouldDeny` (logOnly). */
  PolicyDecisions: 'PolicyDecisions',
} as const;

/** Dimension names (besides Powertools' own `service`). */
export const MetricDimension = {
  method: 'method',
  code: 'code',
  target: 'target',
  event: 'event',
  decision: 'decision',
} as const;

/** The `decision` values of the PolicyDecisions metric. */
export type PolicyDecision = 'allow' | 'deny' | 'wouldDeny';

/** The `event` values of the Connections metric. */
export type ConnectionEvent =
  | 'consentStarted'
  | 'consentCompleted'
  | 'consentFailed'
  | 'refreshed'
  | 'refreshFailed'
  | 'revoked';
