import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import type {
  APIGatewayEventRequestContextIAMAuthorizer,
  APIGatewayEventRequestContextV2WithAuthorizer,
  LambdaFunctionURLEvent,
} from 'aws-lambda';
import type { ResponseOutcome } from '../http/exchange';
import { StalledClientError } from '../http/sse';

/**
 * Transport-only translation between a Lambda function URL (payload format 2.0, response streaming)
 * and the web-standard `Request`/`Response` the core speaks. No protocol decisions live here.
 */

const BODYLESS_METHODS = new Set(['GET', 'HEAD']);

/** Rebuilds the client's HTTP request from a function URL event. */
export function eventToRequest(event: LambdaFunctionURLEvent, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers.set(name.toLowerCase(), value);
  }
  // Function URLs move the Cookie header into `cookies`; put it back.
  if (event.cookies?.length) headers.set('cookie', event.cookies.join('; '));

  // Function URLs are HTTPS only; a local invoker may say otherwise through x-forwarded-proto.
  const proto = headers.get('x-forwarded-proto')?.split(',')[0]?.trim() || 'https';
  const host = headers.get('host') ?? event.requestContext.domainName;
  const query = event.rawQueryString ? `?${event.rawQueryString}` : '';
  const url = `${proto}://${host}${event.rawPath || '/'}${query}`;

  const method = event.requestContext.http.method.toUpperCase();
  let body: BodyInit | undefined;
  if (!BODYLESS_METHODS.has(method) && event.body != null) {
    // Copy into a plain Uint8Array: Buffer's pooled ArrayBufferLike is not a BodyInit in the DOM typings.
    body = event.isBase64Encoded ? new Uint8Array(Buffer.from(event.body, 'base64')) : event.body;
  }
  return new Request(url, { method, headers, body, signal });
}

type IamAuthorizedContext = APIGatewayEventRequestContextV2WithAuthorizer<APIGatewayEventRequestContextIAMAuthorizer>;

/**
 * The caller's IAM principal ARN when the function URL uses AWS_IAM auth, else undefined.
 * Only `userArn` is an ARN; `callerId`/`userId` are unique ids (and for role sessions carry a
 * caller-chosen session name), so they are deliberately not used as a fallback.
 */
export function principalFromEvent(event: LambdaFunctionURLEvent): string | undefined {
  const context = event.requestContext as Partial<IamAuthorizedContext>;
  const userArn = context.authorizer?.iam?.userArn;
  return typeof userArn === 'string' && userArn.length > 0 ? userArn : undefined;
}

/** Response headers as the prelude wants them: one string per name, Set-Cookie split out. */
export function flattenHeaders(headers: Headers): { headers: Record<string, string>; cookies: string[] } {
  const flat: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (name !== 'set-cookie') flat[name] = value;
  });
  return { headers: flat, cookies: headers.getSetCookie() };
}

/**
 * Streams `response` to the function URL: status and headers go in the prelude, then each body chunk
 * is written as soon as the core produces it (SSE events must not be buffered).
 *
 * If the response stream closes or errors before the body is done (the client went away, where the
 * platform tells us at all), or `signal` aborts, the body is cancelled and this resolves without
 * throwing. A body that fails mid-stream ends the stream (headers are already out) and rethrows.
 */
export async function writeResponse(
  response: Response,
  responseStream: awslambda.HttpResponseStream,
  signal: AbortSignal,
): Promise<ResponseOutcome> {
  const body = response.body;
  if (signal.aborted || responseStream.destroyed || responseStream.writableEnded) {
    await body?.cancel().catch(() => undefined);
    return 'cancelled';
  }

  const { headers, cookies } = flattenHeaders(response.headers);
  const out = awslambda.HttpResponseStream.from(responseStream, {
    statusCode: response.status,
    headers,
    ...(cookies.length > 0 ? { cookies } : {}),
  });
  // https://github.com/aws/aws-lambda-nodejs-runtime-interface-client/issues/97: the prelude is only emitted by write(); end() alone loses status/headers (or 502s).
  out.write('');

  if (!body) {
    out.end();
    await finished(out).catch(() => undefined);
    return 'complete';
  }

  const reader = body.getReader();
  const gone = new AbortController();
  const onGone = (): void => {
    if (gone.signal.aborted || out.writableFinished) return;
    gone.abort();
    reader.cancel().catch(() => undefined); // a pending read() then resolves with done
  };
  // Left attached on purpose: a late 'error' with no listener would crash the process.
  out.on('error', onGone);
  out.on('close', onGone);
  signal.addEventListener('abort', onGone, { once: true });
  // The body failing (a client stalled past its bound) must end a wait for 'drain' too.
  const failed = reader.closed.then(
    () => new Promise<never>(() => undefined),
    (error: unknown) => Promise.reject(error),
  );
  failed.catch(() => undefined);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || gone.signal.aborted) break;
      if (!out.write(value)) await Promise.race([once(out, 'drain', { signal: gone.signal }), failed]);
    }
  } catch (err) {
    if (gone.signal.aborted) return 'cancelled';
    if (err instanceof StalledClientError) {
      // Given up on a client that stopped reading: cut its stream rather than wait for it.
      out.destroy();
      return 'cancelled';
    }
    out.end();
    throw err;
  } finally {
    signal.removeEventListener('abort', onGone);
  }
  if (gone.signal.aborted) return 'cancelled';
  out.end();
  await finished(out).catch(() => undefined);
  return 'complete';
}
