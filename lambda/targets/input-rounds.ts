import { randomUUID } from 'node:crypto';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import type { JSONRPCRequest } from '../protocol/types';
import { supportsFeature } from '../protocol/versions';

/**
 * The translation of a 2026-07-28 target's `input_required` rounds (multi round-trip requests) for a
 * 2025 session: each input request becomes a 2025 server request the relay sends on the call's stream,
 * and the answers become the retry the target expects.
 */

/** Rounds of input one call may take before the gateway gives up. */
export const MAX_INPUT_ROUNDS = 8;

export interface InputRequestEntry {
  method: string;
  params?: Record<string, unknown>;
}

export interface InputRequired {
  inputRequests: Record<string, InputRequestEntry>;
  requestState?: string;
}

/** The input_required result of a 2026-07-28 target's call, or undefined for any other response. */
export function inputRequiredOf(response: JSONRPCResponse): InputRequired | undefined {
  if (!('result' in response)) return undefined;
  const result = response.result as Record<string, unknown>;
  if (result.resultType !== 'input_required') return undefined;
  const inputRequests = (result.inputRequests ?? {}) as Record<string, InputRequestEntry>;
  return { inputRequests, requestState: typeof result.requestState === 'string' ? result.requestState : undefined };
}

/**
 * One input request as a 2025 server request with the gateway's id. URL-mode elicitation on a
 * 2025-11-25 session requires an `elicitationId`, which 2026-07-28 removed: the gateway mints one.
 */
export function toLegacyServerRequest(
  gatewayId: string,
  request: InputRequestEntry,
  sessionVersion: string,
): JSONRPCRequest {
  const params = { ...request.params };
  if (
    request.method === 'elicitation/create' &&
    params.mode === 'url' &&
    supportsFeature(sessionVersion, 'urlElicitation') &&
    typeof params.elicitationId !== 'string'
  ) {
    params.elicitationId = `gw-elicitation-${randomUUID()}`;
  }
  return { jsonrpc: '2.0', id: gatewayId, method: request.method, params };
}

/** The retry's params: the original ones, the answers under the target's keys, its requestState byte-exact (none if it sent none). */
export function retryParams(
  params: Record<string, unknown>,
  inputResponses: Record<string, unknown>,
  requestState: string | undefined,
): Record<string, unknown> {
  const { inputResponses: _responses, requestState: _state, ...original } = params;
  return { ...original, inputResponses, ...(requestState !== undefined ? { requestState } : {}) };
}
