import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Browser } from 'playwright-core';
import { type AuthorizationServer, startAuthorizationServer } from '../support/oauth/authorization-server';
import { consentAs, startBrowser } from '../support/oauth/browser';
import { type ProtectedTarget, startProtectedTarget } from '../support/oauth/protected-target';
import { chromium, describeNeeding } from '../support/prerequisites';

/**
 * The per-user OAuth test parts, proven directly before a gateway stands between them: a real
 * authorization server (oidc-provider, dev/oauth-demo/serve-authorization-server.ts), an official-SDK
 * MCP server protected by it (bearer JWTs for its resource, protected-resource metadata, 401 with
 * `WWW-Authenticate`), and a person consenting in headless Chromium. The official v1 client's own
 * OAuth support finds the authorization server from the 401, sends the person to consent (PKCE S256,
 * the resource indicator naming the server), exchanges the code, and calls the tool as that person.
 */

jest.setTimeout(60_000);

// In CI the browser is installed (.ci/run): a missing one fails there rather than skipping.
const withBrowser = describeNeeding(chromium);

withBrowser('the per-user OAuth parts, directly', () => {
  let callback: { url: string; close(): Promise<void> };
  let as: AuthorizationServer;
  let target: ProtectedTarget;
  let browser: Browser;

  beforeAll(async () => {
    // Where the browser lands after consent: the client reads the code from this URL.
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('done'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    callback = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
      close: () => new Promise((resolve) => server.close(() => resolve())),
    };
    as = await startAuthorizationServer({ redirectUris: [callback.url] });
    target = await startProtectedTarget(as.issuer);
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await target?.close();
    await as?.close();
    await callback?.close();
  });

  /** The client's OAuth state, with the pre-registered client; `redirectToAuthorization` records the URL. */
  function clientProvider(): OAuthClientProvider & { authorizationUrl?: URL; tokensSaved?: OAuthTokens } {
    let verifier = '';
    const provider: OAuthClientProvider & { authorizationUrl?: URL; tokensSaved?: OAuthTokens } = {
      get redirectUrl() {
        return callback.url;
      },
      get clientMetadata(): OAuthClientMetadata {
        return { redirect_uris: [callback.url], client_name: 'per-user oauth test' };
      },
      clientInformation: (): OAuthClientInformationMixed => ({
        client_id: as.clientId,
        client_secret: as.clientSecret,
      }),
      tokens: () => provider.tokensSaved,
      saveTokens: (tokens) => {
        provider.tokensSaved = tokens;
      },
      redirectToAuthorization: (url) => {
        provider.authorizationUrl = url;
      },
      saveCodeVerifier: (v) => {
        verifier = v;
      },
      codeVerifier: () => verifier,
    };
    return provider;
  }

  it('the official v1 client is refused, sends the person to consent in the browser, and then calls the tool as that person', async () => {
    const provider = clientProvider();
    const transport = new StreamableHTTPClientTransport(new URL(target.url), { authProvider: provider });
    const client = new Client({ name: 'oauth-direct', version: '1.0.0' });
    await expect(client.connect(transport)).rejects.toThrow(/Unauthorized/);
    const authorizationUrl = provider.authorizationUrl!;
    expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorizationUrl.searchParams.get('resource')).toBe(target.url);

    const landed = new URL(await consentAs(browser, authorizationUrl.href, 'ada', callback.url));
    await transport.finishAuth(landed.searchParams.get('code')!);
    expect(provider.tokensSaved?.refresh_token).toBeDefined();

    const again = new Client({ name: 'oauth-direct', version: '1.0.0' });
    await again.connect(new StreamableHTTPClientTransport(new URL(target.url), { authProvider: provider }));
    const result = await again.callTool({ name: 'whoami', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'ada' }]);
    await again.close();
    expect(target.stats().subjects.every((sub) => sub === 'ada')).toBe(true);
  });
});
