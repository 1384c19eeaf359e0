import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { type GatewayUnderTest, startGateway } from '../support/gateways';
import { forwardTo, freePort } from '../support/loopback';
import { initSession, type Json } from '../support/mcp-http';
import { type AuthorizationServer, startAuthorizationServer } from '../support/oauth/authorization-server';
import { consentAs, startBrowser } from '../support/oauth/browser';
import { type ProtectedTarget, startProtectedTarget } from '../support/oauth/protected-target';
import { authorizationServerStats } from '../support/oauth/test-endpoints';
import { chromium, describeNeeding, openssl } from '../support/prerequisites';

/**
 * The gateway as a client its target's authorization server has never seen, by a Client ID Metadata
 * Document (the MCP authorization specification's preferred way): where the server says it supports
 * them (oidc-provider's `clientIdMetadataDocument`), the gateway's client id is the https URL of a
 * document it serves itself, `<publicUrl>/connect/client/<target>.json`, which the server fetches; nothing is
 * registered or kept. The public URL is an https front with a certificate made for this test, which
 * the authorization server trusts (NODE_EXTRA_CA_CERTS) and the browser is told to accept.
 */

jest.setTimeout(90_000);

const withBrowser = describeNeeding(chromium, openssl);

withBrowser('a Client ID Metadata Document as the gateway client', () => {
  let dir: string;
  let dynamo: CountedDynamo;
  let as: AuthorizationServer;
  let target: ProtectedTarget;
  let gateway: GatewayUnderTest;
  let browser: Browser;
  let publicUrl: string;
  let closeFront: () => Promise<void>;
  const fetchedDocument: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cimd-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    const port = await freePort();
    publicUrl = `https://127.0.0.1:${port}`;
    dynamo = await startCountedDynamo();
    as = await startAuthorizationServer({
      redirectUris: [],
      env: { CLIENT_ID_METADATA_DOCUMENTS: '1', NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') },
    });
    target = await startProtectedTarget(as.issuer);
    gateway = await startGateway(
      'local server',
      {
        targets: [{ name: 'mine', url: target.url, userOAuth: {} }],
        outbound: { allowedOrigins: [as.issuer] },
        connections: { publicUrl },
        logLevel: 'SILENT',
      },
      dynamo.endpoint,
    );
    const front = createServer(
      { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
      (req, res) => {
        const path = req.url ?? '/';
        if (path.startsWith('/connect/client/mine.json')) fetchedDocument.push(String(req.headers['user-agent'] ?? ''));
        if (req.headers.origin === publicUrl) req.headers.origin = new URL(gateway.url).origin;
        req.pipe(forwardTo(new URL(path, gateway.url), req, res));
      },
    );
    await new Promise<void>((resolve) => front.listen(port, '127.0.0.1', () => resolve()));
    closeFront = () =>
      new Promise<void>((resolve) => {
        front.close(() => resolve());
        front.closeAllConnections();
      });
    browser = await startBrowser({ trustAnyCertificate: true });
  });
  afterAll(async () => {
    await browser?.close();
    await closeFront?.();
    await gateway?.close();
    await target?.close();
    await as?.close();
    await dynamo?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves its document, is known to the authorization server by it, and the user connects', async () => {
    const document = (await (
      await fetch(`${gateway.url.replace(/\/mcp$/, '')}/connect/client/mine.json`)
    ).json()) as Json;
    expect(document).toEqual({
      client_id: `${publicUrl}/connect/client/mine.json`,
      client_name: 'MCP gateway (mine)',
      // Only this target's own callback: a code for another target's consent cannot be sent here.
      redirect_uris: [`${publicUrl}/connect/callback/mine`],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });

    // A 2025 request without a stream gets the link as -32042; the retry after the sign-in succeeds.
    const { headers } = await initSession(gateway.url, { capabilities: { elicitation: { url: {} } } });
    const call = async (id: number) => {
      const res = await fetch(gateway.url, {
        method: 'POST',
        headers: { ...headers, accept: 'application/json', 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
      });
      return (await res.json()) as Json;
    };
    const first = await call(1);
    expect(first.error.code).toBe(-32042);
    const url: string = first.error.data.elicitations[0].url;
    expect(url.startsWith(`${publicUrl}/connect?link=`)).toBe(true);
    await consentAs(browser, url, 'dana', `${publicUrl}/connect/callback`);
    expect((await call(2)).result.content).toEqual([{ type: 'text', text: 'dana' }]);

    expect(fetchedDocument.length).toBeGreaterThan(0); // the authorization server read the document
    expect((await authorizationServerStats(as.issuer)).registrations).toEqual([]); // nothing registered
  });
});
