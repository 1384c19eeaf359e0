import { randomFillSync } from 'node:crypto';
import { ROOT_CONTEXT, type SpanContext, type TextMapGetter, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) for one request: accepted from the
 * client's `traceparent`/`tracestate` headers, or started here when there is none (or it is
 * invalid). Parsing and formatting are OpenTelemetry's reference propagator (version rules, all-zero
 * ids, `tracestate` list limits), not a hand-written parser.
 *
 * The gateway records no W3C spans of its own (on Lambda, optional X-Ray active tracing records
 * it; `active-tracing.ts`), so it forwards a received context unchanged: a target's spans become
 * children of the client's span, with no gap for an unreported gateway span. A context it starts
 * is sampled, as an OpenTelemetry root span is by default, so targets that follow the parent's
 * decision record the call.
 */

export const TRACE_HEADERS = { traceparent: 'traceparent', tracestate: 'tracestate' } as const;

export interface TraceContext {
  /** 32 lower-case hex digits: the id every log line of the request carries. */
  readonly traceId: string;
  /** The `traceparent` sent to targets. */
  readonly traceparent: string;
  /** The `tracestate` sent to targets, when the client sent a valid one. */
  readonly tracestate?: string;
  /** True when the client sent no usable `traceparent` and the gateway started the trace. */
  readonly started: boolean;
}

const propagator = new W3CTraceContextPropagator();

const headerGetter: TextMapGetter<Headers> = {
  get: (carrier, key) => carrier.get(key) ?? undefined,
  keys: (carrier) => {
    const names: string[] = [];
    carrier.forEach((_value, name) => {
      names.push(name);
    });
    return names;
  },
};

/**
 * Random bytes for ids, drawn from a pool refilled 4 KiB at a time (as `crypto.randomUUID` does):
 * a `randomBytes` call per id cost more than the rest of starting a trace.
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

/** A non-zero id of `bytes` random bytes, hex (all-zero ids are invalid in W3C Trace Context; 2^-64 odds). */
function randomId(bytes: number): string {
  for (;;) {
    if (poolOffset + bytes > pool.length) {
      randomFillSync(pool);
      poolOffset = 0;
    }
    const id = pool.toString('hex', poolOffset, poolOffset + bytes);
    poolOffset += bytes;
    if (/[^0]/.test(id)) return id;
  }
}

function formatted(spanContext: SpanContext, started: boolean): TraceContext {
  const carrier: Record<string, string> = {};
  propagator.inject(trace.setSpanContext(ROOT_CONTEXT, spanContext), carrier, {
    set: (target, key, value) => {
      target[key] = value;
    },
  });
  return {
    traceId: spanContext.traceId,
    traceparent: carrier[TRACE_HEADERS.traceparent] ?? '',
    ...(carrier[TRACE_HEADERS.tracestate] ? { tracestate: carrier[TRACE_HEADERS.tracestate] } : {}),
    started,
  };
}

/**
 * A new trace, sampled. Formatted here rather than by the propagator: version 00 with two fresh ids
 * and the sampled flag has one spelling, and this runs on every request that brings no trace.
 */
export function startTrace(): TraceContext {
  const traceId = randomId(16);
  return { traceId, traceparent: `00-${traceId}-${randomId(8)}-01`, started: true };
}

/** The client's trace context from its headers, or a new trace when it sent none that is valid. */
export function traceFromHeaders(headers: Headers): TraceContext {
  if (!headers.has(TRACE_HEADERS.traceparent)) return startTrace(); // nothing to extract (the common case)
  const spanContext = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, headers, headerGetter));
  return spanContext ? formatted(spanContext, false) : startTrace();
}
