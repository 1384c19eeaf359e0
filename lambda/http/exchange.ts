/**
 * The one internal exchange every adapter speaks: a web-standard `Request` in, a web-standard
 * `Response` out (JSON body, 202 without body, or an SSE `ReadableStream`). Adapters (the Lambda
 * handler, the local `node:http` server) only translate their transport to and from this shape.
 */
export interface ExchangeContext {
  /** Aborted when the client goes away (where the platform lets us notice). */
  signal: AbortSignal;
  /** Epoch milliseconds by which the response must be finished (Lambda: remaining time minus a margin). */
  deadline: number;
  /** Caller identity established by the platform (e.g. the function URL's IAM authorizer), if any. */
  platformPrincipal?: string;
  /** The platform's id of this request (Lambda's `awsRequestId`), for the logs; else one is generated. */
  requestId?: string;
}

export type FetchHandler = (request: Request, ctx: ExchangeContext) => Promise<Response>;

/** A handler that can end what it holds before its process exits (graceful shutdown, SIGTERM). */
export type ShutdownableHandler = FetchHandler & { shutdown?: () => Promise<void> };
