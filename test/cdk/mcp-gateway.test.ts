import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import type { GatewayConfigInput } from '../../lambda/config/schema';
import { SECRET_ARN_ENV } from '../../lambda/crypto/keys';
import { MetricName } from '../../lambda/observability/metrics';
import {
  functionUrlAuthFor,
  McpGateway,
  REQUEST_STATE_SECRET_ENV,
  SECRET_ACTIONS,
  TABLE_ACTIONS,
  TTL_ATTRIBUTE,
} from '../../lib/mcp-gateway';
import { buildGatewayApp, type McpGatewayStack } from '../../lib/mcp-gateway-stack';

const ROOT = join(__dirname, '..', '..');
const SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/upstream-AbC123';
const jwtAuth = { type: 'jwt', discoveryUrl: 'https://idp.example.com/.well-known/openid-configuration' } as const;

/**
 * Apps here skip esbuild (`aws:cdk:bundling-stacks: []`) and CDK's built-in CloudFormation schema
 * validation (about 8 s of WebAssembly start-up per process) to keep this file fast;
 * test/cdk/synth.test.ts and `cdk synth` do both. cdk-nag runs as part of every synthesis here.
 */
const FAST = { builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] as string[] } };

function synth(context: Record<string, unknown> = {}): { stack: McpGatewayStack; template: Template } {
  const app = new App({ ...FAST, context: { ...FAST.context, ...context } });
  const stack = buildGatewayApp(app);
  return { stack, template: Template.fromStack(stack) };
}

function onlyResource(template: Template, type: string): { Properties: Record<string, any>; [key: string]: any } {
  const found = Object.values(template.findResources(type));
  expect(found).toHaveLength(1);
  return found[0] as { Properties: Record<string, any> };
}

function gatewayConfig(template: Template): Record<string, unknown> {
  const fn = onlyResource(template, 'AWS::Lambda::Function');
  const joined = fn.Properties.Environment.Variables.GATEWAY_CONFIG['Fn::Join'][1] as Array<string | object>;
  // The generated table name is a Ref; substitute a marker to read the JSON.
  return JSON.parse(joined.map((part) => (typeof part === 'string' ? part : '<TABLE>')).join(''));
}

function allStatements(template: Template): Array<{ Action: string | string[]; Resource: unknown; Sid?: string }> {
  return Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
    (policy: any) => policy.Properties.PolicyDocument.Statement,
  );
}

describe('McpGateway stack (defaults)', () => {
  let template: Template;
  let stack: McpGatewayStack;
  beforeAll(() => {
    ({ template, stack } = synth());
  });

  test('function: Node.js 24, arm64, 900 s, 1024 MB, ESM bundle handler, own log group', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      Timeout: 900,
      MemorySize: 1024,
      Handler: 'index.handler',
      LoggingConfig: { LogGroup: { Ref: Match.stringLikeRegexp('GatewayLogs') } },
      Environment: {
        Variables: Match.objectLike({
          POWERTOOLS_METRICS_NAMESPACE: 'McpGateway',
          POWERTOOLS_SERVICE_NAME: 'McpGateway',
          NODE_OPTIONS: '--enable-source-maps',
        }),
      },
    });
    const fn = onlyResource(template, 'AWS::Lambda::Function');
    expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
    expect(fn.Properties.TracingConfig).toBeUndefined();
  });

  test('function URL: RESPONSE_STREAM with AWS_IAM auth (the gateway does no JWT auth)', () => {
    template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'AWS_IAM', InvokeMode: 'RESPONSE_STREAM' });
    // No public resource policy for an IAM-authenticated URL.
    template.resourceCountIs('AWS::Lambda::Permission', 0);
    template.hasOutput('GatewayUrl', {
      Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('FunctionUrl'), 'FunctionUrl'] },
    });
  });

  test('context auth jwt gives a public URL; auth iam keeps AWS_IAM', () => {
    synth({ auth: JSON.stringify(jwtAuth) }).template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'NONE' });
    synth({ auth: '{"type":"iam"}' }).template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'AWS_IAM' });
  });

  test('URL auth follows the gateway auth type: NONE only when the gateway validates JWTs itself', () => {
    expect(functionUrlAuthFor('jwt')).toBe(lambda.FunctionUrlAuthType.NONE);
    expect(functionUrlAuthFor('iam')).toBe(lambda.FunctionUrlAuthType.AWS_IAM);
    expect(functionUrlAuthFor('none')).toBe(lambda.FunctionUrlAuthType.AWS_IAM);
  });

  test('GATEWAY_CONFIG is the validated configuration, pointing at the stack table', () => {
    const config = gatewayConfig(template);
    expect(config).toMatchObject({
      targets: [],
      sessionTimeoutSeconds: 3600,
      pendingRequestTimeoutSeconds: 300,
      tableName: '<TABLE>',
      auth: { type: 'none' },
    });
    const fn = onlyResource(template, 'AWS::Lambda::Function');
    const parts = fn.Properties.Environment.Variables.GATEWAY_CONFIG['Fn::Join'][1];
    expect(parts).toContainEqual({ Ref: stack.getLogicalId(stack.gateway.table.node.defaultChild as any) });
  });

  test('table: pk/sk strings, on-demand, TTL expiresAt, PITR, KMS encryption, retained and protected', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
        DeletionProtectionEnabled: true,
      },
    });
    expect(onlyResource(template, 'AWS::DynamoDB::Table').Properties.TableName).toBeUndefined();
    expect(onlyResource(template, 'AWS::DynamoDB::Table').Properties.GlobalSecondaryIndexes).toBeUndefined();
  });

  test('IAM: the table actions the code uses on the table ARN, log writes to its log group, nothing else', () => {
    const role = onlyResource(template, 'AWS::IAM::Role');
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    expect(role.Properties.Policies).toBeUndefined();
    const statements = allStatements(template);
    expect(statements).toHaveLength(3);
    expect(statements[0]).toEqual({
      Effect: 'Allow',
      Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      Resource: { 'Fn::GetAtt': [expect.stringMatching(/^GatewayLogs/), 'Arn'] },
    });
    expect(statements[1]).toEqual({
      Sid: 'GatewayTable',
      Effect: 'Allow',
      Action: [...TABLE_ACTIONS],
      Resource: { 'Fn::GetAtt': [expect.stringMatching(/^GatewayTable/), 'Arn'] },
    });
    expect(statements[2]).toEqual({
      Sid: 'GatewaySecrets',
      Effect: 'Allow',
      Action: 'secretsmanager:GetSecretValue',
      Resource: { Ref: expect.stringMatching(/^GatewayRequestStateKey/) },
    });
  });

  test('IAM: no wildcard in any action or resource of the template', () => {
    for (const statement of allStatements(template)) {
      for (const action of ([] as string[]).concat(statement.Action)) expect(action).not.toContain('*');
      expect(JSON.stringify(statement.Resource)).not.toContain('*');
    }
  });

  test('IAM: granted table actions are exactly the DynamoDB commands the runtime sends', () => {
    expect(dynamoActionsUsedByRuntime()).toEqual([...TABLE_ACTIONS].sort());
  });

  test('IAM: every Secrets Manager command the runtime sends is covered by the secret grant', () => {
    for (const action of sdkActionsUsedByRuntime('client-secrets-manager', 'secretsmanager')) {
      expect(SECRET_ACTIONS as readonly string[]).toContain(action);
    }
  });

  test('alarms: errors, throttles and duration near the timeout; no topic without an e-mail', () => {
    template.resourceCountIs('AWS::CloudWatch::Alarm', 7); // the other four: test/cdk/deploy-features.test.ts
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Errors',
      Namespace: 'AWS/Lambda',
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Throttles',
      Namespace: 'AWS/Lambda',
      Statistic: 'Sum',
      Threshold: 1,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Duration',
      Namespace: 'AWS/Lambda',
      Statistic: 'Maximum',
      Threshold: 810_000,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    template.resourceCountIs('AWS::SNS::Topic', 0);
    for (const alarm of Object.values(template.findResources('AWS::CloudWatch::Alarm')) as any[]) {
      expect(alarm.Properties.AlarmActions).toBeUndefined();
    }
  });

  test('dashboard: Lambda health, relayed/answered/expired input requests, errors by code, target latency, table', () => {
    const dashboard = onlyResource(template, 'AWS::CloudWatch::Dashboard');
    const body = JSON.stringify(stack.resolve(dashboard.Properties.DashboardBody));
    for (const name of Object.values(MetricName)) expect(body).toContain(name);
    for (const text of [
      'Invocations',
      'Throttles',
      'Duration',
      'ConcurrentExecutions',
      'ConsumedReadCapacityUnits',
      'SEARCH(',
      'service=\\\\\\"McpGateway\\\\\\"',
    ]) {
      expect({ text, found: body.includes(text) }).toEqual({ text, found: true });
    }
  });

  test('log group: 30-day retention, retained with the stack', () => {
    template.hasResource('AWS::Logs::LogGroup', { DeletionPolicy: 'Retain', Properties: { RetentionInDays: 30 } });
  });

  test('requestState key: a generated secret shared by all instances, passed by ARN, retained', () => {
    template.hasResource('AWS::SecretsManager::Secret', {
      DeletionPolicy: 'Retain',
      Properties: { GenerateSecretString: { PasswordLength: 64, ExcludePunctuation: true } },
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          [REQUEST_STATE_SECRET_ENV]: { Ref: Match.stringLikeRegexp('^GatewayRequestStateKey') },
        }),
      },
    });
    expect(SECRET_ARN_ENV).toBe(REQUEST_STATE_SECRET_ENV);
    expect(Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('requestState'))).toHaveLength(0);
  });
});

describe('McpGateway stack (tuned by context)', () => {
  let template: Template;
  let stack: McpGatewayStack;
  beforeAll(() => {
    ({ template, stack } = synth({
      stackName: 'GatewayProd',
      targets: JSON.stringify([
        { name: 'docs', url: 'https://docs.example.com/mcp' },
        { name: 'tickets', url: 'https://tickets.example.com/mcp' },
      ]),
      memorySize: '2048',
      architecture: 'x86_64',
      timeoutSeconds: '600',
      logRetentionDays: '90',
      reservedConcurrency: '25',
      alarmEmail: 'ops@example.com',
      removalPolicy: 'destroy',
      secretArns: JSON.stringify([SECRET]),
      tableName: 'gateway-prod',
      sessionTimeoutSeconds: '7200',
    }));
  });

  test('stack name, memory, architecture, timeout and reserved concurrency come from context', () => {
    expect(stack.stackName).toBe('GatewayProd');
    template.hasResourceProperties('AWS::Lambda::Function', {
      MemorySize: 2048,
      Architectures: ['x86_64'],
      Timeout: 600,
      ReservedConcurrentExecutions: 25,
      Environment: { Variables: Match.objectLike({ POWERTOOLS_SERVICE_NAME: 'GatewayProd' }) },
    });
  });

  test('the table name from context is the physical name; destroy removes table and logs', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ TableName: 'gateway-prod', DeletionProtectionEnabled: false }),
    });
    template.hasResource('AWS::Logs::LogGroup', { DeletionPolicy: 'Delete', Properties: { RetentionInDays: 90 } });
    const config = gatewayConfig(template) as { targets: Array<{ name: string }> };
    expect(config).toMatchObject({ tableName: '<TABLE>', sessionTimeoutSeconds: 7200 });
    expect(config.targets.map((t) => t.name)).toEqual(['docs', 'tickets']);
  });

  test('secrets: GetSecretValue on exactly the named secret ARNs (and the generated requestState key)', () => {
    const secrets = allStatements(template).filter((s) => s.Sid === 'GatewaySecrets');
    expect(secrets).toEqual([
      {
        Sid: 'GatewaySecrets',
        Effect: 'Allow',
        Action: 'secretsmanager:GetSecretValue',
        Resource: [SECRET, { Ref: expect.stringMatching(/^GatewayRequestStateKey/) }],
      },
    ]);
    template.hasResource('AWS::SecretsManager::Secret', { DeletionPolicy: 'Delete' });
  });

  test('alarm e-mail: an SSL-only topic with one e-mail subscription, wired to every alarm (alarm and OK)', () => {
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as any[];
    expect(alarms).toHaveLength(7);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: expect.stringMatching(/AlarmTopic/) }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: expect.stringMatching(/AlarmTopic/) }]);
    }
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'Duration', Threshold: 540_000 });
  });

  test('dashboard shows the latency of each configured target', () => {
    const body = JSON.stringify(
      stack.resolve(onlyResource(template, 'AWS::CloudWatch::Dashboard').Properties.DashboardBody),
    );
    expect(body).toContain('\\"target\\",\\"docs\\"');
    expect(body).toContain('\\"target\\",\\"tickets\\"');
  });
});

describe('McpGateway construct guards', () => {
  function gateway(props: ConstructorParameters<typeof McpGateway>[2]): McpGateway {
    const app = new App(FAST);
    return new McpGateway(new Stack(app, 'S'), 'Gateway', props);
  }

  test('invalid configuration fails naming the field', () => {
    expect(() => gateway({ config: { sessionTimeoutSeconds: 10 } })).toThrow(/sessionTimeoutSeconds/);
    expect(() => gateway({ config: { targets: [{ name: 'x', url: 'nope' }] } })).toThrow(/targets\.0\.url/);
  });

  test('policies that do not validate fail the synth, at their line and column; valid ones synthesize', () => {
    const policy = (policies: string) => ({
      config: { policy: { policies, argumentTypes: { amount: 'Long' as const } } },
    });
    expect(() =>
      gateway(policy('permit (principal, action, resource)\nwhen { context.arguments.ammount < 5 };')),
    ).toThrow(/policy\.policies: policy line 2, column \d+: .*ammount/);
    expect(() =>
      gateway(
        policy(
          'permit (principal, action, resource)\nwhen { context.arguments has amount && context.arguments.amount < 5 };',
        ),
      ),
    ).not.toThrow();
  });

  test('secret ARNs must be exact: partial or wildcard ARNs are refused', () => {
    expect(() => gateway({ secretArns: ['arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/*'] })).toThrow(
      /secretArns\[0\]/,
    );
    expect(() => gateway({ secretArns: ['arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway'] })).toThrow(
      /secretArns\[0\]/,
    );
    expect(() => gateway({ secretArns: [SECRET] })).not.toThrow();
  });

  test('a configured requestStateSecretArn is granted exactly; no secret is generated', () => {
    const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/state-XyZ789';
    const g = gateway({ config: { requestStateSecretArn: arn } });
    const template = Template.fromStack(Stack.of(g));
    template.resourceCountIs('AWS::SecretsManager::Secret', 0);
    expect(allStatements(template).filter((s) => s.Sid === 'GatewaySecrets')).toEqual([
      { Sid: 'GatewaySecrets', Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: arn },
    ]);
    expect(
      onlyResource(template, 'AWS::Lambda::Function').Properties.Environment.Variables[REQUEST_STATE_SECRET_ENV],
    ).toBeUndefined();
    expect(() =>
      gateway({
        config: {
          requestStateSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/state',
        },
      }),
    ).toThrow(/^requestStateSecretArn: /);
  });

  const A = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/a-AAAAAA';
  const B = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/b-BBBBBB';
  test('secrets referenced by targets (headers, OAuth) are granted exactly, once each', () => {
    const config: GatewayConfigInput = {
      targets: [
        { name: 'a', url: 'https://a.example/mcp', headers: { authorization: { secretArn: A, prefix: 'Bearer ' } } },
        {
          name: 'b',
          url: 'https://b.example/mcp',
          headers: { 'x-tenant': 'acme', 'x-api-key': { secretArn: A, key: 'apiKey' } },
          oauth: { tokenUrl: 'https://idp.example/token', clientId: 'gateway', clientSecret: { secretArn: B } },
        },
      ],
    };
    const g = gateway({ config: config, requestStateSecret: undefined });
    const statements = allStatements(Template.fromStack(Stack.of(g))).filter((st) => st.Sid === 'GatewaySecrets');
    expect(statements).toHaveLength(1);
    expect(statements[0].Resource).toEqual([A, B, { Ref: expect.stringMatching(/^GatewayRequestStateKey/) }]);
    expect(
      Annotations.fromStack(Stack.of(g)).findWarning('*', Match.stringLikeRegexp('look like credentials')),
    ).toHaveLength(0);

    const envRef = {
      targets: [{ name: 'a', url: 'https://a.example', headers: { 'x-api-key': { fromEnv: 'API_KEY' } } }],
    };
    expect(() => gateway({ config: envRef })).toThrow(/^targets\.0\.headers\.x-api-key\.fromEnv: /);
    expect(() => gateway({ config: envRef, environment: { API_KEY: 'not-secret-in-tests' } })).not.toThrow();
  });

  test('a requestState secret imported by partial ARN is refused (the grant would need a wildcard)', () => {
    const app = new App(FAST);
    const stack = new Stack(app, 'S');
    const byName = secretsmanager.Secret.fromSecretNameV2(stack, 'ByName', 'gateway/state');
    expect(() => new McpGateway(stack, 'Gateway', { requestStateSecret: byName })).toThrow(/^requestStateSecret: /);
  });

  test('a configuration larger than the 4 KB Lambda environment fails at synth, naming targets', () => {
    const targets = Array.from({ length: 60 }, (_, i) => ({
      name: `target-${i}`,
      url: `https://target-${i}.example.com/mcp`,
    }));
    expect(() => gateway({ config: { targets } })).toThrow(/^targets: .*4096-byte limit/);
  });

  test('inline target headers are flagged: they would sit in plain text in the template', () => {
    const g = gateway({
      config: {
        targets: [{ name: 'a', url: 'https://a.example', headers: { authorization: 'Bearer x', 'x-tenant': 'acme' } }],
      },
    });
    const warnings = Annotations.fromStack(Stack.of(g)).findWarning(
      '*',
      Match.stringLikeRegexp('look like credentials \\(a: authorization\\)'),
    );
    expect(warnings).toHaveLength(1);
  });

  test('grantInvokeUrl lets an IAM principal call the URL', () => {
    const g = gateway({});
    const role = new iam.Role(Stack.of(g), 'Caller', { assumedBy: new iam.AccountRootPrincipal() });
    g.grantInvokeUrl(role);
    const statements = allStatements(Template.fromStack(Stack.of(g)));
    // Function URLs with AWS_IAM need both actions (the dual-auth model).
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: 'lambda:InvokeFunctionUrl',
        Condition: { StringEquals: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } },
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: 'lambda:InvokeFunction',
        Condition: { Bool: { 'lambda:InvokedViaFunctionUrl': true } },
      }),
    );
  });

  test('with gateway JWT auth the URL is public (NONE) and still streams', () => {
    const g = gateway({ config: { auth: jwtAuth } });
    const template = Template.fromStack(Stack.of(g));
    template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'NONE', InvokeMode: 'RESPONSE_STREAM' });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunctionUrl',
      Principal: '*',
      FunctionUrlAuthType: 'NONE',
    });
  });
});

describe('cdk-nag', () => {
  test('AwsSolutions and Serverless packs pass on the default and the fully tuned stack', () => {
    const contexts: Array<Record<string, unknown>> = [
      {},
      { alarmEmail: 'ops@example.com', secretArns: [SECRET], reservedConcurrency: 5 },
      { auth: jwtAuth }, // public URL (NONE)
    ];
    for (const context of contexts) {
      const { stack } = synth(context);
      for (const pack of [new AwsSolutionsChecks(), new ServerlessChecks()]) {
        const report = pack.validateScope(stack);
        expect({ pack: pack.name, violations: report.violations }).toEqual({ pack: pack.name, violations: [] });
      }
    }
  });

  test('every acknowledgement carries a written reason and is needed', () => {
    const { stack } = synth({ alarmEmail: 'ops@example.com' });
    const acknowledged = acknowledgements(stack);
    expect(acknowledged.map((a) => a.id).sort()).toEqual([
      'AwsSolutions-SMG4',
      'Serverless-LambdaDLQ',
      'Serverless-LambdaTracing',
      'Serverless-SNSRedrivePolicy',
    ]);
    for (const ack of acknowledged) expect(ack.reason.length).toBeGreaterThan(40);

    // Build the same stack with acknowledgements switched off: exactly these rules fire, none is a leftover.
    const spy = jest.spyOn(Validations.prototype, 'acknowledge').mockImplementation(() => undefined);
    try {
      const app = new App({ ...FAST, context: { ...FAST.context, alarmEmail: 'ops@example.com' } });
      const bare = buildGatewayApp(app);
      const fired = [new AwsSolutionsChecks(), new ServerlessChecks()]
        .flatMap((pack) => pack.validateScope(bare).violations.map((v) => v.ruleName))
        .sort();
      expect(fired).toEqual(acknowledged.map((a) => a.id).sort());
    } finally {
      spy.mockRestore();
    }
  });

  test('an unacknowledged finding fails synthesis', () => {
    const app = new App(FAST);
    const stack = buildGatewayApp(app);
    // An extra resource that breaks a rule (AwsSolutions-IAM5: wildcard resource).
    stack.gateway.role.addToPolicy(new iam.PolicyStatement({ actions: ['dynamodb:GetItem'], resources: ['*'] }));
    expect(() => app.synth()).toThrow(/AwsSolutions-IAM5/);
  });
});

/** Rule ids and reasons acknowledged anywhere in the tree. */
function acknowledgements(scope: IConstruct): Array<{ id: string; reason: string }> {
  return scope.node
    .findAll()
    .flatMap((node) => node.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
    .flatMap((m) => Object.entries(m.data as Record<string, string | { reason: string }>))
    .map(([id, value]) => ({
      id: id.replace(/^annotation::/i, ''),
      reason: typeof value === 'string' ? value : value.reason,
    }));
}

/**
 * The DynamoDB actions behind the SDK commands the deployed code (everything under lambda/) sends.
 * `ensureTable` (CreateTable/DescribeTable) exists for local runs only; the test checks that nothing
 * under lambda/ calls it.
 */
function dynamoActionsUsedByRuntime(): string[] {
  const files = listTs(join(ROOT, 'lambda'));
  const actions = new Set<string>();
  for (const file of files) {
    const source = readFileSync(file, 'utf8');
    if (!/@aws-sdk\/(client-dynamodb|lib-dynamodb)/.test(source)) {
      expect({ file, callsEnsureTable: /\bensureTable\(/.test(source) }).toEqual({ file, callsEnsureTable: false });
      continue;
    }
    const localOnly = source.indexOf('export async function ensureTable');
    const scanned = localOnly >= 0 ? source.slice(0, localOnly) : source;
    // A command imported under another name (`QueryCommand as ItemsQueryCommand`) is the command it names.
    const aliases = new Map([...scanned.matchAll(/(\w+)Command as (\w+)Command\b/g)].map((m) => [m[2], m[1]]));
    for (const match of scanned.matchAll(/new (\w+)Command\(/g)) {
      const command = aliases.get(match[1]!) ?? match[1];
      const action =
        command.endsWith('Item') || command === 'Query' || command === 'Scan' || command.endsWith('Table')
          ? command
          : `${command}Item`; // lib-dynamodb: Put → PutItem, BatchWrite → BatchWriteItem
      actions.add(`dynamodb:${action}`);
    }
  }
  return [...actions].sort();
}

/** `<prefix>:<Command>` for every `new <Command>Command(` in deployed files importing that SDK client. */
function sdkActionsUsedByRuntime(client: string, prefix: string): string[] {
  const actions = new Set<string>();
  for (const file of listTs(join(ROOT, 'lambda'))) {
    const source = readFileSync(file, 'utf8');
    if (!source.includes(`@aws-sdk/${client}`)) continue;
    for (const match of source.matchAll(/new (\w+)Command\(/g)) actions.add(`${prefix}:${match[1]}`);
  }
  return [...actions].sort();
}

function listTs(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return listTs(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}
