import { randomBytes } from 'node:crypto';
import type { InboundAuth } from '../auth/types';
import { methodNotAllowed, refuse } from '../http/errors';
import type { ExchangeContext, ExchangeRequest } from '../http/exchange';
import { jsonResponse, readBodyLimited } from '../http/responses';
import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';
import { recordConnectionEvent } from '../observability/metrics';
import type { ConnectionTable } from '../state/connection-table';
import { AuthorizationServerError, sameIssuer } from './authorization-server';
import {
  type BindingCookie,
  bindingCookieFor,
  bindingDigest,
  bindingOf,
  newBinding,
  sameBrowser,
  setBindingCookie,
} from './browser-binding';
import type { ConsentLink, FlowState, LinkRefusal } from './consent-links';
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
 *   whose subject must be the link's principal, from the browser that was sent to sign in): the link's
 *   one-time value is spent, and the browser goes to the target's authorization server with a sealed
 *   `state` bound to that browser (./browser-binding.ts) and to that authorization server.
 * - `GET /connect/callback/<target>` (each target its own redirect URI): the state opens (sealed,
 *   unexpired, for this target), the browser is the one the state was sealed to, its one-time value is
 *   spent again (a replayed callback is refused), the answer is from the issuer the browser was sent to
 *   (RFC 9207 `iss`: required where the server advertises it, compared whenever present), the code is
 *   exchanged at that issuer only and the tokens stored under the state's principal. Nothing is stored
 *   when any step fails.
 * - `GET /connect/client/<target>.json`: the target's Client ID Metadata Document (https public URL only).
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
    pathname.startsWith(`${CALLBACK_PATH}/`) ||
    pathname === IDENTITY_PATH ||
    pathname === CONNECTIONS_PATH ||
    pathname.startsWith(`${CLIENT_METADATA_PATH}/`) ||
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

  // The person holds a link their client showed them: say what gets them a working one.
  const linkRefusal = (verdict: LinkRefusal) => {
    const again = 'Call the tool again from your MCP client to get a new link.';
    if (verdict === 'expired') return failed(410, 'This link has expired', again, 'expired');
    if (verdict === 'unknown-key') {
      return failed(
        400,
        'This link is not valid',
        `It was made with a key this gateway no longer holds: the gateway was restarted or its keys were changed since, or another gateway made it. ${again}`,
        'link sealed with an unknown key',
      );
    }
    return failed(
      400,
      'This link is not valid',
      `This gateway cannot read it: part of it is missing or changed (a long link can be cut when it is copied). Open the whole link your MCP client showed you, or ${again.charAt(0).toLowerCase()}${again.slice(1)}`,
      'invalid link',
    );
  };

  /** A link's one-time value, spent at one step (false: already spent there); kept a minute past the link. */
  const spend = (step: 'depart' | 'callback', link: ConsentLink) =>
    options.table.useOnce(`${step}:${link.nonce}`, Math.ceil(link.expiresAt / 1000) + 60);

  /**
   * The browser's binding at this gateway's public origin: the one it holds, else a new one. Undefined
   * where none can be kept (plain http off loopback): no consent there.
   */
  const binding = (request: ExchangeRequest, origin: string): { cookie: BindingCookie; value: string } | undefined => {
    const cookie = bindingCookieFor(new URL(connections.urlOf('/', origin)));
    if (!cookie) return undefined;
    return { cookie, value: bindingOf(request.headers.get('cookie'), cookie) ?? newBinding() };
  };

  const noBinding = (target: string) =>
    failed(
      400,
      'This gateway needs https for sign-in',
      'A consent is accepted only over https (or on this machine). Ask the operator to serve the gateway over https.',
      'no browser binding (plain http)',
      target,
    );

  /** The browser's binding cookie, (re)set for as long as the link lives. */
  const bindingHeader = (bound: { cookie: BindingCookie; value: string }) =>
    setBindingCookie(bound.cookie, bound.value, links.ttlMs / 1000 + 60);

  /** Spends the link's one-time value and sends the browser, bound to it, to the authorization server. */
  const depart = async (
    link: ConsentLink,
    origin: string,
    bound: { cookie: BindingCookie; value: string },
  ): Promise<Response> => {
    // Where to send the browser first: a link is spent only by a departure, so after "try again
    // later" (its authorization server unreachable) the same link still works.
    let location: string;
    try {
      location = await connections.authorizationUrl(link, bindingDigest(bound.value), origin);
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
    return redirect(location, bindingHeader(bound));
  };

  const start = async (request: ExchangeRequest, url: URL): Promise<Response> => {
    if (request.method === 'GET') {
      const link = links.open(url.searchParams.get('link'));
      if (typeof link === 'string') return linkRefusal(link);
      if (options.identity) {
        const bound = binding(request, url.origin);
        if (!bound) return noBinding(link.target);
        const oidcNonce = randomBytes(16).toString('base64url');
        const redirectUri = connections.urlOf(IDENTITY_PATH, url.origin);
        try {
          // The verifier must ride in the state, which needs the URL's verifier: seal after.
          const pending = await options.identity.loginUrl(redirectUri, 'pending', oidcNonce);
          const login = new URL(pending.url);
          login.searchParams.set(
            'state',
            links.sealIdentity({
              ...link,
              codeVerifier: pending.codeVerifier,
              oidcNonce,
              browser: bindingDigest(bound.value),
            }),
          );
          return redirect(login.toString(), bindingHeader(bound));
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
      // A page of another site may not confirm for the person: it would send their browser, bound, to
      // consent under a link of its choosing (a browser sends Origin with every cross-site form POST).
      if (!fromOwnPage(request.headers.get('origin'), url))
        return failed(
          403,
          'Not confirmed',
          'The confirmation came from another site. Nothing was connected.',
          'cross-site confirmation',
        );
      const body = await readBodyLimited(request, MAX_FORM_BYTES);
      const form = new URLSearchParams(body ?? '');
      if (form.get('confirm') !== 'yes') return failed(400, 'Not confirmed', 'Nothing was connected.', 'not confirmed');
      const link = links.open(form.get('link'));
      if (typeof link === 'string') return linkRefusal(link);
      const bound = binding(request, url.origin);
      if (!bound) return noBinding(link.target);
      return depart(link, url.origin, bound);
    }
    return methodNotAllowed('GET, POST');
  };

  /** The form was posted by the gateway's own page: its public origin, or this instance's own (behind a front). */
  const fromOwnPage = (origin: string | null, url: URL): boolean =>
    origin === null || origin === url.origin || origin === new URL(connections.urlOf('/', url.origin)).origin;

  /** A callback in a browser the flow was not started in: someone else's consent, forwarded (login CSRF). */
  const otherBrowser = (target: string) =>
    failed(
      403,
      'This sign-in did not start in this browser',
      `To connect ${target}, call the tool again from your own MCP client and open the link it shows in this browser. Nothing was stored.`,
      'another browser',
      target,
    );

  const identityCallback = async (request: ExchangeRequest, url: URL): Promise<Response> => {
    const state = links.openIdentity(url.searchParams.get('state'));
    if (typeof state === 'string') return linkRefusal(state);
    const bound = binding(request, url.origin);
    if (!bound || !sameBrowser(bindingOf(request.headers.get('cookie'), bound.cookie), state.browser))
      return otherBrowser(state.target);
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
    // The principal just proved and this browser travel on together: the same binding goes into the flow's state.
    const { codeVerifier: _verifier, oidcNonce: _nonce, browser: _browser, ...link } = state;
    return depart(link, url.origin, bound);
  };

  /** The authorization response came from the issuer the browser was sent to (RFC 9207; mix-up, RFC 9700 §4.4). */
  const fromItsIssuer = (state: FlowState, url: URL): boolean => {
    const iss = url.searchParams.get('iss');
    return iss === null ? !state.issRequired : sameIssuer(iss, state.issuer);
  };

  const callback = async (request: ExchangeRequest, url: URL): Promise<Response> => {
    const state = links.openFlow(url.searchParams.get('state'));
    if (typeof state === 'string') return linkRefusal(state);
    // Each target has its own redirect URI: a state that arrives at another's was sent there by someone.
    if (new URL(state.redirectUri).pathname !== url.pathname)
      return failed(
        400,
        'This link is not valid',
        "The sign-in came back to another target's address, so nothing was stored. Call the tool again from your MCP client to get a new link.",
        'callback of another target',
        state.target,
      );
    const bound = binding(request, url.origin);
    if (!bound || !sameBrowser(bindingOf(request.headers.get('cookie'), bound.cookie), state.browser))
      return otherBrowser(state.target);
    const first = await spend('callback', state);
    if (!first)
      return failed(
        409,
        'Already done',
        'This sign-in was already completed or refused. Nothing more was stored.',
        'callback replayed',
        state.target,
      );
    if (!fromItsIssuer(state, url))
      return failed(
        400,
        `${state.target} was not connected`,
        `This answer did not come from the authorization server ${state.target} sent you to. Nothing was stored; call the tool again for a new link.`,
        'issuer mismatch',
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

  /** `/connections`: a principal's own list (never cached anywhere: it names who is connected where). */
  const manage = async (request: ExchangeRequest, exchange: ExchangeContext, url: URL): Promise<Response> =>
    noStore(await managed(request, exchange, url));

  const managed = async (request: ExchangeRequest, exchange: ExchangeContext, url: URL): Promise<Response> => {
    const auth = await options.auth.authenticate(request, exchange);
    if (!auth.ok) return auth.response;
    if (url.pathname === CONNECTIONS_PATH) {
      if (request.method !== 'GET') return methodNotAllowed('GET');
      return jsonResponse(200, {
        connections: (await connections.connected(auth.principal)).map((target) => ({ target })),
      });
    }
    const target = decodedSegment(url.pathname.slice(CONNECTIONS_PATH.length + 1));
    if (target === undefined)
      return refuse('InvalidRequest', 'Bad request: the target name is not valid percent-encoding');
    if (!connections.has(target)) return refuse('NotFound', `Not found: ${target} is not a per-user OAuth target`);
    if (request.method !== 'DELETE') return methodNotAllowed('DELETE');
    const removed = await connections.disconnect(auth.principal, target, url.origin);
    logger.info('connection removed by its user', { target, removed });
    return removed ? new Response(null, { status: 204 }) : refuse('NotFound', `Not found: no connection at ${target}`);
  };

  const clientDocument = (url: URL): Response => {
    const name = /^([A-Za-z0-9-]{1,64})\.json$/.exec(url.pathname.slice(CLIENT_METADATA_PATH.length + 1))?.[1];
    const document = name ? connections.clientMetadata(name) : undefined;
    if (!document)
      return refuse(
        'NotFound',
        'Not found: no such client metadata document (one per per-user target, https publicUrl only)',
      );
    return jsonResponse(200, document, { 'cache-control': 'public, max-age=3600' });
  };

  return async (request: ExchangeRequest, exchange: ExchangeContext, url: URL): Promise<Response> => {
    if (url.pathname === CONNECT_PATH) return start(request, url);
    if (url.pathname === IDENTITY_PATH)
      return request.method === 'GET' ? identityCallback(request, url) : methodNotAllowed('GET');
    if (url.pathname.startsWith(`${CALLBACK_PATH}/`))
      return request.method === 'GET' ? callback(request, url) : methodNotAllowed('GET');
    if (url.pathname.startsWith(`${CLIENT_METADATA_PATH}/`))
      return request.method === 'GET' ? clientDocument(url) : methodNotAllowed('GET');
    if (url.pathname === CALLBACK_PATH)
      return refusedPage(400, 'This link is not valid', 'Call the tool again from your MCP client for a new link.');
    return manage(request, exchange, url);
  };
}

function redirect(location: string, setCookie: string): Response {
  return new Response(null, {
    status: 303,
    headers: { location, 'set-cookie': setCookie, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
  });
}

function noStore(response: Response): Response {
  response.headers.set('cache-control', 'no-store');
  return response;
}

/** A path segment percent-decoded; undefined when it is not valid percent-encoding (`%E0%A4%A`). */
function decodedSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
