import type { AccessLogEntry } from './access-log';

/**
 * Optional AWS X-Ray active tracing on Lambda, with Powertools Tracer (loaded only when the stack
 * enables it: `-c tracing=active` sets GATEWAY_TRACING=active and the function's X-Ray mode).
 *
 * Why Powertools Tracer rather than OpenTelemetry: Lambda's active tracing is X-Ray, and Powertools
 * Tracer writes X-Ray segments to the daemon Lambda runs, with nothing else deployed; it instruments
 * the bundled AWS SDK client explicitly (`captureAWSv3Client`) and `fetch` through Node's diagnostics
 * channel, both of which work inside an esbuild bundle; and it is the same pinned release line as
 * the Logger and Metrics already used. OpenTelemetry on Lambda needs a collector (the ADOT layer,
 * or SigV4-signed OTLP export) and its automatic instrumentation hooks module loading, which a
 * single-file bundle bypasses. W3C trace context (trace-context.ts) is independent of this choice:
 * every request has a W3C trace id, traced or not, and each X-Ray subsegment is annotated with it,
 * so an X-Ray trace is found from a log line's `traceId` (`annotation.w3c_trace_id = "…"`).
 *
 * Per request: a subsegment `## mcp` under Lambda's own function segment, current while the core
 * runs (DynamoDB and target calls nest under it), annotated with what the access log reports.
 */

export interface RequestSpan {
  end(entry: AccessLogEntry): void;
}

export interface RequestTracer {
  /** Adds a subsegment per command to an AWS SDK v3 client (the DynamoDB client). */
  instrumentClient<T>(client: T): T;
  begin(): RequestSpan | undefined;
}

export async function createActiveTracer(serviceName: string): Promise<RequestTracer> {
  // Imported only here, so a function without tracing never loads the X-Ray SDK.
  const { Tracer } = await import('@aws-lambda-powertools/tracer');
  const tracer = new Tracer({ serviceName, captureHTTPsRequests: true });
  return {
    instrumentClient: (client) => tracer.captureAWSv3Client(client),
    begin() {
      if (!tracer.isTracingEnabled()) return undefined;
      const parent = tracer.getSegment();
      if (!parent) return undefined;
      const segment = parent.addNewSubsegment('## mcp');
      tracer.setSegment(segment);
      return {
        end(entry) {
          // Annotations are indexed (searchable); X-Ray allows letters, digits and underscores in keys.
          segment.addAnnotation('w3c_trace_id', entry.traceId);
          if (entry.method) segment.addAnnotation('mcp_method', entry.method);
          if (entry.target) segment.addAnnotation('mcp_target', entry.target);
          if (entry.tool) segment.addAnnotation('mcp_tool', entry.tool);
          if (entry.era) segment.addAnnotation('mcp_era', entry.era);
          segment.addAnnotation('http_status', entry.status);
          if (entry.rpcErrorCode !== undefined) segment.addAnnotation('rpc_error_code', entry.rpcErrorCode);
          if (entry.status >= 500) segment.addFaultFlag();
          else if (entry.status >= 400) segment.addErrorFlag();
          segment.close();
          tracer.setSegment(parent);
        },
      };
    },
  };
}
