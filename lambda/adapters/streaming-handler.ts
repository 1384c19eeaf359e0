import type { LambdaFunctionURLEvent, StreamifyHandler } from 'aws-lambda';
import { errorResponse, unrepresentableMethod } from '../http/errors';
import {
  type FetchHandler,
  requestAbortController,
  responseEndListeners,
  type ShutdownableHandler,
} from '../http/exchange';
import { GatewayError } from '../protocol/errors';
import type { Clock } from '../scheduling/clock';
import { eventToRequest, principalFromEvent, writeResponse } from './function-url';

/** Time kept back from the Lambda timeout so the response can still be finished cleanly. */
export const DEADLINE_MARGIN_MS = 1000;

export interface StreamingHandlerOptions {
  /** The gateway's clock: a request's deadline is set on it, as the gateway reads it. */
  clock: Clock;
  /** Where unexpected errors are reported (never to the client). Defaults to console.error. */
  onError?: (error: unknown) => void;
  /**
   * Handle SIGTERM (only in a Lambda execution environment: Lambda sends it before shutting an
   * environment down when an extension is registered, and `npm start -- --lambda` when it stops): the
   * handler's calls are ended (`shutdown`), the invocation's response is finished, then the process exits.
   */
  gracefulShutdown?: boolean;
}

/** How long SIGTERM waits for the running invocation's response to be written after its calls ended. */
const FLUSH_ON_SHUTDOWN_MS = 300;

/** The generic answer to any unexpected failure: the error text never leaves the function. */
export function internalErrorResponse(): Response {
  return errorResponse(null, new GatewayError('Internal', 'Internal error'));
}

/**
 * The body of the Lambda handler, to be wrapped in `awslambda.streamifyResponse` (by `lambda/handler.ts`,
 * or by tests with any FetchHandler). The FetchHandler is created on first use and then reused for
 * the life of the execution environment; a failed creation is retried on the next invocation.
 */
export function createStreamingHandler(
  getFetchHandler: () => Promise<FetchHandler>,
  options: StreamingHandlerOptions,
): StreamifyHandler<LambdaFunctionURLEvent, void> {
  const onError = options.onError ?? ((error: unknown) => console.error('[gateway] unhandled error', error));
  let fetchHandler: Promise<FetchHandler> | undefined;
  const load = (): Promise<FetchHandler> => {
    fetchHandler ??= getFetchHandler().catch((error: unknown) => {
      fetchHandler = undefined;
      throw error;
    });
    return fetchHandler;
  };

  const inFlight = new Set<Promise<void>>();
  if (options.gracefulShutdown) {
    process.once('SIGTERM', () => {
      void (async () => {
        const loaded = (await fetchHandler?.catch(() => undefined)) as ShutdownableHandler | undefined;
        await loaded?.shutdown?.().catch(onError);
        const flushed = Promise.allSettled([...inFlight]);
        await Promise.race([flushed, new Promise((resolve) => setTimeout(resolve, FLUSH_ON_SHUTDOWN_MS))]);
        process.exit(0);
      })();
    });
  }

  return async (event, responseStream, context) => {
    let settled!: () => void;
    const invocation = new Promise<void>((resolve) => {
      settled = resolve;
    });
    inFlight.add(invocation);
    try {
      await invoke(event, responseStream, context);
    } finally {
      inFlight.delete(invocation);
      settled();
    }
  };

  async function invoke(
    event: LambdaFunctionURLEvent,
    responseStream: awslambda.HttpResponseStream,
    context: { getRemainingTimeInMillis(): number; awsRequestId?: string },
  ): Promise<void> {
    // Client-disconnect detection: 'close'/'error' before the response finished. Real Lambda may never
    // signal this (https://github.com/aws/aws-lambda-nodejs-runtime-interface-client/issues/145), so the deadline below is the backstop.
    const controller = requestAbortController();
    const onGone = (): void => {
      if (!responseStream.writableFinished) controller.abort();
    };
    responseStream.on('error', onGone); // stays attached: an unhandled 'error' would crash the process
    responseStream.once('close', onGone);

    const ends = responseEndListeners();
    let response: Response;
    try {
      const unrepresentable = unrepresentableMethod(event.requestContext.http.method);
      if (unrepresentable) {
        await writeResponse(unrepresentable, responseStream, controller.signal);
        return;
      }
      const handle = await load();
      response = await handle(eventToRequest(event, controller.signal), {
        signal: controller.signal,
        deadline: options.clock.now() + context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS,
        platformPrincipal: principalFromEvent(event),
        requestId: context.awsRequestId,
        onResponseEnd: ends.register,
      });
    } catch (error) {
      // A rejection caused by the client leaving is expected; anything else is worth a log line.
      if (!controller.signal.aborted) onError(error);
      response = internalErrorResponse();
    }

    try {
      ends.end(await writeResponse(response, responseStream, controller.signal));
    } catch (error) {
      // The body failed after the headers went out; writeResponse has already ended the stream.
      ends.end('error');
      onError(error);
    }
  }
}
