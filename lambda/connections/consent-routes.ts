import { randomBytes } from 'node:crypto';
import type { InboundAuth } from '../auth/types';
import { methodNotAllowed, refuse } from '../http/errors';
import type { ExchangeContext, ExchangeRequest } from '../http/exchange';
import { jsonResponse, readBodyLimited } from '../http/responses';
import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { recordConnectionEvent } from '../observability/metrics';
import type { ConnectionTable } from '../state/connection-table';
import { AuthorizationServerError } from './authorization-server';
import type { ConsentLink } from './consent-links';
import { confirmationPage, connectedPage, refusedPage } from './consent-pages';
import type { IdentityLogin } from './identity-login';
import {
  CALLBACK_PATH,
  CLIENT_METADATA_PATH,
  CONNECT_PATH,
  CONNECTIONS_PATH,
  IDENTITY_PATH,
  type UserConnections,
} from './user-connections';

/**
 * The browser's side of a per-user connection, and the user's own management of theirs:
 *
 * - `GET /connect?link=…`: the consent link a client showed (URL elicitation). Opening it spends
 *   nothing (clients must not prefetch, but mail scanners do). With inbound JWT auth the browser is
 *   sent to sign in at that identity provider first (./identity-login.ts); otherwise it gets a page
 *   naming the target and the principal, and must confirm (POST).
 * - `POST /connect` (the confirmation) and `GET /connect/identity` (the identity provider's callback,
 *   whose subject must be the link's principal): the link's one-time value is spent, and the browser
 *   goes to the target's authorization server with a sealed `state`.
 * - `GET /connect/callback`: the state opens (sealed, unexpired), its one-time value is spent again
 *   (a replayed callback is refused), the code is exchanged and the tokens stored under the state's
 *   principal — never under whoever's browser it is. Nothing is stored when any step fails.
 * - `GET /connections` and `DELETE /connections/<target>` (inbound auth, like the MCP endpoint): the
 *   principal's connected targets, and removing one (revoked at the authorization server too, RFC 7009,
 *   where it offers revocation).
 */

export interface ConsentRoutesOptions {
  connections: UserConnections;
  table: Pick<ConnectionTable, 'useOnce'>;
  auth: InboundAuth;
  /** With inbound JWT auth: the sign-in that proves the principal. */
  identity?: IdentityLogin;
  logger: GatewayLogger;
  /** A connection was stored for this link (the 2025 session gets `notifications/elicitation/complete`). */
  onConnected?(link: ConsentLink): Promise<void>;
}

/** The consent pages' form bodies are one sealed link: a few kilobytes at most. */
const MAX_FORM_BYTES = 16 * 1024;

export function isConnectionsPath(pathname: string): boolean {
  return (
    pathname === CONNECT_PATH ||
    pathname === CALLBACK_PATH ||
    pathname === IDENTITY_PATH ||
    pathname === CONNECTIONS_PATH ||
    pathname === CLIENT_METADATA_PATH ||
    pathname.startsWith(`${CONNECTIONS_PATH}/`)
  );
}

export type ConsentRoutes = (request: ExchangeRequest, exchange: ExchangeContext, url: URL) => Promise<Response>;

export function createConsentRoutes(options: ConsentRoutesOptions): ConsentRoutes {
  const { connections, logger } = options;
  const links = connections.links;

  const failed = (status: number, title: string, explanation: string, reason: string, target?: string) => {
    recordConnectionEvent('consentFailed');
    logger.info('consent refused', { reason, target });
    return refusedPage(status, title, explanation);
  };

  const linkRefusal = (verdict: 'invalid' | 'expired') =>
    verdict === 'expired'
      ? failed(410, 'This link has expired', 'Call the tool again from your MCP client to get a new link.', 'expired')
      : failed(400, 'This link is not valid', 'Use the link your MCP client showed you, unchanged.', 'invalid link');

  /** A link's one-time value, spent at one step (false: already spent there); kept a minute past the link. */
  const spend = (step: 'depart' | 'callback', link: ConsentLink) =>
    options.table.useOnce(`${step}:${link.nonce}`, Math.ceil(link.expiresAt / 1000) + 60);

  /** Spends the link's one-time value and sends the browser to the authorization server. */
  const depart = async (link: ConsentLink, origin: string): Promise<Response> => {
    // Where to send the browser first: a link is spent only by a departure, so after "try again
    // later" (its authorization server unreachable) the same link still works.
    let location: string;
    try {
      location = await connections.authorizationUrl(link, origin);
    } catch (error) {
      logger.warn('authorization server unavailable for a consent', {
        target: link.target,
        error: describeError(error),
      });
      return failed(
        502,
        `${link.target} cannot be connected right now`,
        'Its authorization server could not be reached or refused the gateway. Try again later; nothing was stored.',
        'authorization server',
        link.target,
      );
    }
    const first = await spend('depart', link);
    if (!first) {
      return failed(
        409,
        'This link was already used',
        'Call the tool again from your MCP client to get a new link.',
        'link reused',
        link.target,
      );
    }
    return redirect(location);
  };

  const start = async (request: ExchangeRequest, url: URL): Promise<Response> => {
    if (request.method === 'GET') {
      const link = links.open(url.searchParams.get('link'));
      if (typeof link === 'string') return linkRefusal(link);
      if (options.identity) {
        const oidcNonce = randomBytes(16).toString('base64url');
        const redirectUri = connections.urlOf(IDENTITY_PATH, url.origin);
        try {
          // The verifier must ride in the state, which needs the URL's verifier: seal after.
          const pending = await options.identity.loginUrl(redirectUri, 'pending', oidcNonce);
          const login = new URL(pending.url);
          login.searchParams.set(
            'state',
            links.sealIdentity({ ...link, codeVerifier: pending.codeVerifier, oidcNonce }),
          );
          return redirect(login.toString());
        } catch (error) {
          logger.warn('identity provider unavailable for a consent', { error: describeError(error) });
          return failed(
            502,
            'Sign-in is not available right now',
            'The identity provider could not be reached. Try again later.',
            'identity provider',
            link.target,
          );
        }
      }
      const server = await connections
        .server(link.target)
        ?.server()
        .then((info) => new URL(info.issuer).host)
        .catch(() => 'its authorization server');
      return confirmationPage({
        target: link.target,
        principal: link.principal,
        link: url.searchParams.get('link') ?? '',
        server: server ?? link.target,
      });
    }
    if (request.method === 'POST') {
      // Only the confirmation page posts here, and only without an identity provider to prove the principal.
      if (options.identity) return methodNotAllowed('GET');
      const body = await readBodyLimited(request, MAX_FORM_BYTES);
      const form = new URLSearchParams(body ?? '');
      if (form.get('confirm') !== 'yes') return failed(400, 'Not confirmed', 'Nothing was connected.', 'not confirmed');
      const link = links.open(form.get('link'));
      if (typeof link === 'string') return linkRefusal(link);
      return depart(link, url.origin);
    }
    return methodNotAllowed('GET, POST');
  };

  const identityCallback = async (url: URL): Promise<Response> => {
    const state = links.openIdentity(url.searchParams.get('state'));
    if (typeof state === 'string') return linkRefusal(state);
    const code = url.searchParams.get('code');
    if (!code || !options.identity)
      return failed(400, 'Sign-in did not complete', 'Nothing was connected.', 'identity: no code', state.target);
    let principal: string;
    try {
      const redirectUri = connections.urlOf(IDENTITY_PATH, url.origin);
      principal = await options.identity.principalOf(code, state.codeVerifier, redirectUri, state.oidcNonce);
    } catch (error) {
      logger.warn('identity sign-in failed', { error: describeError(error) });
      return failed(
        502,
        'Sign-in did not complete',
        'The identity provider refused or could not be reached. Nothing was connected.',
        'identity',
        state.target,
      );
    }
    if (principal !== state.principal) {
      return failed(
        403,
        'This link is not yours',
        'You signed in as someone other than the user this link was made for. Nothing was connected; use a link from your own MCP client.',
        'principal mismatch',
        state.target,
      );
    }
    const { codeVerifier: _verifier, oidcNonce: _nonce, ...link } = state;
    return depart(link, url.origin);
  };

  const callback = async (url: URL): Promise<Response> => {
    const state = links.openFlow(url.searchParams.get('state'));
    if (typeof state === 'string') return linkRefusal(state);
    const first = await spend('callback', state);
    if (!first)
      return failed(
        409,
        'Already done',
        'This sign-in was already completed or refused. Nothing more was stored.',
        'callback replayed',
        state.target,
      );
    const error = url.searchParams.get('error');
    const code = url.searchParams.get('code');
    if (error || !code) {
      const reason = error && /^[\x20-\x7e]{1,64}$/.test(error) ? error : 'no code';
      return failed(
        400,
        `${state.target} was not connected`,
        `The authorization server answered: ${reason}. Nothing was stored.`,
        `authorization server: ${reason}`,
        state.target,
      );
    }
    try {
      await connections.complete(state, code);
    } catch (caught) {
      logger.warn('code exchange failed', { target: state.target, error: describeError(caught) });
      const detail =
        caught instanceof AuthorizationServerError ? caught.message : 'the authorization server could not be reached';
      return failed(
        502,
        `${state.target} was not connected`,
        `${detail}. Nothing was stored; call the tool again for a new link.`,
        'exchange',
        state.target,
      );
    }
    recordConnectionEvent('consentCompleted');
    logger.info('connection stored', { target: state.target, elicitationId: state.elicitationId });
    await options
      .onConnected?.(state)
      .catch((caught: unknown) =>
        logger.warn('elicitation completion not delivered', { error: describeError(caught) }),
      );
    return connectedPage(state.target);
  };

  const manage = async (request: ExchangeRequest, exchange: ExchangeContext, url: URL): Promise<Response> => {
    const auth = await options.auth.authenticate(request, exchange);
    if (!auth.ok) return auth.response;
    if (url.pathname === CONNECTIONS_PATH) {
      if (request.method !== 'GET') return methodNotAllowed('GET');
      return jsonResponse(200, {
        connections: (await connections.connected(auth.principal)).map((target) => ({ target })),
      });
    }
    const target = decodeURIComponent(url.pathname.slice(CONNECTIONS_PATH.length + 1));
    if (!connections.has(target)) return refuse('NotFound', `Not found: ${target} is not a per-user OAuth target`);
    if (request.method !== 'DELETE') return methodNotAllowed('DELETE');
    const removed = await connections.disconnect(auth.principal, target, url.origin);
    logger.info('connection removed by its user', { target, removed });
    return removed ? new Response(null, { status: 204 }) : refuse('NotFound', `Not found: no connection at ${target}`);
  };

  return async (request: ExchangeRequest, exchange: ExchangeContext, url: URL): Promise<Response> => {
    switch (url.pathname) {
      case CONNECT_PATH:
        return start(request, url);
      case IDENTITY_PATH:
        return request.method === 'GET' ? identityCallback(url) : methodNotAllowed('GET');
      case CALLBACK_PATH:
        return request.method === 'GET' ? callback(url) : methodNotAllowed('GET');
      case CLIENT_METADATA_PATH: {
        const document = connections.clientMetadata();
        if (!document) return refuse('NotFound', 'Not found: no client metadata document without an https publicUrl');
        return jsonResponse(200, document, { 'cache-control': 'public, max-age=3600' });
      }
      default:
        return manage(request, exchange, url);
    }
  };
}

function redirect(location: string): Response {
  return new Response(null, {
    status: 303,
    headers: { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
  });
}
