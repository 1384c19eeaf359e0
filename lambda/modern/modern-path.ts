import { errorResponse, refuse } from '../http/errors';
import { accepted } from '../http/responses';
import { capabilitiesForModernTarget } from '../protocol/capabilities';
import type { Caller } from '../targets/target-link';
import type { ModernDeps } from './deps';
import { asGatewayError, logFailure } from './failures';
import { RequestScope } from './request-scope';
import { MODERN_ROUTES, type ModernInput } from './routes';
import { type ModernRequest, validateModernRequest } from './validate';

export type { ModernInput } from './routes';

/**
 * A POST on the 2026-07-28 path. The session store is not passed in: every request carries what the
 * gateway needs, and the cross-request state is the sealed requestState the client holds. The one
 * exception is a call bridged to a 2025-only target that asks for input, whose rounds live in
 * `deps.bridgeStore` (./bridge.ts).
 */
export async function handleModernPost(input: ModernInput): Promise<Response> {
  const { deps, message } = input;
  if (message.kind === 'response') {
    return refuse('InvalidRequest', 'Invalid Request: clients do not send responses in protocol 2026-07-28', {
      id: message.message.id ?? null,
    });
  }
  if (message.kind === 'notification') {
    // The core protocol defines no client notifications over HTTP for 2026-07-28: accepted, nothing to do.
    return accepted();
  }
  const validation = validateModernRequest(message.message, input.headers, deps.config.supportedVersions);
  if (!validation.ok) {
    deps.logger.debug('stateless request refused', { method: message.message.method, kind: validation.error.kind });
    return errorResponse(message.message.id, validation.error);
  }
  const request = validation.request;
  const started = deps.clock.now();
  // Everything ends at the deadline or when the client goes away; a relayed call may stop following the client.
  const scope = new RequestScope(input.exchange, deps.clock);
  let handedOver = false;
  const caller: Caller = {
    identity: input.identity,
    era: 'modern',
    protocolVersion: request.protocolVersion,
    capabilities: request.clientCapabilities,
    inputCapable: true,
    logLevel: request.logLevel,
    sessions: deps.legacySessions.slotsFor(input.principal, capabilitiesForModernTarget(request.clientCapabilities)),
  };
  try {
    const route = MODERN_ROUTES.get(request.method);
    // Validation refused every method of another protocol version: this is a table that lacks one.
    if (!route) throw new Error(`no route for ${request.method}`);
    const response = await route.handler({
      input,
      request,
      route,
      caller,
      scope,
      handOver: () => {
        handedOver = true;
      },
    });
    deps.logger.debug('stateless request', { method: request.method, ms: deps.clock.now() - started });
    return response;
  } catch (error) {
    return failureResponse(deps, request, error);
  } finally {
    if (!handedOver) scope.done();
  }
}

function failureResponse(deps: ModernDeps, request: ModernRequest, error: unknown): Response {
  const failure = asGatewayError(error);
  logFailure(deps.logger, request.method, failure);
  return errorResponse(request.id, failure);
}
