import { setMaxListeners } from 'node:events';
import type { ResponseOutcome } from '../observability/response-outcome';

/**
 * The one internal exchange every adapter speaks: a request (a web-standard `Request`, or what of
 * it the core reads: `ExchangeRequest`) in, a web-standard `Response` out (JSON body, 202 without body, or an SSE `ReadableStream`). Adapters (the Lambda
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
  /**
   * Set by an adapter that writes the body itself: it calls the listener once the response has
   * ended. Without it (tests calling the core directly) the core wraps the body to find out, which
   * costs a web stream per response.
   */
  onResponseEnd?: (listener: (outcome: ResponseOutcome) => void) => void;
}

/** How a response ended; one type with the access log, which reports it. */
export type { ResponseOutcome };

/** What an adapter keeps for `onResponseEnd`: listeners registered, told once. */
export function responseEndListeners(): {
  register: (listener: (outcome: ResponseOutcome) => void) => void;
  end: (outcome: ResponseOutcome) => void;
} {
  let listeners: Array<(outcome: ResponseOutcome) => void> | undefined = [];
  return {
    register: (listener) => {
      listeners?.push(listener);
    },
    end: (outcome) => {
      const told = listeners;
      listeners = undefined;
      for (const listener of told ?? []) listener(outcome);
    },
  };
}

/**
 * The request as the core reads it. A web `Request` is one (tests and the Lambda adapter pass one);
 * an adapter that already holds the body can pass a plain object instead and skip building a
 * `Request` (its headers copy, abort signal and body stream) per request.
 */
export interface ExchangeRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  /** The body as UTF-8 text; '' when there is none. */
  text(): Promise<string>;
}

export type FetchHandler = (request: ExchangeRequest, ctx: ExchangeContext) => Promise<Response>;

/** A handler that can end what it holds before its process exits (graceful shutdown, SIGTERM). */
export type ShutdownableHandler = FetchHandler & { shutdown?: () => Promise<void> };

/**
 * The abort controller of one request. A request fans out to every target at once (a list, a
 * catalog refresh), and each request to a target listens on this signal until it closes, so more
 * than Node's default of 10 listeners is normal here and not a leak: the signal ends with the request.
 */
export function requestAbortController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(REQUEST_SIGNAL_LISTENERS, controller.signal);
  return controller;
}

/** Above what a request with a few dozen targets holds at once; a real leak still gets reported. */
const REQUEST_SIGNAL_LISTENERS = 200;
