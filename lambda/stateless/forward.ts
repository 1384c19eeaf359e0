import { randomUUID } from 'node:crypto';
import type { JSONRPCNotification, ProgressToken } from '@modelcontextprotocol/sdk/types.js';
import type { ClientCapabilities, InputRequest, InputRequiredResult } from '@modelcontextprotocol/server';
import {
  CONFIRM_KEY,
  confirmationForm,
  confirmationOutcome,
  needsConfirmation,
  notConfirmedResult,
} from '../confirm/confirm-tools';
import { GatewayError } from '../core/errors';
import { RpcCode } from '../core/jsonrpc';
import { recordAnsweredInput, recordRelayedInput } from '../observability/metrics';
import { DependencyFailedError, type JSONRPCResponse } from '../targets/upstream-client';
import { elicitationModes, missingCapability } from './capabilities';
import { type ListContext, resolveNamed, resolveResource } from './lists';
import { argumentsDigest, type OpenedState, type StateBinding } from './request-state';
import { callUpstream } from './upstream';

/**
 * tools/call, prompts/get and resources/read for 2026-07-28 clients: the multi round-trip relay.
 *
 * - First round: routed by name (or URI) to its target, forwarded with fresh `_meta`.
 * - The target answers input_required: `inputRequests` go back untouched; its `requestState` is
 *   sealed inside the gateway's own (bound to caller, target, method, name, arguments, expiry).
 * - The retry: the gateway's state is opened and checked first — tampered, expired, foreign or
 *   mismatched → -32602 (HTTP 400) and the target is not called — then forwarded with the client's
 *   `inputResponses` and the target's own state (none when the target sent none).
 * - confirmTools: before the first forward the gateway asks the user itself (an input_required
 *   round under the key `gateway_confirm`, with a state of kind `confirm`); later rounds carry
 *   "confirmed" in the sealed state and are not asked again.
 * - A 2025-era target's -32042 (URL elicitation required) becomes an input_required URL round whose
 *   retry re-issues the call; -32042 and -32002 are never sent to 2026-07-28 clients.
 */

export interface CallOutcome {
  /** A JSON-RPC result object, or an error (code, message, data) with the HTTP status to send it with. */
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
  status: number;
}

export interface ForwardContext extends ListContext {
  /** The client's `Mcp-Param-*` headers, forwarded untouched to a 2026-07-28 target. */
  paramHeaders: Record<string, string>;
  /** Called for each notification the target sends before its response (already mapped to the client's token). */
  onNotification(notification: JSONRPCNotification): void;
}

const INPUT_METHODS = new Set(['elicitation/create', 'sampling/createMessage', 'roots/list']);

export async function forwardCall(ctx: ForwardContext): Promise<CallOutcome> {
  const { deps, request, principal } = ctx;
  const { method, params } = request;
  const sealer = deps.modern.requestState;

  let target: string;
  let name: string;
  if (method === 'resources/read') {
    target = await resolveResource(ctx, params.uri);
    name = params.uri as string;
  } else {
    ({ target, name } = await resolveNamed(ctx, params.name, method === 'tools/call' ? 'tool' : 'prompt'));
  }
  const exposed = typeof params.name === 'string' ? params.name : name;
  const args = method === 'resources/read' ? {} : (params.arguments ?? {});
  const binding: StateBinding = { principal, target, method, name, argsDigest: argumentsDigest(args) };

  // The retry's state, checked before anything reaches the target.
  let opened: OpenedState | undefined;
  if (params.requestState !== undefined) {
    const verdict = sealer.open(params.requestState, binding);
    if (!verdict.ok) {
      deps.logger.info('requestState refused', { target, method, reason: verdict.reason });
      const expired = verdict.reason === 'expired';
      throw new GatewayError(
        RpcCode.InvalidParams,
        expired
          ? 'Invalid params: requestState has expired; send the request again without requestState and inputResponses'
          : 'Invalid params: requestState was not issued by this gateway for this request',
        { reason: expired ? 'expired' : 'invalid' },
        400,
      );
    }
    opened = verdict.state;
  }
  const inputResponses = params.inputResponses as Record<string, unknown> | undefined;
  let confirmed = opened?.confirmed ?? false;

  // Gateway-authored confirmation (confirmTools).
  if (method === 'tools/call' && !confirmed && needsConfirmation(deps.config.confirmTools, target, name)) {
    if (opened?.kind === 'confirm') {
      const outcome = confirmationOutcome(inputResponses?.[CONFIRM_KEY]);
      if (outcome === 'declined' || outcome === 'cancelled') {
        deps.logger.info('confirmation not given; tool not called', { target, tool: name, outcome });
        return { result: { ...notConfirmedResult(exposed, outcome) }, status: 200 };
      }
      confirmed = outcome === 'confirmed';
    }
    if (!confirmed) {
      if (!elicitationModes(request.clientCapabilities).form) {
        throw new GatewayError(
          RpcCode.MissingRequiredClientCapability,
          `Missing required client capability: the tool ${exposed} needs a confirmation by form elicitation; declare elicitation in _meta io.modelcontextprotocol/clientCapabilities`,
          { requiredCapabilities: { elicitation: { form: {} } } },
          400,
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
        requestState: sealer.seal(binding, { kind: 'confirm', confirmed: false }),
      };
      return { result: result as unknown as Record<string, unknown>, status: 200 };
    }
  }

  // What the target receives: its own name, and (on a retry of its round) the answers and its state.
  const { _meta: _clientMeta, requestState: _state, inputResponses: _responses, ...rest } = params;
  const upstreamParams: Record<string, unknown> = { ...rest };
  if (method !== 'resources/read') upstreamParams.name = name;
  if (opened?.kind === 'relay') {
    if (inputResponses !== undefined) {
      upstreamParams.inputResponses = inputResponses;
      for (const _key of Object.keys(inputResponses)) recordAnsweredInput('mrtr-retry');
    }
    if (opened.targetState !== undefined) upstreamParams.requestState = opened.targetState;
  }

  // Progress: the target sees a token unique to this call, the client its own.
  const clientToken: ProgressToken | undefined = request.progressToken;
  const upstreamToken = clientToken !== undefined ? `gw-progress-${randomUUID()}` : undefined;
  const { response, era } = await callUpstream(deps, {
    target,
    principal,
    method,
    params: upstreamParams,
    clientCapabilities: request.clientCapabilities,
    protocolVersion: request.protocolVersion,
    logLevel: request.logLevel,
    progressToken: upstreamToken,
    signal: ctx.signal,
    headers: ctx.paramHeaders,
    onNotification: (notification) => {
      if (notification.method === 'notifications/progress') {
        const p = notification.params as { progressToken?: ProgressToken } | undefined;
        if (upstreamToken === undefined || p?.progressToken !== upstreamToken) return;
        ctx.onNotification({ ...notification, params: { ...p, progressToken: clientToken } });
        return;
      }
      // Log messages only for a client that asked for them (per-request logLevel).
      if (notification.method === 'notifications/message' && request.logLevel === undefined) return;
      ctx.onNotification(notification);
    },
  });

  const sealRelay = (targetState: unknown) =>
    sealer.seal(binding, {
      kind: 'relay',
      targetState: typeof targetState === 'string' ? targetState : undefined,
      confirmed,
    });
  return mapResponse(ctx, response, era, method, target, sealRelay, opened !== undefined);
}

function mapResponse(
  ctx: ForwardContext,
  response: JSONRPCResponse,
  era: 'legacy' | 'modern',
  method: string,
  target: string,
  sealRelay: (targetState: unknown) => string,
  isRetry: boolean,
): CallOutcome {
  const caps = ctx.request.clientCapabilities;
  if ('error' in response) {
    const { code, message, data } = response.error;
    if (code === RpcCode.UrlElicitationRequired && era === 'legacy') return urlElicitationRound(caps, data, sealRelay);
    // 2026-07-28 reports a missing resource as invalid params.
    if (code === -32002) return { error: { code: RpcCode.InvalidParams, message, data }, status: 200 };
    if (code === RpcCode.MissingRequiredClientCapability) return { error: { code, message, data }, status: 400 };
    if (code === RpcCode.UrlElicitationRequired) {
      return {
        error: {
          code: RpcCode.InternalError,
          message: `Target ${target} answered with -32042, which 2026-07-28 does not allow`,
          data: { target },
        },
        status: 200,
      };
    }
    // Other errors are the target's answer to a valid request: in-band (HTTP 200).
    return { error: { code, message, data }, status: 200 };
  }
  const result = { ...(response.result as Record<string, unknown>) };
  const resultType = result.resultType ?? 'complete';
  if (resultType === 'input_required') {
    const requests = (result.inputRequests ?? {}) as Record<string, Pick<InputRequest, 'method' | 'params'>>;
    const required: ClientCapabilities = {};
    for (const entry of Object.values(requests)) {
      if (!entry || typeof entry !== 'object' || !INPUT_METHODS.has(entry.method)) {
        throw new DependencyFailedError(
          target,
          `input_required carried an unknown input request ${String(entry?.method)}`,
        );
      }
      const missing = missingCapability(caps, entry);
      if (missing) Object.assign(required, mergeCaps(required, missing));
    }
    if (Object.keys(required).length) {
      return {
        error: {
          code: RpcCode.MissingRequiredClientCapability,
          message: `Missing required client capability: target ${target} needs ${Object.keys(required).join(', ')} to continue`,
          data: { requiredCapabilities: required },
        },
        status: 400,
      };
    }
    for (const entry of Object.values(requests)) recordRelayedInput(entry.method);
    return {
      result: { ...result, resultType: 'input_required', requestState: sealRelay(result.requestState) },
      status: 200,
    };
  }
  if (resultType !== 'complete')
    throw new DependencyFailedError(target, `unrecognized resultType ${String(resultType)}`);
  result.resultType = 'complete';
  if (method === 'resources/read') {
    // A cacheable result; a retry's result (it carried input) must not be cached.
    if (isRetry || typeof result.ttlMs !== 'number') result.ttlMs = 0;
    if (isRetry || (result.cacheScope !== 'public' && result.cacheScope !== 'private')) result.cacheScope = 'private';
  }
  return { result, status: 200 };
}

/** A 2025 target's URLElicitationRequiredError as an input_required round; the retry re-issues the call. */
function urlElicitationRound(
  caps: ClientCapabilities,
  data: unknown,
  sealRelay: (targetState: unknown) => string,
): CallOutcome {
  const elicitations = ((data as { elicitations?: unknown[] } | undefined)?.elicitations ?? []).filter(
    (e): e is { url: string; message?: string } =>
      typeof e === 'object' && e !== null && typeof (e as { url?: unknown }).url === 'string',
  );
  if (!elicitationModes(caps).url) {
    return {
      error: {
        code: RpcCode.MissingRequiredClientCapability,
        message: 'Missing required client capability: the target requires URL-mode elicitation',
        data: { requiredCapabilities: { elicitation: { url: {} } } },
      },
      status: 400,
    };
  }
  const inputRequests: Record<string, InputRequest> = {};
  elicitations.forEach((e, index) => {
    // elicitationId is 2025-only: dropped.
    inputRequests[`url_${index}`] = {
      method: 'elicitation/create',
      params: { mode: 'url', message: e.message ?? 'Open this URL to continue', url: e.url },
    } as InputRequest;
  });
  const result: InputRequiredResult = {
    resultType: 'input_required',
    inputRequests,
    requestState: sealRelay(undefined),
  };
  return { result: result as unknown as Record<string, unknown>, status: 200 };
}

function mergeCaps(a: ClientCapabilities, b: ClientCapabilities): ClientCapabilities {
  const out: Record<string, unknown> = { ...a };
  for (const [key, value] of Object.entries(b)) {
    out[key] = { ...((out[key] as object | undefined) ?? {}), ...(value as object) };
  }
  return out as ClientCapabilities;
}
