import { createServer } from 'node:http';
import {
  discoverAuthorizationServerMetadata,
  exchangeAuthorization,
  registerClient,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type { Browser } from 'playwright-core';
import { listen } from '../loopback';
import { consentAs } from './browser';

/**
 * A person's access token for a gateway with inbound JWT auth, as their MCP client gets it: the code
 * flow at the gateway's identity provider (a public client of the provider's, PKCE), the resource
 * indicator naming the gateway's MCP endpoint, so the token is a JWT with that audience.
 */
export interface McpClientApp {
  clientId: string;
  callback: string;
  close(): Promise<void>;
}

/** Registers an MCP client app at `issuer` (RFC 7591), with a callback page of its own on loopback. */
export async function registerClientApp(issuer: string): Promise<McpClientApp> {
  const page = await listen(createServer((_req, res) => res.writeHead(200).end('signed in')));
  const callback = `${page.base}/callback`;
  const registered = await registerClient(issuer, {
    metadata: await discoverAuthorizationServerMetadata(issuer),
    clientMetadata: {
      client_name: 'an MCP client',
      redirect_uris: [callback],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
  });
  return { clientId: registered.client_id, callback, close: page.close };
}

/** `login`'s bearer header for the gateway whose MCP endpoint is `mcpUrl`, signed in through `browser`. */
export async function gatewayTokenFor(
  browser: Browser,
  issuer: string,
  app: McpClientApp,
  login: string,
  mcpUrl: string,
): Promise<{ authorization: string }> {
  const metadata = await discoverAuthorizationServerMetadata(issuer);
  const resource = new URL(mcpUrl);
  const clientInformation = { client_id: app.clientId };
  const flow = await startAuthorization(issuer, {
    metadata,
    clientInformation,
    redirectUrl: app.callback,
    scope: 'mcp:tools',
    resource,
  });
  const signedIn = new URL(await consentAs(browser, flow.authorizationUrl.href, login, app.callback));
  const tokens = await exchangeAuthorization(issuer, {
    metadata,
    clientInformation,
    authorizationCode: signedIn.searchParams.get('code')!,
    codeVerifier: flow.codeVerifier,
    redirectUri: app.callback,
    resource,
  });
  return { authorization: `Bearer ${tokens.access_token}` };
}
