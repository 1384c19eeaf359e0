import type { InitializeRequestParams, InitializeResult, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayDeps } from '../core/deps';
import { statusFor, toRpcError } from '../core/errors';
import type { ExchangeContext } from '../core/exchange';
import { type AcceptPreference, errorResponse, jsonResponse, MCP_HEADERS, messageResponse } from '../core/http';
import { type ClientMessage, RpcCode } from '../core/jsonrpc';
import { describeError } from '../core/logger';
import type { LoadedSession, SessionRecord } from '../state/store';
import { newSessionId } from './ids';
import { handleSessionMessage } from './session-router';

/** Protocol versions of the legacy (initialize handshake) era that this gateway is configured for. */
export function legacyVersions(deps: GatewayDeps): string[] {
  return deps.config.supportedVersions
    .filter((v) => v < '2026-01-01')
    .sort()
    .reverse();
}

const SERVER_CAPABILITIES = {
  tools: { listChanged: false },
  prompts: { listChanged: false },
  resources: { subscribe: false, listChanged: false },
  completions: {},
  logging: {},
};

export interface LegacyInput {
  deps: GatewayDeps;
  message: ClientMessage;
  accept: AcceptPreference;
  exchange: ExchangeContext;
  principal: string;
  headers: Headers;
}

/** A POST on the 2025-era path: initialize, or a message within an existing session. */
export async function handleLegacyPost(input: LegacyInput): Promise<Response> {
  const { deps, message, headers } = input;
  if (message.kind === 'request' && message.message.method === 'initialize') return initialize(input, message.message);

  const versionHeader = headers.get(MCP_HEADERS.protocolVersion);
  if (versionHeader !== null && !legacyVersions(deps).includes(versionHeader)) {
    return errorResponse(
      400,
      idOf(message),
      RpcCode.InvalidRequest,
      `Bad Request: unsupported MCP-Protocol-Version "${versionHeader}"`,
      {
        supported: deps.config.supportedVersions,
        requested: versionHeader,
      },
    );
  }
  const loaded = await loadOwnSession(input);
  if (loaded instanceof Response) return loaded;
  return handleSessionMessage(
    {
      deps,
      loaded,
      accept: input.accept,
      exchange: input.exchange,
      headers: { [MCP_HEADERS.sessionId]: loaded.session.id },
    },
    message,
  );
}

/** DELETE ends the session (and everything in its partition). */
export async function handleLegacyDelete(input: Omit<LegacyInput, 'message' | 'accept'>): Promise<Response> {
  const loaded = await loadOwnSession(input);
  if (loaded instanceof Response) return loaded;
  try {
    await input.deps.store.deleteSession(loaded);
  } catch (error) {
    return jsonResponse(statusFor(error), toRpcError(null, error), { 'retry-after': '1' });
  }
  await Promise.all(
    [...loaded.targets.values()].map((record) =>
      input.deps.targets
        .get(record.target)
        ?.terminate({ targetSessionId: record.targetSessionId, protocolVersion: record.protocolVersion })
        .catch(() => undefined),
    ),
  );
  input.deps.logger.info('session deleted', { sessionId: loaded.session.id });
  return new Response(null, { status: 200 });
}

/** 400 without a session id; 404 for unknown, expired, deleted, or another principal's session. */
async function loadOwnSession(
  input: Omit<LegacyInput, 'message' | 'accept'> & { message?: ClientMessage },
): Promise<LoadedSession | Response> {
  const { deps, headers, principal } = input;
  const id = input.message ? idOf(input.message) : null;
  const sessionId = headers.get(MCP_HEADERS.sessionId);
  if (!sessionId) {
    return errorResponse(
      400,
      id,
      RpcCode.InvalidRequest,
      'Bad Request: Mcp-Session-Id header is required (send initialize first)',
    );
  }
  let loaded: LoadedSession | undefined;
  try {
    loaded = /^[\x21-\x7e]{1,256}$/.test(sessionId) ? await deps.store.loadSession(sessionId) : undefined;
  } catch (error) {
    deps.logger.error('loading the session failed', { error: describeError(error) });
    return jsonResponse(statusFor(error), toRpcError(id, error), { 'retry-after': '1' });
  }
  if (!loaded || loaded.session.principal !== principal) {
    // Another principal's session is indistinguishable from a missing one.
    return errorResponse(
      404,
      id,
      RpcCode.InvalidRequest,
      'Session not found: it expired or was deleted; initialize a new one',
    );
  }
  return loaded;
}

async function initialize(input: LegacyInput, request: JSONRPCRequest): Promise<Response> {
  const { deps, accept, principal } = input;
  const params = (request.params ?? {}) as Partial<InitializeRequestParams>;
  if (
    typeof params.protocolVersion !== 'string' ||
    typeof params.capabilities !== 'object' ||
    params.capabilities === null
  ) {
    return errorResponse(
      400,
      request.id,
      RpcCode.InvalidParams,
      'Invalid params: initialize needs protocolVersion and capabilities',
    );
  }
  const versions = legacyVersions(deps);
  if (versions.length === 0) {
    return errorResponse(
      400,
      request.id,
      RpcCode.InvalidRequest,
      'This gateway serves only the stateless protocol; initialize is not supported',
      {
        supported: deps.config.supportedVersions,
        requested: params.protocolVersion,
      },
    );
  }
  // The requested version when supported, else our latest: the client decides whether it can go on.
  const protocolVersion = versions.includes(params.protocolVersion) ? params.protocolVersion : versions[0];
  const now = Math.floor(Date.now() / 1000);
  const session: SessionRecord = {
    id: newSessionId(),
    principal,
    protocolVersion,
    clientCapabilities: params.capabilities,
    clientInfo: params.clientInfo,
    createdAt: now,
    expiresAt: now + deps.config.sessionTimeoutSeconds,
  };
  try {
    await deps.store.createSession(session);
  } catch (error) {
    deps.logger.error('creating the session failed', { error: describeError(error) });
    return jsonResponse(statusFor(error), toRpcError(request.id, error), { 'retry-after': '1' });
  }
  deps.logger.info('session initialized', { sessionId: session.id, protocolVersion, client: params.clientInfo?.name });
  const result: InitializeResult = { protocolVersion, capabilities: SERVER_CAPABILITIES, serverInfo: deps.serverInfo };
  return messageResponse({ jsonrpc: '2.0', id: request.id, result }, accept, { [MCP_HEADERS.sessionId]: session.id });
}

function idOf(message: ClientMessage): string | number | null {
  return message.kind === 'notification' ? null : (message.message.id ?? null);
}
