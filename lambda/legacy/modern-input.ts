import { randomUUID } from 'node:crypto';
import type {
  JSONRPCRequest,
  ClientCapabilities as LegacyClientCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import type { ClientCapabilities } from '@modelcontextprotocol/server';
import { relayableCapabilities } from '../stateless/capabilities';
import type { JSONRPCResponse } from '../targets/upstream-client';
import { capabilitiesForTarget } from './capabilities';

/**
 * The 2026-07-28 side of a 2025 session's call to a 2026-07-28 target that answers `input_required`
 * (spec notes §10.17–18). The relay (relay.ts) runs the rounds: each input request goes to the client
 * as a 2025 server request on the call's stream, and the call is retried upstream with the answers.
 */

/** Rounds of input one call may take before the gateway gives up. */
export const MAX_INPUT_ROUNDS = 8;

export interface InputRequest {
  method: string;
  params?: Record<string, unknown>;
}

export interface InputRequired {
  inputRequests: Record<string, InputRequest>;
  requestState?: string;
}

/** The input_required result of a bridged call, or undefined for any other response. */
export function inputRequiredOf(response: JSONRPCResponse): InputRequired | undefined {
  if (!('result' in response)) return undefined;
  const result = response.result as Record<string, unknown>;
  if (result.resultType !== 'input_required') return undefined;
  const inputRequests = (result.inputRequests ?? {}) as Record<string, InputRequest>;
  return { inputRequests, requestState: typeof result.requestState === 'string' ? result.requestState : undefined };
}

/**
 * What the gateway declares to the 2026-07-28 target for a 2025 session: the session's declared
 * input capabilities as its version allows them, in the 2026 shape (`roots.listChanged` → `roots: {}`).
 * Nothing when the client cannot take server requests (JSON-only request).
 */
export function capabilitiesForModernTarget(
  client: LegacyClientCapabilities,
  protocolVersion: string,
  sse: boolean,
): ClientCapabilities {
  if (!sse) return {};
  return relayableCapabilities(capabilitiesForTarget(client, protocolVersion) as ClientCapabilities);
}

/**
 * One input request as a 2025 server request with the gateway's id. URL-mode elicitation on a
 * 2025-11-25 session requires an `elicitationId`, which 2026-07-28 removed: the gateway mints one.
 */
export function toLegacyServerRequest(
  gatewayId: string,
  request: InputRequest,
  sessionVersion: string,
): JSONRPCRequest {
  const params = { ...request.params };
  if (
    request.method === 'elicitation/create' &&
    params.mode === 'url' &&
    sessionVersion >= '2025-11-25' &&
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
