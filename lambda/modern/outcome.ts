import { recordRelayedInput } from '../observability/metrics';
import { elicitationModes, mergeCapabilities, missingCapability } from '../protocol/capabilities';
import { RpcCode } from '../protocol/codes';
import { DependencyFailedError, GatewayError } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import { INPUT_METHODS } from '../protocol/methods';
import type { InputRequest, InputRequiredResult, ModernClientCapabilities, RequestId } from '../protocol/types';
import type { Era } from '../protocol/versions';

/**
 * What a 2026-07-28 client gets from a target's response:
 * - `input_required` goes back with `inputRequests` untouched and the target's state sealed in the
 *   gateway's; a kind the client did not declare → -32021 (HTTP 400);
 * - a target's -32042 (URL elicitation required) becomes an input_required URL round whose retry
 *   re-issues the call: a 2025 target's, and a 2026-07-28 target's (which 2026-07-28 does not define,
 *   but SDK servers still send: the Python SDK's URLElicitationRequiredError, the TypeScript v2 SDK's
 *   UrlElicitationRequiredError); one with no usable URL is the target's failure (DependencyFailed);
 *   -32042 and -32002 are never sent to 2026-07-28 clients;
 * - a target's -32021 and -32020 (its check of the client's `Mcp-Param-*` headers) keep HTTP 400;
 * - a target's task (`resultType: "task"`, Tasks extension) goes back with the gateway's task id, to a
 *   client that declared the extension on the request (else it is the target's protocol error);
 * - a complete result names its type; a read resource is cacheable unless it answered a retry.
 */
export interface OutcomeContext {
  caps: ModernClientCapabilities;
  /** The era the target was spoken to. */
  era: Era;
  method: string;
  target: string;
  sealRelay: (targetState: unknown) => string;
  /** The state of a round whose retry re-issues the call (a -32042 round). */
  sealReissue: () => string;
  isRetry: boolean;
  /**
   * The gateway's id for a target's task (Tasks extension: crypto/task-ids.ts); absent when the client did
   * not declare the extension on this request, or the method cannot be task-augmented.
   */
  sealTask?: (task: Record<string, unknown>) => string;
}

export function mapResponse(response: JSONRPCResponse, ctx: OutcomeContext): JSONRPCResponse {
  const { caps, target } = ctx;
  if ('error' in response) {
    const { code, message, data } = response.error;
    if (code === RpcCode.UrlElicitationRequired) return urlElicitationRound(response, ctx);
    // 2026-07-28 reports a missing resource as invalid params.
    if (code === RpcCode.ResourceNotFound) throw new GatewayError('InvalidParams', message, data);
    if (code === RpcCode.MissingRequiredClientCapability) throw new GatewayError('MissingCapability', message, data);
    // Mcp-Param-* headers reach the target untouched: its -32020 is about the client's request (400).
    if (code === RpcCode.HeaderMismatch) throw new GatewayError('HeaderMismatch', message, data);
    // Other errors are the target's answer to a valid request: in-band (HTTP 200).
    return response;
  }
  const result = { ...(response.result as Record<string, unknown>) };
  const resultType = result.resultType ?? 'complete';
  if (resultType === 'input_required') {
    const requests = (result.inputRequests ?? {}) as Record<string, Pick<InputRequest, 'method' | 'params'>>;
    let required: ModernClientCapabilities = {};
    for (const entry of Object.values(requests)) {
      if (!entry || typeof entry !== 'object' || !INPUT_METHODS.has(entry.method)) {
        throw new DependencyFailedError(
          target,
          `input_required carried an unknown input request ${String(entry?.method)}`,
        );
      }
      const missing = missingCapability(caps, entry.method, entry.params as Record<string, unknown> | undefined);
      if (missing) required = mergeCapabilities(required, missing);
    }
    if (Object.keys(required).length) {
      throw new GatewayError(
        'MissingCapability',
        `Missing required client capability: target ${target} needs ${Object.keys(required).join(', ')} to continue`,
        { requiredCapabilities: required },
      );
    }
    for (const entry of Object.values(requests)) recordRelayedInput(entry.method);
    return withResult(response, {
      ...result,
      resultType: 'input_required',
      requestState: ctx.sealRelay(result.requestState),
    });
  }
  if (resultType === 'task') {
    // The target's task handle, as it is but for the id: the gateway's, sealed to target and principal.
    if (!ctx.sealTask || typeof result.taskId !== 'string') {
      throw new DependencyFailedError(
        target,
        ctx.sealTask
          ? 'returned a task without a taskId'
          : 'returned a task to a request that did not declare the Tasks extension',
      );
    }
    return withResult(response, { ...result, taskId: ctx.sealTask(result) });
  }
  if (resultType !== 'complete')
    throw new DependencyFailedError(target, `unrecognized resultType ${String(resultType)}`);
  result.resultType = 'complete';
  if (ctx.method === 'resources/read') {
    // A cacheable result; a retry's result (it carried input) must not be cached.
    if (ctx.isRetry || typeof result.ttlMs !== 'number') result.ttlMs = 0;
    if (ctx.isRetry || (result.cacheScope !== 'public' && result.cacheScope !== 'private'))
      result.cacheScope = 'private';
  }
  return withResult(response, result);
}

function withResult(response: JSONRPCResponse, result: Record<string, unknown>): JSONRPCResponse {
  return { jsonrpc: '2.0', id: response.id as RequestId, result };
}

/** A legacy target's URLElicitationRequiredError as an input_required round; the retry re-issues the call. */
function urlElicitationRound(
  response: JSONRPCResponse & { error: { data?: unknown } },
  ctx: OutcomeContext,
): JSONRPCResponse {
  const data = response.error.data;
  const elicitations = ((data as { elicitations?: unknown[] } | undefined)?.elicitations ?? []).filter(
    (e): e is { url: string; message?: string } =>
      typeof e === 'object' &&
      e !== null &&
      typeof (e as { url?: unknown }).url === 'string' &&
      URL.canParse((e as { url: string }).url),
  );
  // Nothing the user could open: an empty round's retry would re-issue the call and be asked again.
  if (elicitations.length === 0) {
    throw new DependencyFailedError(ctx.target, 'answered -32042 (URL elicitation required) without a usable URL');
  }
  if (!elicitationModes(ctx.caps).url) {
    throw new GatewayError(
      'MissingCapability',
      'Missing required client capability: the target requires URL-mode elicitation',
      {
        requiredCapabilities: { elicitation: { url: {} } },
      },
    );
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
    requestState: ctx.sealReissue(),
  };
  return withResult(response, result as unknown as Record<string, unknown>);
}
