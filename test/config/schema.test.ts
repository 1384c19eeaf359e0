import {
  ConfigError,
  DEFAULT_TARGET_LIMITS,
  GatewayConfigSchema,
  limitsOf,
  parseConfig,
} from '../../lambda/config/schema';

/** The configuration fields whose runtime behaviour is built elsewhere: CORS and per-target tool filters. */

function target(tools: unknown) {
  return { targets: [{ name: 'docs', url: 'https://docs.example.com/mcp', tools }] };
}

describe('cors', () => {
  test('default: no origin is allowed', () => {
    expect(parseConfig({}).cors).toEqual({ allowedOrigins: [], allowAnyOriginWithoutAuth: false });
  });

  test.each([
    'http://localhost:6274',
    'https://app.example.com',
    'https://app.example.com:8443',
    'http://127.0.0.1:8080',
    'http://[::1]:6274',
    'vscode-webview://abcdef',
    '*',
  ])('accepts the origin %s', (value) => {
    expect(parseConfig({ cors: { allowedOrigins: [value] } }).cors.allowedOrigins).toEqual([value]);
  });

  test.each([
    ['a trailing slash', 'https://app.example.com/'],
    ['a path', 'https://app.example.com/mcp'],
    ['no scheme', 'localhost:6274'],
    ['a port above 65535', 'http://localhost:65536'],
    ['port 0', 'http://localhost:0'],
    ['a query', 'https://app.example.com?x=1'],
    ['a partial wildcard', 'https://*.example.com'],
    ['an empty string', ''],
  ])('refuses an origin with %s, naming the field', (_why, value) => {
    expect(() => parseConfig({ cors: { allowedOrigins: [value] } })).toThrow(
      /cors\.allowedOrigins\.0: an origin "scheme:\/\/host\[:port\]"/,
    );
  });

  test('refuses unknown keys and more than 100 origins (the function URL limit)', () => {
    expect(() => parseConfig({ cors: { allowedOrigin: ['*'] } })).toThrow(/cors\.allowedOrigin: /);
    const many = Array.from({ length: 101 }, (_, i) => `https://app${i}.example.com`);
    expect(() => parseConfig({ cors: { allowedOrigins: many } })).toThrow(/cors\.allowedOrigins: /);
  });
});

describe('targets[].tools', () => {
  test('include and exclude globs are kept as given; no filter by default', () => {
    expect(parseConfig(target({ include: ['search_*', 'get_?'], exclude: ['*_admin'] })).targets[0].tools).toEqual({
      include: ['search_*', 'get_?'],
      exclude: ['*_admin'],
    });
    expect(parseConfig(target(undefined)).targets[0].tools).toBeUndefined();
    expect(parseConfig(target({ exclude: ['delete_*', 'ns/tool.v2'] })).targets[0].tools).toEqual({
      exclude: ['delete_*', 'ns/tool.v2'],
    });
  });

  test.each([
    ['an empty filter', {}, /targets\.0\.tools: give "include", "exclude" or both/],
    ['an empty include list', { include: [] }, /targets\.0\.tools\.include: an empty include list/],
    ['character classes', { include: ['[ab]*'] }, /targets\.0\.tools\.include\.0: a tool-name glob/],
    ['braces', { exclude: ['{a,b}'] }, /targets\.0\.tools\.exclude\.0: a tool-name glob/],
    ['negation', { exclude: ['!a'] }, /targets\.0\.tools\.exclude\.0: a tool-name glob/],
    ['spaces', { exclude: ['a b'] }, /targets\.0\.tools\.exclude\.0: a tool-name glob/],
    ['an empty pattern', { exclude: [''] }, /targets\.0\.tools\.exclude\.0: a tool-name glob/],
    ['a non-list', { include: 'a*' }, /targets\.0\.tools\.include: /],
    ['an unknown key', { only: ['a'] }, /targets\.0\.tools\.only: /],
  ])('refuses %s, naming the field', (_why, tools, message) => {
    expect(() => parseConfig(target(tools))).toThrow(ConfigError);
    expect(() => parseConfig(target(tools))).toThrow(message);
  });

  test('a pattern longer than a tool name can be (128) is refused', () => {
    expect(GatewayConfigSchema.safeParse(target({ include: ['a'.repeat(128)] })).success).toBe(true);
    expect(GatewayConfigSchema.safeParse(target({ include: ['a'.repeat(129)] })).success).toBe(false);
  });
});

describe('targetLimits and targets[].limits', () => {
  test('defaults for every target, overridden per key by the gateway and then by one target', () => {
    const config = parseConfig({
      targetLimits: { requestTimeoutMs: 2000 },
      targets: [
        { name: 'a', url: 'https://a.example.com/mcp' },
        { name: 'b', url: 'https://b.example.com/mcp', limits: { maxMessageBytes: 1024 * 1024 } },
      ],
    });
    expect(config.targetLimits).toEqual({ ...DEFAULT_TARGET_LIMITS, requestTimeoutMs: 2000 });
    expect(limitsOf(config.targets[0]!, config.targetLimits)).toEqual(config.targetLimits);
    expect(limitsOf(config.targets[1]!, config.targetLimits)).toEqual({
      ...config.targetLimits,
      maxMessageBytes: 1024 * 1024,
    });
    expect(parseConfig({}).stalledClientTimeoutSeconds).toBe(60);
  });

  test.each([
    ['targetLimits.requestTimeoutMs', { targetLimits: { requestTimeoutMs: 0 } }],
    ['targetLimits.maxMessageBytes', { targetLimits: { maxMessageBytes: 10 } }],
    ['targetLimits.timeoutMs', { targetLimits: { timeoutMs: 10 } }],
    [
      'targets.0.limits.callIdleTimeoutMs',
      { targets: [{ name: 'a', url: 'https://a.example.com/mcp', limits: { callIdleTimeoutMs: -1 } }] },
    ],
    ['stalledClientTimeoutSeconds', { stalledClientTimeoutSeconds: 0 }],
  ])('refuses a bad %s, naming it', (path, raw) => {
    expect(() => parseConfig(raw)).toThrow(new RegExp(path.replace(/\./g, '\\.')));
  });
});

describe('targets[].userOAuth and connections', () => {
  const url = 'https://docs.example.com/mcp';
  const jwt = { type: 'jwt', discoveryUrl: 'https://idp.example.com/.well-known/openid-configuration' };

  it('accepts a per-user target with nothing else: the gateway discovers and registers itself', () => {
    const config = parseConfig({ targets: [{ name: 'docs', url, userOAuth: {} }] });
    expect(config.targets[0]!.userOAuth).toEqual({});
    expect(config.connections).toEqual({ linkTtlSeconds: 600, idleDays: 90 });
  });

  it('refuses a second way to set the Authorization header on a per-user target', () => {
    expect(() =>
      parseConfig({
        targets: [{ name: 'docs', url, userOAuth: {}, headers: { Authorization: 'Bearer shared' } }],
      }),
    ).toThrow(/targets\.0\.userOAuth: userOAuth sets the Authorization header per user/);
  });

  it('refuses a client secret without its client id, and an inline one', () => {
    expect(() =>
      parseConfig({ targets: [{ name: 'docs', url, userOAuth: { clientSecret: { fromEnv: 'SECRET' } } }] }),
    ).toThrow(/userOAuth\.clientSecret: a clientSecret needs its clientId/);
    expect(() =>
      parseConfig({ targets: [{ name: 'docs', url, userOAuth: { clientId: 'gw', clientSecret: 'inline' } }] }),
    ).toThrow(/userOAuth\.clientSecret/);
  });

  it('refuses a client secret without the issuer it was issued by (it is sent to no other token endpoint)', () => {
    expect(() =>
      parseConfig({
        targets: [{ name: 'docs', url, userOAuth: { clientId: 'gw', clientSecret: { fromEnv: 'SECRET' } } }],
      }),
    ).toThrow(
      /userOAuth\.authorizationServer: a clientSecret is sent only to the authorization server it was issued by/,
    );
    const config = parseConfig({
      targets: [
        {
          name: 'docs',
          url,
          userOAuth: {
            clientId: 'gw',
            clientSecret: { fromEnv: 'SECRET' },
            authorizationServer: 'https://login.example.com',
          },
        },
      ],
    });
    expect(config.targets[0]!.userOAuth?.authorizationServer).toBe('https://login.example.com');
  });

  it('outbound: origins only (no path or credentials), authorization servers as https issuers', () => {
    expect(parseConfig({}).outbound).toEqual({ allowedOrigins: [], authorizationServers: [] });
    const config = parseConfig({
      outbound: {
        allowedOrigins: ['http://10.0.0.5:8080', 'https://keycloak.internal'],
        authorizationServers: ['https://login.example.com/realms/a'],
      },
    });
    expect(config.outbound.allowedOrigins).toEqual(['http://10.0.0.5:8080', 'https://keycloak.internal']);
    for (const origin of ['http://10.0.0.5:8080/token', 'https://user:pw@keycloak.internal', 'ftp://x.example']) {
      expect(() => parseConfig({ outbound: { allowedOrigins: [origin] } })).toThrow(/outbound\.allowedOrigins\.0/);
    }
    expect(() => parseConfig({ outbound: { authorizationServers: ['http://login.example.com'] } })).toThrow(
      /outbound\.authorizationServers\.0: must be https/,
    );
  });

  it('behind JWT auth, requires the sign-in that proves a consent link is its principal’s', () => {
    expect(() => parseConfig({ auth: jwt, targets: [{ name: 'docs', url, userOAuth: {} }] })).toThrow(
      /connections\.identityLogin: targets with userOAuth behind JWT auth need connections\.identityLogin/,
    );
    const config = parseConfig({
      auth: jwt,
      targets: [{ name: 'docs', url, userOAuth: {} }],
      connections: { identityLogin: { clientId: 'gateway-login' } },
    });
    expect(config.connections.identityLogin).toEqual({ clientId: 'gateway-login' });
  });

  it('takes a KMS key or alias ARN only, and a local key of at least 32 characters', () => {
    expect(() => parseConfig({ connections: { kmsKeyArn: 'my-key' } })).toThrow(/connections\.kmsKeyArn/);
    expect(
      parseConfig({ connections: { kmsKeyArn: 'arn:aws:kms:eu-west-1:123456789012:alias/connections' } }).connections
        .kmsKeyArn,
    ).toBe('arn:aws:kms:eu-west-1:123456789012:alias/connections');
    expect(() => parseConfig({ connections: { localKey: 'short' } })).toThrow(/connections\.localKey/);
  });
});
