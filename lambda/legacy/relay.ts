import { randomUUID } from 'node:crypto';
import type {
  JSONRPCErrorResponse,
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  ProgressToken,
} from '@modelcontextprotocol/sdk/types.js';
import { GATEWAY_TARGET, waitForGatewayAnswer } from '../confirm/legacy-confirm';
import type { GatewayDeps } from '../core/deps';
import { toRpcError } from '../core/errors';
import type { ExchangeContext } from '../core/exchange';
import { type AcceptPreference, jsonResponse, jsonRpcError, SseStream } from '../core/http';
import { RpcCode } from '../core/jsonrpc';
import { describeError } from '../core/logger';
import { recordAnsweredInput, recordExpiredInput, recordRelayedInput } from '../observability/metrics';
import type { LoadedSession, PendingRecord } from '../state/store';
import {
  crossEraInputError,
  isModernSession,
  type JSONRPCResponse,
  type RequestOptions,
  type TargetClient,
  type UpstreamSession,
} from '../targets/upstream-client';
import { capabilitiesForTarget, clientAccepts } from './capabilities';
import { newPendingRecord, upstreamRequestId } from './ids';
import {
  capabilitiesForModernTarget,
  type InputRequired,
  inputRequiredOf,
  MAX_INPUT_ROUNDS,
  retryParams,
  toLegacyServerRequest,
} from './modern-input';
import type { TargetSessions } from './target-sessions';

export interface RelayInput {
  deps: GatewayDeps;
  loaded: LoadedSession;
  sessions: TargetSessions;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  /** The client's request as received. */
  request: JSONRPCRequest;
  target: string;
  /** The params to send upstream (names already mapped to the target's own). */
  params: Record<string, unknown>;
  responseHeaders: Record<string, string>;
}

/**
 * Relays one client request (tools/call, prompts/get, resources/read) to its target and streams
 * back everything the target sends for it: server-to-client requests with gateway ids (recorded as
 * pending in DynamoDB first, so that the client's answer can reach the target from any instance),
 * progress with the client's own token, log messages, and finally the response with the client's id.
 */
export async function relayCall(input: RelayInput): Promise<Response> {
  const relay = new Relay(input);
  if (!input.accept.sse) {
    // A JSON-only client cannot receive server-to-client requests: the target is refused them.
    return jsonResponse(200, await relay.run(), input.responseHeaders);
  }
  return new Promise<Response>((resolve) => {
    relay.streamOpener = () => {
      const stream = new SseStream();
      stream.startKeepAlive(input.deps.keepAliveMs);
      resolve(stream.response(input.responseHeaders));
      return stream;
    };
    // A client that takes both gets plain JSON when the target just answers (SSE costs it ~2 ms
    // here); the stream opens at the first message to relay, or once the call runs long enough
    // to need keep-alives.
    if (!input.accept.json) relay.openStream();
    const streamSoon = input.accept.json
      ? setTimeout(() => relay.openStream(), Math.min(STREAM_AFTER_MS, input.deps.keepAliveMs))
      : undefined;
    streamSoon?.unref();
    void relay
      .run()
      .catch((error: unknown) => toRpcError(input.request.id, error)) // never leave the client waiting
      .then((message) => {
        clearTimeout(streamSoon);
        if (!relay.streaming) resolve(jsonResponse(200, message, input.responseHeaders));
      });
  });
}

/** A relayed call still running after this long answers as a stream, so keep-alives can flow. */
const STREAM_AFTER_MS = 1000;

class Relay {
  private readonly upstreamId: string;
  private readonly upstreamAbort = new AbortController();
  private readonly pending = new Map<string, { record: PendingRecord; timer: NodeJS.Timeout }>();
  /** Gateway-held pending records (a 2026-07-28 target's input requests), removed with the others. */
  private readonly gatewayHeld: string[] = [];
  private readonly progressToken?: ProgressToken;
  private readonly upstreamProgressToken?: string;
  private upstream?: { session: UpstreamSession; client: TargetClient };
  /** Events reach the client in the order the target sent them, each after its pending record is stored. */
  private queue: Promise<void> = Promise.resolve();
  private stream?: SseStream;
  /** Creates the client's SSE response, once; absent for a JSON-only client. */
  streamOpener?: () => SseStream;
  private finished = false;
  private endReason?: 'client-gone' | 'deadline' | 'pending-timeout';

  constructor(private readonly input: RelayInput) {
    this.upstreamId = upstreamRequestId(input.request.id);
    const meta = input.params._meta as { progressToken?: ProgressToken } | undefined;
    if (meta?.progressToken !== undefined) {
      this.progressToken = meta.progressToken;
      this.upstreamProgressToken = `gw-progress-${randomUUID()}`;
    }
  }

  private get log() {
    const { deps, loaded, target, request } = this.input;
    const keys = { sessionId: loaded.session.id, target, method: request.method };
    return {
      info: (message: string, extra: object = {}) => deps.logger.info(message, { ...keys, ...extra }),
      warn: (message: string, extra: object = {}) => deps.logger.warn(message, { ...keys, ...extra }),
    };
  }

  get streaming(): boolean {
    return this.stream !== undefined;
  }

  /** The client's stream, opened on first use; undefined when the client cannot take one or the call is over. */
  openStream(): SseStream | undefined {
    if (!this.stream && this.streamOpener && !this.finished) {
      this.stream = this.streamOpener();
      this.stream.onCancel = () => this.stop('client-gone');
    }
    return this.stream;
  }

  async run(): Promise<JSONRPCMessage> {
    const { exchange, request } = this.input;
    const onClientGone = () => this.stop('client-gone');
    exchange.signal.addEventListener('abort', onClientGone, { once: true });
    const deadline = setTimeout(() => this.stop('deadline'), Math.max(0, exchange.deadline - Date.now()));
    deadline.unref();

    let message: JSONRPCMessage;
    try {
      const response = await this.input.sessions.with(
        this.input.target,
        this.upstreamAbort.signal,
        async (session, client) => {
          this.upstream = { session, client };
          const { clientCapabilities, protocolVersion } = this.input.loaded.session;
          const options: RequestOptions = {
            signal: this.upstreamAbort.signal,
            handlers: {
              onServerRequest: (serverRequest) => this.enqueue(() => this.onServerRequest(serverRequest)),
              onNotification: (notification) => this.enqueue(async () => this.onNotification(notification)),
            },
            // A 2026-07-28 target asks for input with input_required results: the rounds run below.
            modernInput: isModernSession(session)
              ? capabilitiesForModernTarget(clientCapabilities, protocolVersion, this.input.accept.sse)
              : undefined,
          };
          let answer = await client.request(session, this.upstreamRequest(), options);
          for (let round = 1; options.modernInput; round++) {
            const inputRequired = inputRequiredOf(answer);
            if (!inputRequired) break;
            if (round > MAX_INPUT_ROUNDS) {
              return jsonRpcError(
                request.id,
                RpcCode.InternalError,
                `Target ${this.input.target} still asked for input after ${MAX_INPUT_ROUNDS} rounds; the gateway stopped the call`,
                {
                  type: 'TooManyInputRounds',
                  target: this.input.target,
                },
              );
            }
            const collected = await this.collectInput(inputRequired);
            if (!('responses' in collected)) return collected;
            if (Object.keys(collected.responses).length) recordAnsweredInput('mrtr-retry');
            answer = await client.request(
              session,
              this.upstreamRequest(
                round,
                retryParams(this.input.params, collected.responses, inputRequired.requestState),
              ),
              options,
            );
          }
          return answer;
        },
      );
      message = { ...response, id: request.id };
    } catch (error) {
      message = this.failure(error);
    }
    this.finished = true;
    clearTimeout(deadline);
    exchange.signal.removeEventListener('abort', onClientGone);
    await this.queue;
    await this.cleanup();
    this.stream?.send(message);
    this.stream?.close();
    return message;
  }

  /** The relayed request; a retry after input round `round` gets a new id. */
  private upstreamRequest(round = 0, base: Record<string, unknown> = this.input.params): JSONRPCRequest {
    const params = { ...base };
    if (this.upstreamProgressToken)
      params._meta = { ...(params._meta as object), progressToken: this.upstreamProgressToken };
    return {
      jsonrpc: '2.0',
      id: round === 0 ? this.upstreamId : `${this.upstreamId}.r${round}`,
      method: this.input.request.method,
      params,
    };
  }

  /**
   * One input_required round of a 2026-07-28 target (spec notes §10.17–18): every input request goes
   * to the client on the call's stream as a 2025 server request with a gateway id, recorded as a
   * gateway-held pending record (answer.ts stores the client's answer from any instance, this
   * invocation polls it, as confirmTools does). All answers → the responses under the target's keys.
   * A kind the session did not declare, or a client that cannot take a stream → CrossEraInputUnsupported,
   * nothing is sent; a JSON-RPC error from the client ends the call with a clear error.
   */
  private async collectInput(
    inputRequired: InputRequired,
  ): Promise<{ responses: Record<string, unknown> } | JSONRPCResponse> {
    const { deps, loaded, request, target } = this.input;
    const entries = Object.entries(inputRequired.inputRequests);
    if (entries.length === 0) return { responses: {} }; // requestState only: retry at once
    await this.queue; // the target's notifications so far go first
    // What the session's version allows of what the client declared (as declared to the target).
    const usable = capabilitiesForTarget(loaded.session.clientCapabilities, loaded.session.protocolVersion);
    const refused = entries.filter(
      ([, r]) => typeof r?.method !== 'string' || !clientAccepts(usable, r.method, r.params),
    );
    const stream = refused.length === 0 ? this.openStream() : undefined;
    if (!stream) {
      const methods = (refused.length ? refused : entries).map(([, r]) => String(r?.method));
      this.log.info('refused input requests the client cannot take', { inputMethods: methods });
      return crossEraInputError(target, request.id, methods.join(', '), { inputRequests: methods });
    }
    const sent: Array<{ key: string; gatewayId: string; method: string }> = [];
    for (const [key, inputRequest] of entries) {
      const record = newPendingRecord(deps.config.pendingRequestTimeoutSeconds, {
        method: inputRequest.method,
        target: GATEWAY_TARGET,
        clientRequestId: request.id,
      });
      await deps.store.putPending(loaded.session, record);
      const { gatewayId } = record;
      this.gatewayHeld.push(gatewayId);
      sent.push({ key, gatewayId, method: inputRequest.method });
    }
    entries.forEach(([, inputRequest], index) => {
      stream.send(toLegacyServerRequest(sent[index].gatewayId, inputRequest, loaded.session.protocolVersion));
      recordRelayedInput(inputRequest.method);
    });
    this.log.info('relayed input requests of a 2026-07-28 target', { gatewayRequestIds: sent.map((s) => s.gatewayId) });

    const until = Math.min(this.input.exchange.deadline, Date.now() + deps.config.pendingRequestTimeoutSeconds * 1000);
    const failed = new AbortController(); // one error answer ends the round: stop waiting for the rest
    const stop = AbortSignal.any([this.upstreamAbort.signal, failed.signal]);
    const answers = await Promise.all(
      sent.map(async ({ gatewayId }) => {
        const answer = await waitForGatewayAnswer(deps, loaded.session.id, gatewayId, until, stop);
        if (typeof answer === 'object' && 'error' in answer) failed.abort();
        return answer;
      }),
    );
    const errorIndex = answers.findIndex((a) => typeof a === 'object' && 'error' in a);
    if (errorIndex >= 0) {
      const { error } = answers[errorIndex] as JSONRPCErrorResponse;
      const method = sent[errorIndex].method;
      this.log.info('the client answered an input request with an error', { inputMethod: method, code: error.code });
      return jsonRpcError(
        request.id,
        RpcCode.InternalError,
        `The client answered ${method} of target ${target} with an error (${error.code}: ${error.message}); the call was stopped`,
        {
          type: 'InputRequestFailed',
          target,
          inputMethod: method,
          clientError: { code: error.code, message: error.message },
        },
      );
    }
    if (answers.some((a) => a === 'timeout') && !this.endReason) {
      if (Date.now() >= this.input.exchange.deadline) this.stop('deadline');
      else {
        for (const { method } of sent) recordExpiredInput(method);
        this.stop('pending-timeout');
      }
    }
    if (this.endReason) throw new Error(`input round ended: ${this.endReason}`);
    const responses: Record<string, unknown> = {};
    sent.forEach(({ key }, index) => {
      responses[key] = (answers[index] as { result: unknown }).result;
    });
    return { responses };
  }

  private failure(error: unknown): JSONRPCMessage {
    const id = this.input.request.id;
    switch (this.endReason) {
      case 'deadline':
        return jsonRpcError(
          id,
          RpcCode.RequestTimeout,
          'Request timed out at the gateway before the target answered; retry the call',
          {
            retryable: true,
          },
        );
      case 'pending-timeout':
        return jsonRpcError(
          id,
          RpcCode.RequestTimeout,
          'Timed out waiting for the client to answer a request of the target; retry the call',
          {
            retryable: true,
          },
        );
      case 'client-gone':
        return jsonRpcError(id, RpcCode.RequestTimeout, 'Client went away');
      default:
        this.log.warn('relayed call failed', { error: describeError(error) });
        return toRpcError(id, error);
    }
  }

  private enqueue(task: () => Promise<void>): void {
    this.queue = this.queue
      .then(task)
      .catch((error) => this.log.warn('relaying a target message failed', { error: describeError(error) }));
  }

  private async onServerRequest(serverRequest: JSONRPCRequest): Promise<void> {
    const { deps, loaded, target } = this.input;
    const params = serverRequest.params as Record<string, unknown> | undefined;
    if (serverRequest.method === 'ping') {
      await this.answerTarget({ jsonrpc: '2.0', id: serverRequest.id, result: {} });
      return;
    }
    // What the session's version allows of what the client declared (as declared to the target).
    const usable = capabilitiesForTarget(loaded.session.clientCapabilities, loaded.session.protocolVersion);
    const acceptable = !this.finished && clientAccepts(usable, serverRequest.method, params);
    const stream = acceptable ? this.openStream() : undefined;
    if (!stream) {
      // Only declared capabilities are relayed; the target gets Method not found and should fall back.
      this.log.info('refused a server request the client cannot take', { serverMethod: serverRequest.method });
      await this.answerTarget(
        jsonRpcError(serverRequest.id, RpcCode.MethodNotFound, `Method not found: ${serverRequest.method}`),
      );
      return;
    }
    const record = newPendingRecord(deps.config.pendingRequestTimeoutSeconds, {
      method: serverRequest.method,
      target,
      targetSessionId: this.upstream?.session.targetSessionId,
      targetRequestId: serverRequest.id,
      clientRequestId: this.input.request.id,
    });
    try {
      await deps.store.putPending(loaded.session, record);
    } catch (error) {
      // Unrecorded, the client's answer could not be matched: refuse it at the target, which can fall back.
      this.log.warn('pending request not recorded; refused at the target', { error: describeError(error) });
      await this.answerTarget(
        jsonRpcError(serverRequest.id, RpcCode.InternalError, 'Gateway could not relay the request; retry later'),
      );
      return;
    }
    const timer = setTimeout(
      () => void this.onPendingTimeout(record.gatewayId),
      deps.config.pendingRequestTimeoutSeconds * 1000,
    );
    timer.unref();
    this.pending.set(record.gatewayId, { record, timer });
    stream.send({ ...serverRequest, id: record.gatewayId });
    recordRelayedInput(serverRequest.method);
    this.log.info('relayed a server request', {
      serverMethod: serverRequest.method,
      gatewayRequestId: record.gatewayId,
    });
  }

  private onNotification(notification: JSONRPCNotification): void {
    let message = notification;
    if (notification.method === 'notifications/progress') {
      const params = notification.params as { progressToken?: ProgressToken } | undefined;
      // Progress belongs to this call only when it carries the token the gateway sent.
      if (this.upstreamProgressToken === undefined || params?.progressToken !== this.upstreamProgressToken) return;
      message = { ...notification, params: { ...params, progressToken: this.progressToken } };
    }
    this.openStream()?.send(message);
  }

  private async answerTarget(message: JSONRPCMessage): Promise<void> {
    if (!this.upstream) return;
    await this.upstream.client
      .send(this.upstream.session, message)
      .catch((error) => this.log.warn('answering the target failed', { error: describeError(error) }));
  }

  /** A pending request nobody answered in time: cancel the call unless another instance claimed it. */
  private async onPendingTimeout(gatewayId: string): Promise<void> {
    const entry = this.pending.get(gatewayId);
    if (!entry || this.finished) return;
    const stillPending = await this.input.deps.store
      .claimPending(this.input.loaded.session.id, gatewayId, 0)
      .catch(() => false);
    if (!stillPending) return; // answered meanwhile: the target carries on
    this.log.info('pending request timed out', { gatewayRequestId: gatewayId });
    recordExpiredInput(entry.record.method);
    this.stop('pending-timeout');
  }

  /** Ends the call early: the target is told, the pending records go. */
  private stop(reason: 'client-gone' | 'deadline' | 'pending-timeout'): void {
    if (this.finished || this.endReason) return;
    this.endReason = reason;
    this.log.info('relayed call stopped', { reason });
    const upstream = this.upstream;
    if (upstream) {
      void upstream.client
        .send(upstream.session, {
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: this.upstreamId, reason: `gateway: ${reason}` },
        })
        .catch((error) => this.log.warn('cancelling at the target failed', { error: describeError(error) }));
    }
    this.upstreamAbort.abort();
  }

  private async cleanup(): Promise<void> {
    for (const { timer } of this.pending.values()) clearTimeout(timer);
    const ids = [...this.pending.keys(), ...this.gatewayHeld];
    if (ids.length === 0) return;
    // One request removes every pending record of this call, answered or not: a late answer then
    // finds nothing and gets -32600 instead of reaching a target that no longer waits.
    await this.input.deps.store
      .deletePending(this.input.loaded.session.id, ids)
      .catch((error) => this.log.warn('removing pending records failed', { error: describeError(error) }));
  }
}
