import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, parseConfig } from '../../lambda/config/schema';
import {
  APPCONFIG_ENV,
  type AppConfigLocation,
  appConfigDataReader,
  CONFIG_ENV,
  describeConfigSource,
  loadConfig,
  parseAppConfigLocation,
  TABLE_NAME_ENV,
} from '../../lambda/config/source';

const TARGETS = [{ name: 'docs', url: 'https://docs.example.com/mcp' }];

/** A reader that serves one document and records what it was asked for. */
function fakeReader(document: string | Error) {
  const asked: AppConfigLocation[] = [];
  const reader = async (location: AppConfigLocation) => {
    asked.push(location);
    if (document instanceof Error) throw document;
    return document;
  };
  return { reader, asked };
}

async function failure(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('configuration from GATEWAY_CONFIG', () => {
  test('parsed and validated with the schema, defaults filled in', async () => {
    const config = await loadConfig({ [CONFIG_ENV]: JSON.stringify({ targets: TARGETS, tableName: 'gw-table' }) });
    expect(config).toEqual(parseConfig({ targets: TARGETS, tableName: 'gw-table' }));
  });

  test('nothing set: the schema defaults (as before)', async () => {
    expect(await loadConfig({})).toEqual(parseConfig({}));
  });

  test('invalid JSON fails naming the variable, without quoting the text', async () => {
    const error = await failure(loadConfig({ [CONFIG_ENV]: '{"headers": {"authorization": "Bearer s3cret"' }));
    expect(error.message).toBe('the configuration from GATEWAY_CONFIG is not valid JSON');
    expect(error.message).not.toContain('s3cret');
  });

  test('an invalid field fails naming the field', async () => {
    const error = await failure(loadConfig({ [CONFIG_ENV]: '{"sessionTimeoutSeconds": 5}' }));
    expect(error.message).toMatch(/^invalid GATEWAY_CONFIG: sessionTimeoutSeconds: /);
  });

  test('GATEWAY_TABLE_NAME wins over the document', async () => {
    const env = { [CONFIG_ENV]: '{"tableName":"other"}', [TABLE_NAME_ENV]: 'stack-table' };
    expect((await loadConfig(env)).tableName).toBe('stack-table');
  });
});

describe('configuration from AppConfig', () => {
  test('read through the reader at the location the variable names, then validated', async () => {
    const { reader, asked } = fakeReader(JSON.stringify({ targets: TARGETS, logLevel: 'WARN' }));
    const config = await loadConfig({ [APPCONFIG_ENV]: 'abc1234/env5678/prof901' }, { appConfigReader: reader });
    expect(asked).toEqual([{ application: 'abc1234', environment: 'env5678', profile: 'prof901' }]);
    expect(config).toEqual(parseConfig({ targets: TARGETS, logLevel: 'WARN' }));
  });

  test('larger than the 4 KB Lambda environment: 100 targets load', async () => {
    const targets = Array.from({ length: 100 }, (_, i) => ({
      name: `target-${i}`,
      url: `https://target-${i}.example.com/mcp`,
    }));
    const document = JSON.stringify({ targets });
    expect(Buffer.byteLength(document)).toBeGreaterThan(4096);
    const config = await loadConfig({ [APPCONFIG_ENV]: 'a/b/c' }, { appConfigReader: fakeReader(document).reader });
    expect(config.targets).toHaveLength(100);
  });

  test('the stack table name replaces whatever the document says', async () => {
    const { reader } = fakeReader('{"tableName":"somebody-elses-table"}');
    const env = { [APPCONFIG_ENV]: 'a/b/c', [TABLE_NAME_ENV]: 'McpGateway-GatewayTable-1' };
    expect((await loadConfig(env, { appConfigReader: reader })).tableName).toBe('McpGateway-GatewayTable-1');
  });

  test('an invalid document fails naming the source and the field; nothing is echoed', async () => {
    const { reader } = fakeReader('{"targets":[{"name":"bad name","url":"https://x.example"}]}');
    const error = await failure(loadConfig({ [APPCONFIG_ENV]: 'a/b/c' }, { appConfigReader: reader }));
    expect(error.message).toMatch(/^invalid configuration from AppConfig a\/b\/c: targets\.0\.name: /);
    const notJson = await failure(
      loadConfig({ [APPCONFIG_ENV]: 'a/b/c' }, { appConfigReader: fakeReader('token=abc').reader }),
    );
    expect(notJson.message).toBe('the configuration from AppConfig a/b/c is not valid JSON');
  });

  test('nothing deployed yet: a clear error, not the defaults', async () => {
    const error = await failure(loadConfig({ [APPCONFIG_ENV]: 'a/b/c' }, { appConfigReader: fakeReader('').reader }));
    expect(error.message).toContain('AppConfig a/b/c has no deployed configuration');
  });

  test('a read failure names the source and the cause', async () => {
    const denied = Object.assign(new Error('not authorized to perform appconfig:StartConfigurationSession'), {
      name: 'AccessDeniedException',
    });
    const error = await failure(
      loadConfig({ [APPCONFIG_ENV]: 'a/b/c' }, { appConfigReader: fakeReader(denied).reader }),
    );
    expect(error.message).toBe(
      'could not read the configuration from AppConfig a/b/c: AccessDeniedException: not authorized to perform appconfig:StartConfigurationSession',
    );
  });

  test('both sources set is refused as ambiguous', async () => {
    const error = await failure(loadConfig({ [CONFIG_ENV]: '{}', [APPCONFIG_ENV]: 'a/b/c' }));
    expect(error.message).toContain('not both');
  });

  test.each(['a/b', 'a/b/c/d', 'a//c', '/b/c', 'a/b/c d!', ''])('a malformed location %p is refused', (value) => {
    expect(() => parseAppConfigLocation(value)).toThrow(/GATEWAY_APPCONFIG must be/);
  });

  test('names are accepted as well as ids', () => {
    expect(parseAppConfigLocation('mcp-gateway/prod/gateway-config')).toEqual({
      application: 'mcp-gateway',
      environment: 'prod',
      profile: 'gateway-config',
    });
  });

  test('describeConfigSource names the source, never the content', () => {
    expect(describeConfigSource({ [APPCONFIG_ENV]: 'a/b/c' })).toBe('AppConfig a/b/c');
    expect(describeConfigSource({ [CONFIG_ENV]: '{"secret":"x"}' })).toBe('GATEWAY_CONFIG');
    expect(describeConfigSource({})).toMatch(/defaults/);
  });
});

/**
 * The real AWS SDK AppConfigData client, talking to a local stand-in for the AppConfigData endpoint:
 * the SDK's own request serialization, signing and response parsing run; only the network peer is fake.
 */
describe('appConfigDataReader (real SDK client)', () => {
  let server: Server;
  let endpoint: string;
  const requests: Array<{ method: string; url: string; body: string; authorization: string }> = [];
  let document = '';

  beforeAll(async () => {
    server = createServer(async (req: IncomingMessage, res) => {
      let body = '';
      for await (const chunk of req) body += chunk;
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        body,
        authorization: String(req.headers.authorization ?? ''),
      });
      if (req.method === 'POST' && req.url === '/configurationsessions') {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ InitialConfigurationToken: 'token-1' }));
        return;
      }
      if (req.method === 'GET' && req.url?.startsWith('/configuration?')) {
        res.writeHead(200, {
          'content-type': 'application/json',
          'next-poll-configuration-token': 'token-2',
          'next-poll-interval-in-seconds': '60',
          'version-label': 'v1',
        });
        res.end(document);
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json', 'x-amzn-errortype': 'ResourceNotFoundException' });
      res.end(JSON.stringify({ Message: 'no such route' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    requests.length = 0;
  });

  const clientConfig = () => ({
    endpoint,
    region: 'eu-west-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'test-only' },
  });

  test('starts a session for the location, then fetches the configuration with its token', async () => {
    document = JSON.stringify({ targets: TARGETS });
    const read = appConfigDataReader(clientConfig());
    const text = await read({ application: 'app1234', environment: 'env5678', profile: 'prof901' });
    expect(text).toBe(document);
    expect(requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'POST /configurationsessions',
      'GET /configuration?configuration_token=token-1',
    ]);
    expect(JSON.parse(requests[0].body)).toEqual({
      ApplicationIdentifier: 'app1234',
      EnvironmentIdentifier: 'env5678',
      ConfigurationProfileIdentifier: 'prof901',
    });
    // Signed for the appconfig service in the client's region.
    expect(requests[0].authorization).toMatch(/Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/appconfig\/aws4_request/);
  });

  test('loadConfig end to end through the real client', async () => {
    document = JSON.stringify({ targets: TARGETS, sessionTimeoutSeconds: 7200 });
    const config = await loadConfig(
      { [APPCONFIG_ENV]: 'app1234/env5678/prof901', [TABLE_NAME_ENV]: 'stack-table' },
      { appConfigReader: appConfigDataReader(clientConfig()) },
    );
    expect(config).toEqual(parseConfig({ targets: TARGETS, sessionTimeoutSeconds: 7200, tableName: 'stack-table' }));
  });

  test('an empty configuration body reads as nothing deployed', async () => {
    document = '';
    const error = await failure(
      loadConfig({ [APPCONFIG_ENV]: 'a/b/c' }, { appConfigReader: appConfigDataReader(clientConfig()) }),
    );
    expect(error.message).toContain('has no deployed configuration');
  });

  test('an unreachable endpoint fails (the test timeout catches a hang), naming the source', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await failure(
      loadConfig(
        { [APPCONFIG_ENV]: 'a/b/c' },
        { appConfigReader: appConfigDataReader({ ...clientConfig(), endpoint: `http://127.0.0.1:${port}` }) },
      ),
    );
    expect(error.message).toMatch(/^could not read the configuration from AppConfig a\/b\/c: /);
  });
});
