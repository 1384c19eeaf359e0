import { ProgressMapper } from '../calls/progress-tokens';
import { recordAnsweredInput } from '../observability/metrics';
import {
  CONFIRM_KEY,
  confirmationForm,
  confirmationOutcome,
  exposedNameOf,
  needsConfirmation,
  notConfirmedResult,
} from '../policy/confirm-tools';
import { elicitationModes, missingCapability } from '../protocol/capabilities';
import { GatewayError, rpcError, rpcErrorOf } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import { atOrAbove } from '../protocol/log-levels';
import { declaresTasks } from '../protocol/meta';
import type { InputRequest, InputRequiredResult, JSONRPCNotification, JSONRPCRequest } from '../protocol/types';
import type { Era } from '../protocol/versions';
import type { Caller, TargetLink } from '../targets/target-link';
import { BridgedCall, type BridgeSettings, bridgeFailure, continueBridge } from './bridge';
import { type BridgedPlaces, takeBridgedPlace } from './bridged-calls';
import type { ModernDeps } from './deps';
import { mapResponse } from './outcome';
import { argumentsDigest, type OpenedState, type StateBinding } from './request-state';
import { checkedInputResponses, checkRoundAnswers } from './round-answers';
import type { ModernRequest } from './validate';

/**
 * tools/call, prompts/get and resources/read for 2026-07-28 clients: the multi round-trip relay.
 *
 * - First round: routed by name (or URI) to its target, forwarded in the target's era.
 * - The target answers input_required: `inputRequests` go back untouched; its `requestState` is
 *   sealed inside the gateway's own (bound to caller, target, method, name, arguments, expiry).
 * - The retry: the gateway's state is opened and checked first — tampered, expired, foreign or
 *   mismatched → -32602 (HTTP 400) and the target is not called — then forwarded with the client's
 *   `inputResponses` and the target's own state (none when the target sent none).
 * - confirmTools: before the first forward the gateway asks the user itself (an input_required
 *   round under the key `gateway_confirm`, with a state of kind `confirm`); later rounds carry
 *   "confirmed" in the sealed state and are not asked again.
 * Results come back as the target's response (a target's error is relayed in-band); the gateway's
 * own refusals are thrown.
 */
export interface CallContext {
  deps: ModernDeps;
  request: ModernRequest;
  principal: string;
  caller: Caller;
  signal: AbortSignal;
  /** The client's `Mcp-Param-*` headers, forwarded untouched to a 2026-07-28 target. */
  paramHeaders: Record<string, string>;
  /** Each notification the target sends before its response, already mapped to the client's token. */
  onNotification(notification: JSONRPCNotification): void;
  /** A promise while the client's stream is full: the target's stream is not read meanwhile. */
  backpressure?(): Promise<void> | undefined;
  /**
   * Sends a message to the client on a stream that stays open, for a round of a bridged call; false
   * when the client takes no `text/event-stream` (then the call cannot be held).
   */
  emit(message: JSONRPCResponse): boolean;
  /** This request may wait long (a bridged retry): let keep-alives flow. */
  keepAlive(): void;
  /** Epoch ms by which this invocation must be done. */
  deadline: number;
  /** The client accepts `text/event-stream` (a bridged call needs a stream it can hold open). */
  canStream: boolean;
}

/** The call's response, or undefined when it was already sent (a bridged call: round 1 went out on the stream kept open). */
export async function forwardCall(ctx: CallContext): Promise<JSONRPCResponse | undefined> {
  const { deps, request, principal, caller } = ctx;
  const { method, params } = request;
  const sealer = deps.requestState;
  const scope = { caller, signal: ctx.signal };

  let target: string;
  let name: string;
  if (method === 'resources/read') {
    target = await deps.catalog.resolveResource(params.uri, scope);
    name = params.uri as string;
  } else {
    ({ target, name } = await deps.catalog.resolveNamed(
      params.name,
      method === 'tools/call' ? 'tool' : 'prompt',
      scope,
    ));
  }
  const exposed = exposedNameOf(params.name, name);
  const args = method === 'resources/read' ? {} : (params.arguments ?? {});
  // Every round of a call is decided again: a retry carries the same arguments (its state is bound to them).
  if (method === 'tools/call') deps.catalog.authorizeCall(params.name, { target, name }, args, scope);
  const binding: StateBinding = { principal, target, method, name, argsDigest: argumentsDigest(args) };
  const complete = (result: Record<string, unknown>): JSONRPCResponse => ({ jsonrpc: '2.0', id: request.id, result });

  // The retry's state, checked before anything reaches the target.
  let opened: OpenedState | undefined;
  if (params.requestState !== undefined) {
    const verdict = sealer.open(params.requestState, binding);
    if (!verdict.ok) {
      deps.logger.info('requestState refused', { target, method, reason: verdict.reason });
      const expired = verdict.reason === 'expired';
      throw new GatewayError(
        'RequestStateRefused',
        expired
          ? 'Invalid params: requestState has expired; send the request again without requestState and inputResponses'
          : 'Invalid params: requestState was not issued by this gateway for this request',
        { reason: expired ? 'expired' : 'invalid' },
      );
    }
    opened = verdict.state;
  }
  const inputResponses = checkedInputResponses(params.inputResponses);
  if (opened?.bridge) checkRoundAnswers(opened.bridge, inputResponses);
  let confirmed = opened?.confirmed ?? false;

  // Policy before forwarding: the gateway asks the user itself for listed tools (confirmTools).
  if (method === 'tools/call' && !confirmed && needsConfirmation(deps.config.confirmTools, target, name)) {
    if (opened?.kind === 'confirm') {
      const outcome = confirmationOutcome(inputResponses?.[CONFIRM_KEY]);
      if (outcome === 'declined' || outcome === 'cancelled') {
        deps.logger.info('confirmation not given; tool not called', { target, tool: name, outcome });
        return complete({ ...notConfirmedResult(exposed, outcome) });
      }
      confirmed = outcome === 'confirmed';
    }
    if (!confirmed) {
      if (!elicitationModes(request.clientCapabilities).form) {
        throw new GatewayError(
          'MissingCapability',
          `Missing required client capability: the tool ${exposed} needs a confirmation by form elicitation; declare elicitation in _meta io.modelcontextprotocol/clientCapabilities`,
          { requiredCapabilities: { elicitation: { form: {} } } },
        );
      }
      const result: InputRequiredResult = {
        resultType: 'input_required',
        inputRequests: {
          [CONFIRM_KEY]: {
            method: 'elicitation/create',
            params: confirmationForm(exposed, target, name, args),
          } as InputRequest,
        },
        // A short window (confirmationTtlSeconds): nothing is stored, so this is what bounds replays.
        requestState: sealer.seal(
          binding,
          { kind: 'confirm', confirmed: false },
          undefined,
          deps.config.confirmationTtlSeconds,
        ),
      };
      return complete(result as unknown as Record<string, unknown>);
    }
  }

  // What the target receives: its own name, and (on a retry of its round) the answers and its state.
  const { _meta: _clientMeta, requestState: _state, inputResponses: _responses, ...rest } = params;
  const targetParams: Record<string, unknown> = { ...rest };
  if (method !== 'resources/read') targetParams.name = name;
  // A -32042 round's retry is the call again: its answers only said the user went to the URL. A
  // request with no requestState at all reaches the target with whatever inputResponses it carries,
  // as it would directly (a target that asked without a requestState reads them so; it ignores what
  // it does not recognise) — past the gateway's own confirmation, which needs its sealed state.
  if ((opened?.kind === 'relay' && !opened.reissue) || opened === undefined) {
    if (inputResponses !== undefined) {
      targetParams.inputResponses = inputResponses;
      for (const _key of Object.keys(inputResponses)) recordAnsweredInput('mrtr-retry');
    }
    if (opened?.targetState !== undefined) targetParams.requestState = opened.targetState;
  }

  const sealRelay = (targetState: unknown) =>
    sealer.seal(binding, {
      kind: 'relay',
      targetState: typeof targetState === 'string' ? targetState : undefined,
      confirmed,
    });
  const outcome = (response: JSONRPCResponse, era: Era) =>
    mapResponse(
      { ...response, id: request.id },
      {
        caps: request.clientCapabilities,
        era,
        method,
        target,
        sealRelay,
        sealReissue: () => sealer.seal(binding, { kind: 'relay', confirmed, reissue: true }),
        isRetry: opened !== undefined,
        // Only tools/call may be task-augmented, and only for a client that declared the extension.
        sealTask:
          method === 'tools/call' && declaresTasks(request.clientCapabilities)
            ? (task: Record<string, unknown>) =>
                deps.taskIds.seal({ target, taskId: task.taskId as string, principal }, task)
            : undefined,
      },
    );
  // The round's requests go into its state, so the retry's answers are checked against them.
  const inputRound = (inputRequests: Record<string, InputRequest>, bridge: { id: string; round: number }) => {
    const requests = Object.fromEntries(Object.entries(inputRequests).map(([key, r]) => [key, r.method]));
    const requestState = sealer.seal(binding, { kind: 'bridge', confirmed, bridge: { ...bridge, requests } });
    return complete({ resultType: 'input_required', inputRequests, requestState });
  };

  // The retry of a bridged round: the answers go to the target, and what it does next comes back.
  if (opened?.kind === 'bridge' && opened.bridge) {
    ctx.keepAlive();
    const payload = await continueBridge(
      { ...bridgeSettings(deps), targets: deps.targets },
      opened.bridge,
      inputResponses,
      ctx.deadline,
      ctx.signal,
    );
    const next = { id: opened.bridge.id, round: opened.bridge.round + 1 };
    if (payload.kind === 'input') return inputRound(payload.inputRequests ?? {}, next);
    if (payload.kind === 'result' && payload.response) return outcome(payload.response, 'legacy');
    throw bridgeFailure(payload);
  }

  const targetLink = await deps.targets.open(target, caller, ctx.signal);
  const response = await callOnce(ctx, targetLink, method, targetParams, (inputRequests, bridge) =>
    ctx.emit(inputRound(inputRequests, bridge)),
  );
  return response && outcome(response, targetLink.era);
}

/** Where a principal's bridged calls are counted, and the bound, from configuration. */
function bridgedPlaces(deps: ModernDeps): BridgedPlaces {
  return {
    store: deps.bridgeStore,
    logger: deps.logger,
    max: deps.config.maxBridgedCallsPerPrincipal,
    pendingTimeoutSeconds: deps.config.pendingRequestTimeoutSeconds,
  };
}

/** The bridged path's store, logger and bounds, from configuration. */
function bridgeSettings(deps: ModernDeps): BridgeSettings {
  return {
    store: deps.bridgeStore,
    logger: deps.logger,
    pendingTimeoutSeconds: deps.config.pendingRequestTimeoutSeconds,
    maxOutcomeBytes: deps.config.maxBridgedOutcomeBytes,
    maxRequests: deps.config.maxPendingRequestsPerSession,
    clock: deps.clock,
  };
}

/**
 * One request to the target. A legacy target that asks for input in the middle of the call
 * (elicitation/create, sampling/createMessage, roots/list on its call's stream or its session's GET
 * stream) is bridged (./bridge.ts): its requests become input_required rounds and this invocation
 * holds the call until it ends (undefined is returned then: the rounds already went out). A request
 * the client did not declare, or a client that takes no stream, cannot be bridged: the target's
 * request is refused, the call cancelled at the target, and the client gets a clear error
 * (-32021, or CrossEraInputUnsupported) instead of waiting for an answer that never comes.
 */
async function callOnce(
  ctx: CallContext,
  targetLink: TargetLink,
  method: string,
  params: Record<string, unknown>,
  emitRound: (inputRequests: Record<string, InputRequest>, bridge: { id: string; round: number }) => boolean,
): Promise<JSONRPCResponse | undefined> {
  const { request, deps } = ctx;
  // 2025 has no multi round-trip fields; a retry re-issues the call (see the -32042 translation).
  const sent = targetLink.era === 'legacy' ? (({ inputResponses: _r, requestState: _s, ...p }) => p)(params) : params;
  const progress = new ProgressMapper(request.progressToken);
  // The target call's own controller: the call's signal aborts it, and so does a cross-era refusal.
  // A listener rather than AbortSignal.any, which costs a weakly held signal chain per call.
  const crossEra = new AbortController();
  const follow = () => crossEra.abort(ctx.signal.reason);
  if (ctx.signal.aborted) follow();
  else ctx.signal.addEventListener('abort', follow, { once: true });
  let refusedMethod: string | undefined;
  let missing: ReturnType<typeof missingCapability>;
  let holder: BridgedCall | undefined;
  let bridgeError: unknown;
  /**
   * This call's place among the principal's bridged calls (maxBridgedCallsPerPrincipal), taken at the
   * target's first request, before anything of the round is stored: its release, or undefined when refused.
   */
  let place: Promise<(() => Promise<void>) | undefined> | undefined;
  let unregister: (() => void) | undefined;
  let markEnded!: () => void;
  /** Resolves once the call and its holder have ended (what a shutdown waits for). */
  const ended = new Promise<void>((resolve) => {
    markEnded = resolve;
  });
  const bridge = () => {
    holder ??= new BridgedCall(bridgeSettings(deps), {
      targetLink: targetLink,
      clientRequestId: request.id,
      emitFirstRound: (inputRequests, round) => {
        if (!emitRound(inputRequests, { id: holder!.id, round: round + 1 }))
          crossEra.abort('gateway: client takes no stream');
      },
      abandon: () => crossEra.abort('gateway: pending-timeout'),
      fail: (error) => {
        bridgeError = error;
        crossEra.abort('gateway: input round not recorded');
      },
    });
    // Held here until it ends: a shutdown (SIGTERM, the local server closing) cancels it at its target, and
    // its retry finds that outcome; its holder stops with it instead of looking on after the process meant to end.
    unregister ??= deps.activeCalls.register(holder.id, 'bridge', {
      cancelByClient: (reason) => crossEra.abort(reason ?? 'gateway: client cancelled'),
      shutdown: () => {
        crossEra.abort('gateway: shutting down');
        return ended;
      },
    });
    return holder;
  };
  const crossEraError = () =>
    missing
      ? new GatewayError(
          'MissingCapability',
          `Missing required client capability: target ${targetLink.target} asked for ${refusedMethod} during the call`,
          { requiredCapabilities: missing },
        )
      : new GatewayError(
          'CrossEraInputUnsupported',
          `Target ${targetLink.target} speaks protocol 2025-11-25 and asked for input (${refusedMethod}) during the call; the gateway relays that as input_required rounds only to a request that accepts text/event-stream.`,
          { target: targetLink.target, inputMethod: refusedMethod },
        );
  const onServerRequest = (serverRequest: JSONRPCRequest) => {
    if (refusedMethod) return;
    const requestParams = serverRequest.params as Record<string, unknown> | undefined;
    missing = missingCapability(request.clientCapabilities, serverRequest.method, requestParams);
    if (!missing && ctx.canStream) {
      place ??= takeBridgedPlace(bridgedPlaces(deps), ctx.principal, ctx.deadline).catch((error: unknown) => {
        // Refused before anything is stored: the target is told, the call cancelled, the client gets the error.
        bridgeError = error;
        refusedMethod = serverRequest.method;
        deps.logger.warn('bridged call refused: too many of this caller waiting for input, or no count', {
          target: targetLink.target,
          reason: error instanceof GatewayError ? error.kind : String(error),
        });
        return undefined;
      });
      // Requests arriving while the place is taken keep their order (and still form one round).
      void place.then((release) => {
        // The call ended while the place was being taken (deadline, client gone): nothing to hold.
        if (crossEra.signal.aborted) return;
        if (release) {
          bridge().onServerRequest(serverRequest);
          return;
        }
        void targetLink
          .reply(rpcError(serverRequest.id, bridgeError))
          .finally(() => crossEra.abort('gateway: too many bridged calls'));
      });
      return;
    }
    refusedMethod = serverRequest.method;
    const refusal = rpcErrorOf(
      serverRequest.id,
      'MethodNotFound',
      `Method not found: ${serverRequest.method} (not relayable across protocol eras)`,
    );
    void targetLink.reply(refusal).finally(() => crossEra.abort('gateway: cross-era input'));
  };
  try {
    const response = await targetLink.call(
      { method, params: sent },
      {
        signal: crossEra.signal,
        progressToken: progress.targetToken,
        headers: ctx.paramHeaders,
        backpressure: ctx.backpressure,
        onServerRequest,
        onNotification: (notification) => {
          deps.catalog.noticed(targetLink.target, notification);
          const mapped = progress.map(notification);
          // Log messages only for a client that asked for them (per-request logLevel).
          // Log messages only for a client that asked for them, at its level or above: a pooled 2025 target
          // session may have been opened at another caller's level.
          if (!mapped || (mapped.method === 'notifications/message' && !atOrAbove(mapped, request.logLevel))) return;
          ctx.onNotification(mapped);
        },
      },
    );
    if (holder?.bridged) {
      await holder.finish({ response });
      return undefined;
    }
    if (bridgeError) throw bridgeError;
    if (refusedMethod) throw crossEraError();
    return response;
  } catch (error) {
    if (holder?.bridged) {
      // A later round's request the client cannot be asked ended the call: the retry is told why.
      await holder.finish({ error: refusedMethod ? crossEraError() : error });
      return undefined;
    }
    if (bridgeError) throw bridgeError;
    if (refusedMethod) throw crossEraError();
    throw error;
  } finally {
    ctx.signal.removeEventListener('abort', follow);
    // Given back before the invocation ends (Lambda runs nothing after it): result, failure, abandoned round, shutdown.
    const release = await place;
    await release?.();
    unregister?.();
    markEnded();
  }
}
