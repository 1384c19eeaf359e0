import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GatewayConfigSchema } from '../../lambda/config/schema';
import {
  ALL_CONTEXT_KEYS,
  CONFIG_CONTEXT_KEYS,
  ContextError,
  type ContextSource,
  contextDefaults,
  DEPLOYMENT_CONTEXT_KEYS,
  GRADUAL_DEPLOYMENTS,
  isCdkOwnContextKey,
  readGatewayContext,
  suggestContextKey,
} from '../../lib/context';

const ROOT = join(__dirname, '..', '..');

/** A context source like `app.node`, from a plain record (values as cdk.json or `-c` give them). */
function source(context: Record<string, unknown>): ContextSource {
  return { tryGetContext: (key) => context[key], getAllContext: () => context };
}

function read(context: Record<string, unknown>) {
  return readGatewayContext(source(context));
}

function errorOf(context: Record<string, unknown>): ContextError {
  try {
    read(context);
  } catch (error) {
    expect(error).toBeInstanceOf(ContextError);
    return error as ContextError;
  }
  throw new Error('expected a ContextError');
}

describe('CDK context', () => {
  test('the client GET stream: held 5 s and retried after 30 s by default (SSE polling); -c clientStreamHoldSeconds=0 turns it off', () => {
    expect(read({}).config).toMatchObject({ clientStreamHoldSeconds: 5, clientStreamRetryMs: 30_000 });
    expect(read({ clientStreamHoldSeconds: '0', clientStreamRetryMs: '5000' }).config).toMatchObject({
      clientStreamHoldSeconds: 0,
      clientStreamRetryMs: 5000,
    });
  });

  test('every field of the gateway configuration schema is a context key', () => {
    expect(CONFIG_CONTEXT_KEYS).toEqual(Object.keys(GatewayConfigSchema.shape));
    for (const key of [
      'memorySize',
      'architecture',
      'logRetentionDays',
      'reservedConcurrency',
      'alarmEmail',
      'removalPolicy',
    ]) {
      expect(DEPLOYMENT_CONTEXT_KEYS).toContain(key);
    }
  });

  test('defaults: arm64, 1024 MB, 900 s, 30 days, retain, no alarm e-mail, schema defaults', () => {
    const settings = read({});
    expect(settings.deployment).toEqual({
      stackName: 'McpGateway',
      memorySize: 1024,
      architecture: 'arm64',
      timeoutSeconds: 900,
      tracing: 'off',
      logRetentionDays: 30,
      removalPolicy: 'retain',
      secretArns: [],
      configSource: 'environment',
      gradualDeployment: 'none',
    });
    expect(settings.config).toEqual(GatewayConfigSchema.parse({}));
    expect(settings.tableNameGiven).toBe(false);
  });

  test('values from -c arrive as strings and are parsed (JSON, numbers, comma lists)', () => {
    const settings = read({
      targets: '[{"name":"docs","url":"https://docs.example.com/mcp"}]',
      memorySize: '2048',
      sessionTimeoutSeconds: '7200',
      supportedVersions: '2025-11-25,2026-07-28',
      architecture: 'x86_64',
      reservedConcurrency: '10',
      alarmEmail: 'ops@example.com',
      tableName: 'my-gateway',
      streamLogMaxBytes: '262144',
    });
    expect(settings.config.streamLogMaxBytes).toBe(262144);
    expect(settings.config.targets).toEqual([{ name: 'docs', url: 'https://docs.example.com/mcp' }]);
    expect(settings.config.sessionTimeoutSeconds).toBe(7200);
    expect(settings.config.supportedVersions).toEqual(['2025-11-25', '2026-07-28']);
    expect(settings.deployment).toMatchObject({
      memorySize: 2048,
      architecture: 'x86_64',
      reservedConcurrency: 10,
      alarmEmail: 'ops@example.com',
    });
    expect(settings.tableNameGiven).toBe(true);
  });

  test('an empty value means "use the default"', () => {
    expect(read({ alarmEmail: '', memorySize: '' }).deployment).toMatchObject({ memorySize: 1024 });
    expect(read({ alarmEmail: '' }).deployment.alarmEmail).toBeUndefined();
  });

  test.each([
    ['sessionTimeoutSeconds', 60],
    ['sessionTimeoutSeconds', '99999'],
    ['pendingRequestTimeoutSeconds', 0],
    ['streamLogTtlSeconds', 10],
    ['streamLogRetainSeconds', 0],
    ['streamLogMaxBytes', 1000],
    ['targets', '[{"name":"bad name","url":"https://x.example"}]'],
    ['targets', '[{"name":"a","url":"ftp://x.example"}]'],
    ['targets', 'not json'],
    ['toolNamePrefix', 'sometimes'],
    ['supportedVersions', '1999-01-01'],
    ['tableName', 'x'],
    ['logLevel', 'LOUD'],
    ['auth', '{"type":"magic"}'],
    ['maxBodyBytes', 10],
    ['clientStreamHoldSeconds', 901],
    ['clientStreamHoldSeconds', 'forever'],
    ['clientStreamRetryMs', -1],
    ['stackName', '1-bad'],
    ['memorySize', 64],
    ['memorySize', 'lots'],
    ['architecture', 'arm'],
    ['timeoutSeconds', 901],
    ['logRetentionDays', 2],
    ['reservedConcurrency', 0],
    ['alarmEmail', 'not-an-address'],
    ['removalPolicy', 'snapshot'],
    ['secretArns', '["arn:aws:secretsmanager:eu-west-1:123456789012:secret:*"]'],
    ['secretArns', '["arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/upstream"]'],
  ])('invalid %s (%p) fails naming the key', (key, value) => {
    const error = errorOf({ [key]: value });
    expect(error.key).toBe(key);
    expect(error.message).toContain(`"${key}"`);
  });

  test('the message says where inside a structured value', () => {
    const error = errorOf({
      targets: [
        { name: 'ok', url: 'https://a.example' },
        { name: 'x', url: 'nope' },
      ],
    });
    expect(error.message).toMatch(/^Invalid CDK context "targets": .* at targets\.1\.url/);
  });

  test('duplicate target names are refused', () => {
    const error = errorOf({
      targets: [
        { name: 'a', url: 'https://a.example' },
        { name: 'a', url: 'https://b.example' },
      ],
    });
    expect(error.key).toBe('targets');
    expect(error.message).toContain('duplicate target name');
  });

  test('a mistyped key is refused instead of silently ignored', () => {
    const error = errorOf({ memorysize: 2048 });
    expect(error.key).toBe('memorysize');
    expect(error.message).toContain('did you mean "memorySize"');
  });

  test.each([
    ['sesionTimeoutSeconds', 'sessionTimeoutSeconds'],
    ['sessionTimeout', 'sessionTimeoutSeconds'],
    ['target', 'targets'],
    ['alarmEmial', 'alarmEmail'],
    ['memory_size', 'memorySize'],
    ['gradualDeploy', 'gradualDeployment'],
    ['configsource', 'configSource'],
  ])('an unknown key (%s) fails synthesis with a suggestion (%s)', (key, suggestion) => {
    const error = errorOf({ [key]: '1200' });
    expect(error.key).toBe(key);
    expect(error.message).toBe(`Invalid CDK context "${key}": unknown key; did you mean "${suggestion}"?`);
  });

  test('an unknown key with nothing close fails pointing at the documentation', () => {
    const error = errorOf({ colour: 'blue' });
    expect(error.message).toBe(
      'Invalid CDK context "colour": unknown key; the context keys are listed in docs/deploy.md, section "Context"',
    );
  });

  test("the CDK's own keys are not ours to refuse", () => {
    const cdkOwn = {
      '@aws-cdk/core:newStyleStackSynthesis': true,
      'aws:cdk:bundling-stacks': [],
      'aws:cdk:version-reporting': false,
      'availability-zones:account=123456789012:region=eu-west-1': ['eu-west-1a'],
      'cli-telemetry': false,
      'acknowledged-issue-numbers': [12345],
    };
    for (const key of Object.keys(cdkOwn)) expect(isCdkOwnContextKey(key)).toBe(true);
    expect(read(cdkOwn).deployment.stackName).toBe('McpGateway');
    expect(isCdkOwnContextKey('sesionTimeoutSeconds')).toBe(false);
    expect(suggestContextKey('totallyDifferent')).toBeUndefined();
  });

  test('deployment keys: configSource, gradualDeployment and vpc (by id, no lookups)', () => {
    expect(read({}).deployment).toMatchObject({ configSource: 'environment', gradualDeployment: 'none' });
    expect(read({}).deployment.vpc).toBeUndefined();
    const vpc = {
      vpcId: 'vpc-0123456789abcdef0',
      subnetIds: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'],
      securityGroupIds: ['sg-0123456789abcdef0'],
    };
    const settings = read({
      configSource: 'appconfig',
      gradualDeployment: 'Canary10Percent5Minutes',
      vpc: JSON.stringify(vpc),
    }).deployment;
    expect(settings).toMatchObject({ configSource: 'appconfig', gradualDeployment: 'Canary10Percent5Minutes', vpc });
    for (const value of GRADUAL_DEPLOYMENTS)
      expect(read({ gradualDeployment: value }).deployment.gradualDeployment).toBe(value);
  });

  test.each([
    ['configSource', 'ssm', /configSource/],
    ['gradualDeployment', 'Canary50Percent', /gradualDeployment/],
    ['vpc', '{"subnetIds":["subnet-0123456789abcdef0"]}', /at vpc\.vpcId/],
    ['vpc', '{"vpcId":"vpc-0123456789abcdef0","subnetIds":[]}', /at least one subnet/],
    ['vpc', '{"vpcId":"vpc-0123456789abcdef0","subnetIds":["subnet-x"]}', /a subnet id/],
    [
      'vpc',
      '{"vpcId":"vpc-0123456789abcdef0","subnetIds":["subnet-0123456789abcdef0"],"securityGroupIds":["default"]}',
      /a security group id/,
    ],
    ['vpc', '{"vpcId":"vpc-0123456789abcdef0","subnetIds":["subnet-0123456789abcdef0"],"subnets":[]}', /vpc/],
  ])('invalid %s (%p) fails naming the key and the problem', (key, value, message) => {
    const error = errorOf({ [key]: value });
    expect(error.key).toBe(key);
    expect(error.message).toMatch(message);
  });

  test('secret references in targets must be full ARNs; environment references cannot work in Lambda', () => {
    const partial = errorOf({
      targets: [
        {
          name: 'a',
          url: 'https://a.example',
          headers: { authorization: { secretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/a' } },
        },
      ],
    });
    expect(partial.key).toBe('targets');
    expect(partial.message).toContain(
      'targets.0.headers.authorization.secretArn must be a full Secrets Manager secret ARN',
    );
    const fromEnv = errorOf({
      targets: [{ name: 'a', url: 'https://a.example', headers: { 'x-api-key': { fromEnv: 'API_KEY' } } }],
    });
    expect(fromEnv.key).toBe('targets');
    expect(fromEnv.message).toContain('targets.0.headers.x-api-key.fromEnv');
  });

  test('pending requests must expire before the function times out, unless waiting calls are released (streamRelease)', () => {
    const error = errorOf({ streamRelease: 'false', timeoutSeconds: 300, pendingRequestTimeoutSeconds: 300 });
    expect(error.key).toBe('pendingRequestTimeoutSeconds');
    expect(read({ timeoutSeconds: 301, pendingRequestTimeoutSeconds: 300 }).deployment.timeoutSeconds).toBe(301);
    // Released calls hold no invocation while they wait: a URL-mode consent may take longer than 15 minutes.
    expect(read({ timeoutSeconds: 300, pendingRequestTimeoutSeconds: 1800 }).config).toMatchObject({
      streamRelease: 'proven',
      pendingRequestTimeoutSeconds: 1800,
    });
    // The mode by name, and the boolean of earlier releases (true is "always").
    expect(
      read({ streamRelease: 'never', timeoutSeconds: 301, pendingRequestTimeoutSeconds: 300 }).config,
    ).toMatchObject({ streamRelease: 'never' });
    expect(read({ streamRelease: 'true' }).config.streamRelease).toBe('always');
    expect(errorOf({ streamRelease: 'never', timeoutSeconds: 300, pendingRequestTimeoutSeconds: 300 }).key).toBe(
      'pendingRequestTimeoutSeconds',
    );
    // ... but not longer than its stream is kept.
    const beyondTheLog = errorOf({ pendingRequestTimeoutSeconds: 3600, streamLogTtlSeconds: 600 });
    expect(beyondTheLog.message).toContain('streamLogTtlSeconds');
  });

  test('cdk.json: the app runs offline with tsx, and every knob it lists holds its default value', () => {
    const cdkJson = JSON.parse(readFileSync(join(ROOT, 'cdk.json'), 'utf8')) as {
      app: string;
      context: Record<string, unknown>;
    };
    expect(cdkJson.app).toBe('npx tsx bin/app.ts');
    const defaults = contextDefaults();
    const listed = Object.keys(cdkJson.context).filter((key) => ALL_CONTEXT_KEYS.includes(key));
    expect(listed.length).toBeGreaterThanOrEqual(10);
    for (const key of listed) {
      // Unset-by-default keys (alarmEmail, reservedConcurrency, tableName) are documented, not listed.
      expect({ key, value: cdkJson.context[key] }).toEqual({ key, value: defaults[key] });
    }
    expect(read(cdkJson.context).config).toEqual(GatewayConfigSchema.parse({}));
  });

  test('requestStateSecretArn must be a full ARN, so exactly that secret is granted', () => {
    const error = errorOf({
      requestStateSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/state',
    });
    expect(error.key).toBe('requestStateSecretArn');
    const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/state-AbC123';
    expect(read({ requestStateSecretArn: arn }).config.requestStateSecretArn).toBe(arn);
  });

  test('docs/deploy.md documents every context key', () => {
    const doc = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    for (const key of ALL_CONTEXT_KEYS)
      expect({ key, documented: doc.includes(`| \`${key}\``) }).toEqual({ key, documented: true });
  });
});
