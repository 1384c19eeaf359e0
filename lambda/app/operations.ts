import { randomUUID } from 'node:crypto';
import { CorsPolicy } from '../http/cors';
import type { ExchangeContext, ExchangeRequest, FetchHandler } from '../http/exchange';
import { accessLogEntry, type ResponseOutcome, writeAccessLog } from '../observability/access-log';
import type { RequestTracer } from '../observability/active-tracing';
import { type RequestContext, runInRequest } from '../observability/request-context';
import { traceFromHeaders } from '../observability/trace-context';
import type { GatewayDeps } from './deps';
import { HEALTH_PATH, healthResponse } from './health';

/**
 * What operators and browsers need around the MCP core, in one wrapper: `GET /health`, CORS
 * (preflights answered before authentication; headers on every answer), and per MCP request a
 * request context (id, W3C trace context: lambda/observability/request-context.ts), an optional
 * X-Ray subsegment, and the access log line once the response has ended.
 */

export interface OperationsOptions {
  /**
   * Who answers CORS: `gateway` (locally) or `platform` (deployed: the function URL's own CORS
   * setting, made from the same `cors` value, answers preflights and its headers take precedence,
   * so the function adds none and the two can never disagree).
   */
  cors?: 'gateway' | 'platform';
  /** Active tracing (Lambda with X-Ray). */
  tracer?: RequestTracer;
}

export function withOperations(
  deps: GatewayDeps,
  core: FetchHandler,
  mcpPath: string,
  options: OperationsOptions = {},
): FetchHandler {
  const cors = new CorsPolicy(options.cors === 'platform' ? [] : deps.config.cors.allowedOrigins);
  const corsOn = cors.enabled;
  return async (request: ExchangeRequest, exchange: ExchangeContext): Promise<Response> => {
    const preflight = corsOn ? cors.preflight(request) : undefined;
    if (preflight) return preflight;
    const path = new URL(request.url).pathname;
    let response: Response;
    if (path === HEALTH_PATH) {
      response = await healthResponse(deps, request, exchange, new URL(request.url));
    } else if (path !== mcpPath) {
      response = await core(request, exchange);
    } else {
      response = await observed(deps, core, request, exchange, options.tracer);
    }
    return corsOn ? cors.apply(request, response) : response;
  };
}

/** An MCP request inside its request context; the access log line and the span end with its response. */
async function observed(
  deps: GatewayDeps,
  core: FetchHandler,
  request: ExchangeRequest,
  exchange: ExchangeContext,
  tracer: RequestTracer | undefined,
): Promise<Response> {
  const context: RequestContext = {
    requestId: exchange.requestId ?? randomUUID(),
    trace: traceFromHeaders(request.headers),
    startedAt: performance.now(),
    facts: { inputRounds: 0 },
  };
  return runInRequest(context, async () => {
    const span = tracer?.begin();
    let response: Response;
    try {
      response = await core(request, exchange);
    } catch (error) {
      // createGateway answers every error itself; this is only a safety net for the span.
      span?.end(accessLogEntry(context, request, new Response(null, { status: 500 }), 'error'));
      throw error;
    }
    const ended = (outcome: ResponseOutcome, final: Response) => {
      const entry = accessLogEntry(context, request, final, outcome);
      span?.end(entry);
      if (deps.config.accessLog) writeAccessLog(deps.logger, entry);
    };
    if (exchange.onResponseEnd) {
      exchange.onResponseEnd((outcome) => ended(outcome, response));
      return response;
    }
    return whenEnded(response, ended);
  });
}

/**
 * `response` with its body passed through unchanged, calling `ended` once when the body is done:
 * read to the end, cancelled by the reader (the client left), or failed. A bodiless response has ended.
 */
function whenEnded(response: Response, ended: (outcome: ResponseOutcome, response: Response) => void): Response {
  if (!response.body) {
    ended('complete', response);
    return response;
  }
  const reader = response.body.getReader();
  let done = false;
  const finish = (outcome: ResponseOutcome) => {
    if (done) return;
    done = true;
    ended(outcome, response);
  };
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const chunk = await reader.read();
          if (chunk.done) {
            controller.close();
            finish('complete');
          } else {
            controller.enqueue(chunk.value);
          }
        } catch (error) {
          controller.error(error);
          finish('error');
        }
      },
      cancel(reason) {
        finish('cancelled');
        return reader.cancel(reason);
      },
    },
    // No read-ahead: a chunk is pulled when the adapter asks for it, so SSE events are not delayed.
    { highWaterMark: 0 },
  );
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
