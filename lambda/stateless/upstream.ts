import { randomUUID } from 'node:crypto';
import type { JSONRPCNotification, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ClientCapabilities } from '@modelcontextprotocol/server';
import type { GatewayDeps } from '../core/deps';
import { describeError } from '../core/logger';
import type { Era } from '../targets/era-probe';
import { DependencyFailedError, type JSONRPCResponse, type UpstreamSession } from '../targets/upstream-client';
import { legacyCapabilities, relayableCapabilities } from './capabilities';

/**
 * One request from the 2026-07-28 path to a target, in the target's era: a modern request with
 * fresh `_meta`, or a request on a 2025 session (from the per-instance pool). A 2025 target that asks
 * for input in the middle of the call (elicitation/create, sampling/createMessage, roots/list on its
 * stream) cannot be bridged to a 2026 client yet: the call is cancelled at the target and ends with
 * CrossEraInputError instead of waiting for an answer that never comes.
 */

export type StatelessDeps = Omit<GatewayDeps, 'store'>;

export interface UpstreamCall {
  target: string;
  principal: string;
  method: string;
  params: Record<string, unknown>;
  clientCapabilities: ClientCapabilities;
  protocolVersion: string;
  logLevel?: string;
  /** The token the gateway sends upstream (already rewritten), if the client asked for progress. */
  progressToken?: string;
  signal: AbortSignal;
  onNotification?(notification: JSONRPCNotification): void;
  /** Headers forwarded untouched to a modern target (the client's `Mcp-Param-*`). */
  headers?: Record<string, string>;
}

export interface UpstreamOutcome {
  era: Era;
  response: JSONRPCResponse;
  httpStatus: number;
}

export class CrossEraInputError extends Error {
  constructor(
    readonly target: string,
    readonly inputMethod: string,
  ) {
    super(
      `Target ${target} speaks protocol 2025-11-25 and asked for input (${inputMethod}) during the call; relaying that to a 2026-07-28 request is not supported yet. Call this tool from a 2025-11-25 session, or ask the target's operator to support 2026-07-28.`,
    );
    this.name = 'CrossEraInputError';
  }
}

export async function callUpstream(deps: StatelessDeps, call: UpstreamCall): Promise<UpstreamOutcome> {
  const { eras } = deps.modern;
  let verdict: Awaited<ReturnType<typeof eras.eraOf>>;
  try {
    verdict = await eras.eraOf(call.target, call.signal);
  } catch (error) {
    if (error instanceof DependencyFailedError) eras.forget(call.target);
    throw error;
  }
  try {
    if (verdict.era === 'modern') return await callModern(deps, call);
    return await callLegacy(deps, call);
  } catch (error) {
    // A target that failed may have changed (redeployed, upgraded): probe again next time.
    if (error instanceof DependencyFailedError) eras.forget(call.target);
    throw error;
  }
}

async function callModern(deps: StatelessDeps, call: UpstreamCall): Promise<UpstreamOutcome> {
  const client = deps.modern.clients.get(call.target);
  if (!client) throw new DependencyFailedError(call.target, 'not configured');
  const { response, httpStatus } = await client.request(
    call.method,
    call.params,
    {
      protocolVersion: call.protocolVersion,
      clientCapabilities: relayableCapabilities(call.clientCapabilities),
      logLevel: call.logLevel,
      progressToken: call.progressToken,
    },
    { signal: call.signal, onNotification: call.onNotification, headers: call.headers },
  );
  return { era: 'modern', response, httpStatus };
}

async function callLegacy(deps: StatelessDeps, call: UpstreamCall): Promise<UpstreamOutcome> {
  const client = deps.targets.get(call.target);
  if (!client) throw new DependencyFailedError(call.target, 'not configured');
  const upstreamId = `gw-${randomUUID()}`;
  const abort = new AbortController();
  const onAbort = () => abort.abort(call.signal.reason);
  call.signal.addEventListener('abort', onAbort, { once: true });
  let session: UpstreamSession | undefined;
  let crossEra: string | undefined;
  // 2025 has no multi round-trip fields; a retry re-issues the call (see the -32042 translation).
  const { inputResponses: _responses, requestState: _state, ...params } = call.params;
  if (call.progressToken !== undefined)
    params._meta = { ...(params._meta as object | undefined), progressToken: call.progressToken };
  const request: JSONRPCRequest = { jsonrpc: '2.0', id: upstreamId, method: call.method, params };
  try {
    const response = await deps.modern.legacySessions.request(
      call.target,
      call.principal,
      legacyCapabilities(call.clientCapabilities),
      request,
      {
        signal: abort.signal,
        onSession: (s) => (session = s),
        handlers: {
          onNotification: (notification) => call.onNotification?.(notification),
          onServerRequest: (serverRequest) => {
            if (!session) return;
            if (serverRequest.method === 'ping') {
              void client.send(session, { jsonrpc: '2.0', id: serverRequest.id, result: {} }).catch(() => undefined);
              return;
            }
            if (crossEra) return;
            crossEra = serverRequest.method;
            abort.abort();
            const upstream = session;
            // Tell the target: its request cannot be answered, and the call is cancelled.
            void client
              .send(upstream, {
                jsonrpc: '2.0',
                id: serverRequest.id,
                error: {
                  code: -32601,
                  message: `Method not found: ${serverRequest.method} (not relayable across protocol eras)`,
                },
              })
              .then(() =>
                client.send(upstream, {
                  jsonrpc: '2.0',
                  method: 'notifications/cancelled',
                  params: { requestId: upstreamId, reason: 'gateway: cross-era input' },
                }),
              )
              .catch((error) =>
                deps.logger.warn('cancelling at the target failed', {
                  target: call.target,
                  error: describeError(error),
                }),
              );
          },
        },
      },
    );
    if (crossEra) throw new CrossEraInputError(call.target, crossEra);
    return { era: 'legacy', response, httpStatus: 200 };
  } catch (error) {
    if (crossEra) throw new CrossEraInputError(call.target, crossEra);
    if (call.signal.aborted && session) {
      // The client went away (closing a 2026-07-28 request is its cancellation): cancel at the target.
      void client
        .send(session, {
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: upstreamId, reason: 'gateway: client closed the request' },
        })
        .catch(() => undefined);
    }
    throw error;
  } finally {
    call.signal.removeEventListener('abort', onAbort);
  }
}
