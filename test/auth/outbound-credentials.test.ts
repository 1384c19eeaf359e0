import { startLocalGateway } from '../../dev/local-gateway';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import {
  ConfigError,
  type GatewayConfigInput,
  parseConfig,
  secretArnsIn,
  type TargetConfig,
} from '../../lambda/config/schema';
import { systemClock } from '../../lambda/scheduling/clock';
import { CredentialError, OutboundCredentials, type SecretValueReader } from '../../lambda/targets/credentials';
import { aheadClock, clockAt } from '../support/fake-clock';
import type { GatewayKind } from '../support/gateways';
import { callAndAnswer, eventually, initSession, type Json, post, readMessage } from '../support/mcp-http';
import { type EarlierTargets, withGateway } from '../support/with-gateway';
import {
  AUDIENCE,
  CLIENT,
  capturingLogger,
  type RecordingProxy,
  startIssuer,
  startRecordingProxy,
  startTokenEndpoint,
  type TestIssuer,
  type TokenEndpoint,
} from './support';

/**
 * Outbound credentials: static headers from the environment and Secrets Manager,
 * OAuth client credentials with the token reused until shortly before expiry, and the client's own
 * token never reaching a target.
 */

jest.setTimeout(30_000);

const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/demo-AbCdEf';
const OAUTH_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/oauth-XyZ123';
const CLIENT_SECRET = 'client-secret-value-never-logged';
/** The lifetime of the tokens that are to expire during a test. */
const TOKEN_LIFETIME_S = 2;

const target = (over: Record<string, unknown>): TargetConfig =>
  parseConfig({ targets: [{ name: 't', url: 'https://t.example/mcp', ...over }] }).targets[0];

function fakeSecrets(values: Record<string, string>): SecretValueReader & { reads: string[]; failNext: number } {
  const reader = Object.assign(
    async (arn: string) => {
      reader.reads.push(arn);
      if (reader.failNext > 0) {
        reader.failNext--;
        throw new Error('AccessDeniedException');
      }
      if (!(arn in values)) throw new Error('ResourceNotFoundException');
      return values[arn];
    },
    { reads: [] as string[], failNext: 0 },
  );
  return reader;
}

describe('credential values (no HTTP)', () => {
  test('plain, environment and secret values; each secret read once per process, even when shared', async () => {
    const secrets = fakeSecrets({ [ARN]: JSON.stringify({ apiKey: 'from-secret', other: 'x' }) });
    const outbound = new OutboundCredentials({ clock: systemClock, env: { API_TOKEN: 'from-env' }, secrets });
    const first = outbound.forTarget(
      target({
        headers: {
          'x-plain': 'plain',
          'x-env': { fromEnv: 'API_TOKEN', prefix: 'Token ' },
          'x-api-key': { secretArn: ARN, key: 'apiKey' },
          'x-whole': { secretArn: ARN },
        },
      }),
    );
    const second = outbound.forTarget(
      target({ headers: { 'x-api-key': { secretArn: ARN, key: 'apiKey', prefix: 'Key ' } } }),
    );
    expect(await first.headers()).toEqual({
      'x-plain': 'plain',
      'x-env': 'Token from-env',
      'x-api-key': 'from-secret',
      'x-whole': JSON.stringify({ apiKey: 'from-secret', other: 'x' }),
    });
    await first.headers();
    expect(await second.headers()).toEqual({ 'x-api-key': 'Key from-secret' });
    expect(secrets.reads).toEqual([ARN]);
  });

  test('a failed secret read is not remembered: the next request tries again', async () => {
    const secrets = fakeSecrets({ [ARN]: 'value' });
    secrets.failNext = 1;
    const credentials = new OutboundCredentials({ clock: systemClock, secrets }).forTarget(
      target({ headers: { 'x-api-key': { secretArn: ARN } } }),
    );
    await expect(credentials.headers()).rejects.toThrow(CredentialError);
    expect(await credentials.headers()).toEqual({ 'x-api-key': 'value' });
    expect(secrets.reads).toEqual([ARN, ARN]);
  });

  test('a JSON secret without the named key is an error that names the secret, not its value', async () => {
    const secrets = fakeSecrets({ [ARN]: '{"other":"s3cr3t"}' });
    const credentials = new OutboundCredentials({ clock: systemClock, secrets }).forTarget(
      target({ headers: { 'x-api-key': { secretArn: ARN, key: 'apiKey' } } }),
    );
    const error = await credentials.headers().catch((e: Error) => e);
    expect(error).toBeInstanceOf(CredentialError);
    expect(String(error)).toContain('no string field "apiKey"');
    expect(String(error)).not.toContain('s3cr3t');
  });

  test('a missing environment variable fails when the gateway is built, naming the field', async () => {
    const config = parseConfig({
      targets: [{ name: 'a', url: 'https://a.example/mcp', headers: { 'x-api-key': { fromEnv: 'NOT_SET_ANYWHERE' } } }],
    });
    expect(() => new OutboundCredentials({ clock: systemClock, env: {} }).forTarget(config.targets[0], 0)).toThrow(
      new ConfigError('targets[0].headers.x-api-key: environment variable NOT_SET_ANYWHERE is not set'),
    );
    await expect(startLocalGateway({ port: 0, demo: false, startupReport: false, config })).rejects.toThrow(
      /NOT_SET_ANYWHERE is not set/,
    );
  });

  test('configuration: reference shapes, secure token URLs, one source of Authorization, the secret ARNs to grant', () => {
    const oauth = { tokenUrl: 'https://idp.example/token', clientId: 'id', clientSecret: { secretArn: OAUTH_ARN } };
    expect(() => target({ headers: { 'x-a': { fromEnv: 'lower-case-ok?' } } })).toThrow(/targets\.0\.headers\.x-a/);
    expect(() => target({ headers: { 'x-a': { secretArn: 'not-an-arn' } } })).toThrow(/targets\.0\.headers\.x-a/);
    expect(() => target({ oauth: { ...oauth, clientSecret: 'inline' } })).toThrow(/targets\.0\.oauth\.clientSecret/);
    expect(() => target({ oauth: { ...oauth, tokenUrl: 'http://idp.example/token' } })).toThrow(
      /targets\.0\.oauth\.tokenUrl: must be https/,
    );
    expect(target({ oauth: { ...oauth, tokenUrl: 'http://127.0.0.1:1/token' } }).oauth!.authMethod).toBe(
      'client_secret_basic',
    );
    expect(() => target({ oauth, headers: { Authorization: 'Bearer x' } })).toThrow(
      /both set the Authorization header/,
    );
    const config = parseConfig({
      targets: [
        { name: 'a', url: 'https://a.example/mcp', headers: { 'x-api-key': { secretArn: ARN } }, oauth },
        { name: 'b', url: 'https://b.example/mcp', headers: { 'x-api-key': { secretArn: ARN, key: 'k' } } },
      ],
    });
    expect(secretArnsIn(config).sort()).toEqual([ARN, OAUTH_ARN].sort());
  });
});

describe('client credentials (no gateway)', () => {
  let endpoint: TokenEndpoint;
  beforeAll(async () => {
    endpoint = await startTokenEndpoint({ clientId: 'gw', clientSecret: CLIENT_SECRET, expiresIn: 3600 });
  });
  afterAll(async () => endpoint?.close());

  test('one token shared by concurrent requests, reused until shortly before expiry, then refreshed', async () => {
    let now = 1_000_000;
    const credentials = new OutboundCredentials({
      env: { GW_SECRET: CLIENT_SECRET },
      clock: clockAt(() => now),
    }).forTarget(
      target({
        oauth: {
          tokenUrl: endpoint.tokenUrl,
          clientId: 'gw',
          clientSecret: { fromEnv: 'GW_SECRET' },
          scopes: ['mcp:read', 'mcp:write'],
          resource: 'https://t.example/mcp',
        },
      }),
    );
    const before = endpoint.requests();
    const burst = await Promise.all(Array.from({ length: 5 }, () => credentials.headers()));
    expect(new Set(burst.map((h) => h.authorization)).size).toBe(1);
    expect(endpoint.requests()).toBe(before + 1);
    expect(endpoint.lastRequest).toEqual({
      form: { grant_type: 'client_credentials', scope: 'mcp:read mcp:write', resource: 'https://t.example/mcp' },
      basicClientId: 'gw',
    });
    const first = burst[0].authorization;
    expect(first).toBe(`Bearer ${endpoint.issued.at(-1)}`);
    now += 3540_000 - 1; // 60 s before expiry: still reused
    expect((await credentials.headers()).authorization).toBe(first);
    expect(endpoint.requests()).toBe(before + 1);
    now += 1;
    expect((await credentials.headers()).authorization).not.toBe(first);
    expect(endpoint.requests()).toBe(before + 2);
    // After the target refused the token, the next request gets a new one.
    credentials.rejected();
    await credentials.headers();
    expect(endpoint.requests()).toBe(before + 3);
  });

  test('client_secret_post, a client secret from Secrets Manager, and a refusal that names only the OAuth error', async () => {
    const secrets = fakeSecrets({ [OAUTH_ARN]: JSON.stringify({ clientSecret: CLIENT_SECRET }) });
    const logger = capturingLogger();
    const ok = new OutboundCredentials({ clock: systemClock, secrets, logger }).forTarget(
      target({
        oauth: {
          tokenUrl: endpoint.tokenUrl,
          clientId: 'gw',
          clientSecret: { secretArn: OAUTH_ARN, key: 'clientSecret' },
          authMethod: 'client_secret_post',
        },
      }),
    );
    expect((await ok.headers()).authorization).toMatch(/^Bearer tok-/);
    expect(endpoint.lastRequest!.form).toMatchObject({ client_id: 'gw', client_secret: CLIENT_SECRET });
    const refused = new OutboundCredentials({
      clock: systemClock,
      env: { WRONG: 'wrong-secret-value' },
      logger,
    }).forTarget(
      target({ oauth: { tokenUrl: endpoint.tokenUrl, clientId: 'gw', clientSecret: { fromEnv: 'WRONG' } } }),
    );
    await expect(refused.headers()).rejects.toThrow('the token endpoint answered HTTP 401 (invalid_client)');
    expect(logger.text()).not.toContain(CLIENT_SECRET);
    expect(logger.text()).not.toContain('wrong-secret-value');
    expect(logger.text()).not.toContain('tok-');
  });
});

// The function-URL handler runs in the Lambda runtime (the real one, locally); in-process alone it would add nothing.
const kinds: GatewayKind[] = ['local server', 'lambda runtime'];

describe.each(kinds)('outbound credentials through the %s', (kind) => {
  let issuer: TestIssuer;
  let endpoint: TokenEndpoint;
  let url: string;
  let clientToken: string;
  const logger = capturingLogger();
  /** How far the local server's time runs ahead of the wall clock (the Lambda runtime keeps real time). */
  let offset = 0;

  // Before the fixture's set-up: the configuration names the token endpoint and the environment.
  beforeAll(async () => {
    issuer = await startIssuer();
    endpoint = await startTokenEndpoint({
      clientId: 'gateway-client',
      clientSecret: CLIENT_SECRET,
      expiresIn: 3600,
    });
    process.env.GW_AUTH_TEST_API_KEY = 'api-key-from-env';
    process.env.GW_AUTH_TEST_CLIENT_SECRET = CLIENT_SECRET;
  });
  afterAll(async () => {
    await endpoint?.close();
    await issuer?.close();
  });

  const gw = withGateway(
    (targets): GatewayConfigInput => ({
      targets: [
        {
          name: 'legacy',
          url: targets.legacyProxy.url,
          era: 'legacy',
          headers: { 'x-api-key': { fromEnv: 'GW_AUTH_TEST_API_KEY' }, 'x-static': 'static' },
        },
        {
          name: 'modern',
          url: targets.modernProxy.url,
          era: 'modern',
          headers: { 'x-api-key': { fromEnv: 'GW_AUTH_TEST_API_KEY' } },
        },
        {
          name: 'secured',
          url: targets.securedProxy.url,
          era: 'legacy',
          oauth: {
            tokenUrl: endpoint.tokenUrl,
            clientId: 'gateway-client',
            clientSecret: { fromEnv: 'GW_AUTH_TEST_CLIENT_SECRET' },
            scopes: ['tools'],
          },
        },
      ],
      auth: { type: 'jwt', discoveryUrl: issuer.discoveryUrl, allowedAudiences: [AUDIENCE], allowedClients: [CLIENT] },
      requestStateKeys: { current: 'outbound-test-request-state-key-0123456789abcdef' },
      logLevel: 'SILENT',
    }),
    {
      kind,
      targets: {
        demo: () => startDemoTarget(),
        modern: () => startModernDemoTarget(),
        legacyProxy: (earlier: EarlierTargets) => startRecordingProxy(earlier.demo.url),
        modernProxy: (earlier: EarlierTargets) => startRecordingProxy(earlier.modern.url),
        securedProxy: (earlier: EarlierTargets) =>
          startRecordingProxy(earlier.demo.url, { requireToken: (token) => endpoint.isValid(token) }),
      },
      localServer: { logger, clock: aheadClock(() => offset) },
    },
  );
  let legacyProxy: RecordingProxy;
  let modernProxy: RecordingProxy;
  let securedProxy: RecordingProxy;

  // biome-ignore lint/suspicious/noDuplicateTestHooks: the first hook runs before the fixture's set-up, this one after it
  beforeAll(async () => {
    url = gw.url;
    ({ legacyProxy, modernProxy, securedProxy } = gw.targets);
    clientToken = await issuer.sign({ sub: 'alice' });
  });

  const call = async (headers: Record<string, string>, name: string, id: number): Promise<Json> => {
    const res = await post(url, headers, {
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name, arguments: { text: `call ${id}` } },
    });
    return readMessage(res);
  };

  test("the client's Authorization header never reaches a target, in either era; the configured headers do", async () => {
    const session = await initSession(url, {
      headers: { authorization: `Bearer ${clientToken}` },
      capabilities: { elicitation: { form: {} } },
    });
    expect((await call(session.headers, 'legacy___echo', 1)).result.content[0].text).toBe('echo: call 1');
    const relayed = await callAndAnswer(
      url,
      session.headers,
      { id: 2, params: { name: 'legacy___use_aws', arguments: { command: 'ls' } } },
      () => ({
        result: { action: 'accept', content: { confirm: true } },
      }),
    );
    expect(relayed.response.result.content[0].text).toBe('executed: ls');
    const modernRes = await post(
      url,
      {
        authorization: `Bearer ${clientToken}`,
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'modern___echo',
      },
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: {
          name: 'modern___echo',
          arguments: { text: 'modern' },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      },
    );
    expect((await readMessage(modernRes)).result.content[0].text).toBe('echo: modern');
    const del = await fetch(url, { method: 'DELETE', headers: session.headers });
    expect(del.status).toBe(200);

    expect(legacyProxy.seen.length).toBeGreaterThanOrEqual(5); // initialize, initialized, calls, the answer, DELETE
    expect(modernProxy.seen.length).toBeGreaterThanOrEqual(1);
    for (const headers of [...legacyProxy.seen, ...modernProxy.seen]) {
      expect(headers.authorization).toBeUndefined();
      expect(JSON.stringify(headers)).not.toContain(clientToken.split('.')[2]);
      expect(headers['x-api-key']).toBe('api-key-from-env');
    }
    expect(legacyProxy.seen.every((headers) => headers['x-static'] === 'static')).toBe(true);
  });

  test('client credentials: one token for every call while it is valid; a revoked token is replaced, an expired one too', async () => {
    endpoint.issueFor(3600);
    const session = await initSession(url, { headers: { authorization: `Bearer ${clientToken}` } });
    expect(endpoint.requests()).toBe(0); // the target session opens lazily, with the first call
    for (let id = 10; id < 13; id++)
      expect((await call(session.headers, 'secured___echo', id)).result.content[0].text).toBe(`echo: call ${id}`);
    expect(endpoint.requests()).toBe(1);
    const firstToken = endpoint.issued.at(-1)!;
    // Every request the target got carried the gateway's token, never the client's.
    expect(securedProxy.seen.every((headers) => headers.authorization === `Bearer ${firstToken}`)).toBe(true);

    // The target stops accepting the token (revoked): that call fails, the next one gets a new token.
    endpoint.issueFor(TOKEN_LIFETIME_S);
    endpoint.revoke(firstToken);
    const failed = await call(session.headers, 'secured___echo', 21);
    expect(failed.error.message).toMatch(/^DependencyFailedException: target secured/);
    expect((await call(session.headers, 'secured___echo', 22)).result.content[0].text).toBe('echo: call 22');
    const secondToken = endpoint.issued.at(-1)!;
    expect(secondToken).not.toBe(firstToken);

    // When a token is refreshed (a quarter of its lifetime early) is pinned on a fake clock ('client
    // credentials (no gateway)'); here a running gateway replaces one that expired. The local server's
    // time is moved past the expiry; the Lambda runtime's is its process's own, on the real clock, so
    // there the test waits until the endpoint holds the token expired (the target refuses it from then
    // on): the gateway counted its lifetime from before it asked, so it refreshes by then.
    endpoint.issueFor(3600); // the next token: valid at the target for as long as the test may take
    if (kind === 'local server') offset += TOKEN_LIFETIME_S * 1000;
    else await eventually(() => expect(endpoint.isValid(secondToken)).toBe(false), TOKEN_LIFETIME_S * 1000 + 1000);
    const seenBefore = securedProxy.seen.length;
    expect((await call(session.headers, 'secured___echo', 23)).result.content[0].text).toBe('echo: call 23');
    const thirdToken = endpoint.issued.at(-1)!;
    expect(thirdToken).not.toBe(secondToken);
    expect(
      securedProxy.seen.slice(seenBefore).every((headers) => headers.authorization === `Bearer ${thirdToken}`),
    ).toBe(true);
  });

  if (kind === 'local server') {
    test('no credential or token in the logs', () => {
      const text = logger.text();
      expect(text).not.toContain(CLIENT_SECRET);
      expect(text).not.toContain('api-key-from-env');
      for (const token of endpoint.issued) expect(text).not.toContain(token);
      expect(text).not.toContain(clientToken);
    });
  }
});

describe('secrets through the gateway (a fake Secrets Manager)', () => {
  test('a header and an OAuth client secret from secrets reach the target; the secret is read once', async () => {
    const demo = await startDemoTarget();
    const endpoint = await startTokenEndpoint({ clientId: 'gw', clientSecret: CLIENT_SECRET, expiresIn: 3600 });
    const proxy = await startRecordingProxy(demo.url, { requireToken: (token) => endpoint.isValid(token) });
    const secrets = fakeSecrets({ [ARN]: 'key-from-secrets-manager', [OAUTH_ARN]: CLIENT_SECRET });
    const gateway = await startLocalGateway({
      port: 0,
      demo: false,
      startupReport: false,
      logger: capturingLogger(),
      auth: { outbound: { secrets } },
      config: {
        targets: [
          {
            name: 'demo',
            url: proxy.url,
            headers: { 'x-api-key': { secretArn: ARN } },
            oauth: { tokenUrl: endpoint.tokenUrl, clientId: 'gw', clientSecret: { secretArn: OAUTH_ARN } },
          },
        ],
        logLevel: 'SILENT',
      },
    });
    try {
      const session = await initSession(gateway.url);
      for (let id = 1; id <= 2; id++) {
        const res = await post(gateway.url, session.headers, {
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'demo___echo', arguments: { text: 'x' } },
        });
        expect((await readMessage(res)).result.content[0].text).toBe('echo: x');
      }
      expect(proxy.seen.length).toBeGreaterThan(0);
      for (const headers of proxy.seen) {
        expect(headers['x-api-key']).toBe('key-from-secrets-manager');
        expect(headers.authorization).toBe(`Bearer ${endpoint.issued[0]}`);
      }
      expect(secrets.reads.sort()).toEqual([ARN, OAUTH_ARN].sort());
      expect(endpoint.requests()).toBe(1);
    } finally {
      await gateway.close();
      await proxy.close();
      await endpoint.close();
      await demo.close();
    }
  });
});
