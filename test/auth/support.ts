import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type CryptoKey, exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import type { GatewayLogger } from '../../lambda/observability/logger';
import { forwardTo, listen } from '../support/loopback';

/**
 * Loopback stand-ins for the parties around the gateway: an OpenID issuer with keys made here, an
 * OAuth token endpoint, and a recording proxy in front of a target (what the target really receives).
 */

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: Record<string, unknown>;
}

async function makeKey(kid: string): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

export interface TestIssuer {
  issuer: string;
  discoveryUrl: string;
  /** JWKS requests served. */
  jwksRequests(): number;
  /** Publishes a new key (the old ones stay) and returns its kid; `sign` then uses it by default. */
  rotate(): Promise<string>;
  /** A signed access token: `sub`, `aud`, `client_id`, `scope`, 5-minute expiry unless overridden. */
  sign(
    claims?: JWTPayload,
    options?: { kid?: string; key?: 'foreign'; expiresIn?: string | number; omit?: string[] },
  ): Promise<string>;
  /** Makes discovery and JWKS answer 500 (an unreachable issuer). */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

export const AUDIENCE = 'https://gateway.example/mcp';
export const CLIENT = 'agent-client';

export async function startIssuer(): Promise<TestIssuer> {
  const keys: SigningKey[] = [await makeKey('key-1')];
  const foreign = await makeKey('key-1'); // same kid, a key the issuer never published: a forged signature
  let jwksRequests = 0;
  let down = false;
  const server = createServer((req, res) => {
    if (down) return json(res, 500, { error: 'down' });
    if (req.url === '/.well-known/openid-configuration') {
      return json(res, 200, {
        issuer: started.base,
        jwks_uri: `${started.base}/jwks`,
        authorization_endpoint: `${started.base}/authorize`,
        token_endpoint: `${started.base}/token`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['ES256'],
        code_challenge_methods_supported: ['S256'],
      });
    }
    if (req.url === '/jwks') {
      jwksRequests++;
      return json(res, 200, { keys: keys.map((key) => key.publicJwk) });
    }
    json(res, 404, {});
  });
  const started = await listen(server);
  return {
    issuer: started.base,
    discoveryUrl: `${started.base}/.well-known/openid-configuration`,
    jwksRequests: () => jwksRequests,
    rotate: async () => {
      const key = await makeKey(`key-${keys.length + 1}`);
      keys.push(key);
      return key.kid;
    },
    sign: async (claims = {}, options = {}) => {
      const key =
        options.key === 'foreign' ? foreign : (keys.find((k) => k.kid === options.kid) ?? keys[keys.length - 1]);
      const payload: JWTPayload = {
        sub: 'alice',
        aud: AUDIENCE,
        client_id: CLIENT,
        scope: 'mcp:tools openid',
        ...claims,
      };
      for (const claim of options.omit ?? []) delete payload[claim];
      const jwt = new SignJWT({ iss: started.base, ...payload })
        .setProtectedHeader({ alg: 'ES256', kid: options.kid ?? key.kid, typ: 'at+jwt' })
        .setIssuedAt();
      if (!options.omit?.includes('exp')) jwt.setExpirationTime(options.expiresIn ?? '5m');
      return jwt.sign(key.privateKey);
    },
    setDown: (value) => {
      down = value;
    },
    close: started.close,
  };
}

export interface TokenEndpoint {
  tokenUrl: string;
  /** Token requests answered (successful or not). */
  requests(): number;
  /** Every token issued, in order. */
  issued: string[];
  /** Tokens still valid (a target behind `startRecordingProxy` checks against this). */
  isValid(token: string): boolean;
  /** Revokes a token early (the target then answers 401). */
  revoke(token: string): void;
  /** The lifetime (`expires_in`, seconds) of the tokens issued from now on. */
  issueFor(seconds: number): void;
  /** What the last token request carried (form fields, and the client id from Basic auth). */
  lastRequest?: { form: Record<string, string>; basicClientId?: string };
  close(): Promise<void>;
}

/** An OAuth 2.0 token endpoint for the client-credentials grant (client_secret_basic or _post). */
export async function startTokenEndpoint(options: {
  clientId: string;
  clientSecret: string;
  expiresIn: number;
}): Promise<TokenEndpoint> {
  let requests = 0;
  let lifetime = options.expiresIn;
  const expiry = new Map<string, number>();
  const state: TokenEndpoint = {
    tokenUrl: '',
    requests: () => requests,
    issued: [],
    isValid: (token) => (expiry.get(token) ?? 0) > Date.now(),
    revoke: (token) => void expiry.set(token, 0),
    issueFor: (seconds) => {
      lifetime = seconds;
    },
    close: async () => undefined,
  };
  const server = createServer((req, res) => {
    void (async () => {
      requests++;
      const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
      let id = form.client_id;
      let secret = form.client_secret;
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
      if (basic) {
        const [user, pass] = Buffer.from(basic[1], 'base64').toString('utf8').split(':');
        id = decodeURIComponent(user.replace(/\+/g, ' '));
        secret = decodeURIComponent(pass.replace(/\+/g, ' '));
      }
      state.lastRequest = { form, basicClientId: basic ? id : undefined };
      if (form.grant_type !== 'client_credentials') return json(res, 400, { error: 'unsupported_grant_type' });
      if (id !== options.clientId || secret !== options.clientSecret)
        return json(res, 401, { error: 'invalid_client' });
      const token = `tok-${state.issued.length + 1}-${Math.random().toString(36).slice(2)}`;
      state.issued.push(token);
      expiry.set(token, Date.now() + lifetime * 1000);
      json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: lifetime, scope: form.scope });
    })();
  });
  const started = await listen(server);
  state.tokenUrl = `${started.base}/oauth2/token`;
  state.close = started.close;
  return state;
}

export interface RecordingProxy {
  /** http://127.0.0.1:PORT/mcp: point a target configuration here. */
  url: string;
  /** Request headers of every request the target received, in order. */
  seen: Array<Record<string, string | string[] | undefined>>;
  close(): Promise<void>;
}

/**
 * Forwards to `targetUrl` and records what arrives. With `requireToken`, a request whose
 * `Authorization: Bearer` token is not accepted gets 401 (a target protected by OAuth).
 */
export async function startRecordingProxy(
  targetUrl: string,
  options: { requireToken?: (token: string) => boolean } = {},
): Promise<RecordingProxy> {
  const upstream = new URL(targetUrl);
  const seen: RecordingProxy['seen'] = [];
  const server = createServer((req, res) => {
    seen.push({ ...req.headers });
    if (options.requireToken) {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!token || !options.requireToken(token)) {
        req.resume();
        return json(res, 401, { error: 'invalid_token' });
      }
    }
    const forward = forwardTo(upstream, req, res);
    req.pipe(forward);
  });
  const started = await listen(server);
  return { url: `${started.base}/mcp`, seen, close: started.close };
}

/** A logger that keeps every line (as JSON) so tests can assert what was never written. */
export function capturingLogger(): GatewayLogger & { lines: string[]; text(): string } {
  const lines: string[] = [];
  const keep =
    (level: string) =>
    (message: unknown, ...extra: unknown[]) => {
      lines.push(
        JSON.stringify({ level, message, extra }, (_key, value) =>
          value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value,
        ),
      );
    };
  return {
    lines,
    text: () => lines.join('\n'),
    debug: keep('DEBUG'),
    info: keep('INFO'),
    warn: keep('WARN'),
    error: keep('ERROR'),
  } as GatewayLogger & { lines: string[]; text(): string };
}
