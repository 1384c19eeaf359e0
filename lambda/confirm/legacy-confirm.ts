import type {
  JSONRPCErrorResponse,
  JSONRPCMessage,
  JSONRPCRequest,
  JSONRPCResultResponse,
} from '@modelcontextprotocol/sdk/types.js';
import type { GatewayDeps } from '../core/deps';
import { statusFor, toRpcError } from '../core/errors';
import type { ExchangeContext } from '../core/exchange';
import {
  type AcceptPreference,
  accepted,
  errorResponse,
  jsonResponse,
  jsonRpcError,
  messageResponse,
} from '../core/http';
import { RpcCode } from '../core/jsonrpc';
import { describeError } from '../core/logger';
import { newPendingRecord } from '../legacy/ids';
import type { LoadedSession, PendingRecord } from '../state/store';
import { elicitationModes } from '../stateless/capabilities';
import {
  cannotConfirmResult,
  confirmationForm,
  confirmationOutcome,
  needsConfirmation,
  notConfirmedResult,
} from './confirm-tools';

/**
 * confirmTools on a 2025-11-25 session: before the call is relayed, the gateway sends its own
 * `elicitation/create` (form) on the call's SSE stream and waits for the user's answer.
 *
 * The answer is a separate POST that may reach any instance. It finds the pending record this
 * invocation wrote (target `__gateway__`), and answer.ts stores the answer in it with a conditional
 * update (lambda/confirm deliverGatewayAnswer). This invocation polls the record (a consistent
 * GetItem, backing off from 100 ms to 1 s) until it is answered, the pending timeout passes, the
 * client goes away or the invocation's deadline comes. Confirmed → the call is relayed on the same
 * stream; declined or cancelled → an isError result and the target is never called.
 */

/** The `target` of pending records for requests the gateway itself sent. */
export const GATEWAY_TARGET = '__gateway__';

const POLL_MIN_MS = 100;
// A person answers in seconds: one read a second at most keeps a 300 s wait to about 300 reads.
const POLL_MAX_MS = 1000;

export interface LegacyConfirmInput {
  deps: GatewayDeps;
  loaded: LoadedSession;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  request: JSONRPCRequest;
  /** The routed target and the target's own tool name. */
  target: string;
  tool: string;
  /** Response headers (the session id). */
  headers: Record<string, string>;
}

export function legacyCallNeedsConfirmation(deps: GatewayDeps, method: string, target: string, tool: string): boolean {
  return method === 'tools/call' && needsConfirmation(deps.config.confirmTools, target, tool);
}

export async function confirmThenRelay(input: LegacyConfirmInput, relay: () => Promise<Response>): Promise<Response> {
  const { deps, loaded, accept, exchange, request, target, tool, headers } = input;
  const params = (request.params ?? {}) as Record<string, unknown>;
  const exposed = typeof params.name === 'string' ? params.name : tool;
  const reply = (message: JSONRPCMessage) => messageResponse(message, accept, headers);
  if (!elicitationModes(loaded.session.clientCapabilities).form) {
    return reply({
      jsonrpc: '2.0',
      id: request.id,
      result: cannotConfirmResult(exposed, 'the session did not declare form elicitation'),
    });
  }
  if (!accept.sse) {
    return reply({
      jsonrpc: '2.0',
      id: request.id,
      result: cannotConfirmResult(exposed, 'the request does not accept text/event-stream'),
    });
  }
  const record = newPendingRecord(deps.config.pendingRequestTimeoutSeconds, {
    method: 'elicitation/create',
    target: GATEWAY_TARGET,
    clientRequestId: request.id,
  });
  const gatewayId = record.gatewayId;
  try {
    await deps.store.putPending(loaded.session, record);
  } catch (error) {
    deps.logger.error('storing the confirmation request failed', {
      sessionId: loaded.session.id,
      error: describeError(error),
    });
    return jsonResponse(statusFor(error), toRpcError(request.id, error), { ...headers, 'retry-after': '1' });
  }

  const encoder = new TextEncoder();
  const gone = new AbortController();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  const write = (text: string) => {
    if (closed) return;
    try {
      controller.enqueue(encoder.encode(text));
    } catch {
      closed = true;
    }
  };
  const send = (message: JSONRPCMessage) => write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  const close = () => {
    if (closed) return;
    closed = true;
    try {
      controller.close();
    } catch {
      // the reader already cancelled
    }
  };
  const body = new ReadableStream<Uint8Array>({
    start: (c) => {
      controller = c;
    },
    cancel: () => {
      closed = true;
      gone.abort();
    },
  });

  const run = async () => {
    const keepAlive = setInterval(() => write(': keep-alive\n\n'), deps.keepAliveMs);
    keepAlive.unref();
    const stop = AbortSignal.any([gone.signal, exchange.signal]);
    try {
      send({
        jsonrpc: '2.0',
        id: gatewayId,
        method: 'elicitation/create',
        params: confirmationForm(exposed, target, tool, params.arguments),
      });
      deps.logger.info('confirmation requested', {
        sessionId: loaded.session.id,
        target,
        tool,
        gatewayRequestId: gatewayId,
      });
      const until = Math.min(exchange.deadline, Date.now() + deps.config.pendingRequestTimeoutSeconds * 1000);
      const answer = await waitForGatewayAnswer(deps, loaded.session.id, gatewayId, until, stop);
      clearInterval(keepAlive);
      if (answer === 'client-gone') return;
      if (answer === 'timeout') {
        send(
          jsonRpcError(
            request.id,
            RpcCode.RequestTimeout,
            'Timed out waiting for the user to confirm the tool call; the tool was not called',
            { retryable: true },
          ),
        );
        return;
      }
      const outcome = 'result' in answer ? confirmationOutcome(answer.result) : 'cancelled';
      deps.logger.info('confirmation answered', { sessionId: loaded.session.id, target, tool, outcome });
      if (outcome !== 'confirmed') {
        send({
          jsonrpc: '2.0',
          id: request.id,
          result: notConfirmedResult(exposed, outcome === 'declined' ? 'declined' : 'cancelled'),
        });
        return;
      }
      await pipeInto(await relay(), send, write, stop);
    } catch (error) {
      deps.logger.warn('confirmation failed', { sessionId: loaded.session.id, target, error: describeError(error) });
      send(toRpcError(request.id, error));
    } finally {
      clearInterval(keepAlive);
      close();
      await deps.store.deletePending(loaded.session.id, [gatewayId]).catch(() => undefined);
    }
  };
  void run();
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
      ...headers,
    },
  });
}

export type GatewayAnswer = JSONRPCResultResponse | JSONRPCErrorResponse | 'timeout' | 'client-gone';

/**
 * Waits for the client's answer to a gateway-held request (pending record with target
 * `__gateway__`): answer.ts stores it in the record from whichever instance the POST reaches; this
 * polls the record (consistent GetItem, 100 ms backing off to 1 s) until it is answered, `until`
 * (epoch ms) passes, or `stop` aborts (client gone). Shared by confirmTools and the 2025 relay's
 * bridge of a 2026-07-28 target's input_required rounds (lambda/legacy/relay.ts).
 */
export async function waitForGatewayAnswer(
  deps: GatewayDeps,
  sessionId: string,
  gatewayId: string,
  until: number,
  stop: AbortSignal,
): Promise<GatewayAnswer> {
  let interval = POLL_MIN_MS;
  while (Date.now() < until) {
    if (stop.aborted) return 'client-gone';
    let record: PendingRecord | undefined;
    try {
      record = await deps.store.getPending(sessionId, gatewayId);
    } catch (error) {
      // A transient store failure: keep waiting (bounded by the deadline).
      deps.logger.warn('polling a gateway-held request failed', { sessionId, error: describeError(error) });
    }
    if (record?.status === 'answered' && record.answer)
      return JSON.parse(record.answer) as JSONRPCResultResponse | JSONRPCErrorResponse;
    await sleep(Math.min(interval, Math.max(0, until - Date.now())), stop);
    interval = Math.min(POLL_MAX_MS, interval * 2);
  }
  return stop.aborted ? 'client-gone' : 'timeout';
}

/** Forwards the relay's response into the confirmation stream (raw SSE bytes, or one event for a JSON body). */
async function pipeInto(
  response: Response,
  send: (m: JSONRPCMessage) => void,
  write: (t: string) => void,
  stop: AbortSignal,
): Promise<void> {
  if (!response.body) return;
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    send(JSON.parse(await response.text()) as JSONRPCMessage);
    return;
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const onStop = () => void reader.cancel().catch(() => undefined);
  stop.addEventListener('abort', onStop, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      write(value);
    }
  } finally {
    stop.removeEventListener('abort', onStop);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * answer.ts hands over answers to gateway-held requests (confirmTools, and a 2026-07-28 target's
 * input requests relayed to a 2025 session): the answer is stored in the pending record (once: a
 * conditional update), where the waiting invocation finds it.
 */
export async function deliverGatewayAnswer(
  deps: GatewayDeps,
  loaded: LoadedSession,
  answer: JSONRPCResultResponse | JSONRPCErrorResponse,
  headers: Record<string, string>,
): Promise<Response> {
  const gatewayId = answer.id as string;
  const payload = JSON.stringify(
    'error' in answer
      ? { jsonrpc: '2.0', id: gatewayId, error: answer.error }
      : { jsonrpc: '2.0', id: gatewayId, result: answer.result },
  );
  let stored: boolean;
  try {
    stored = await deps.store.answerPending(loaded.session.id, gatewayId, payload);
  } catch (error) {
    return jsonResponse(statusFor(error), toRpcError(answer.id ?? null, error), { ...headers, 'retry-after': '1' });
  }
  if (!stored) {
    return errorResponse(
      400,
      answer.id ?? null,
      RpcCode.InvalidRequest,
      'The pending request was already answered or has expired',
      undefined,
      headers,
    );
  }
  deps.logger.info('gateway-held request answered', { sessionId: loaded.session.id, gatewayRequestId: gatewayId });
  return accepted(headers);
}
