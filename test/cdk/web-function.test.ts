import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { ENV } from '../../lambda/config/environment';
import { WEB_FUNCTION_BUILD_DIR, WEB_FUNCTION_ENTRY, writeBundle } from '../../lib/bundling';
import { ContextError, readGatewayContext } from '../../lib/context';
import { SECRET_ACTIONS, TABLE_ACTIONS } from '../../lib/mcp-gateway';
import { buildGatewayApp, type McpGatewayStack } from '../../lib/mcp-gateway-stack';
import { GatewayMonitoring } from '../../lib/monitoring';
import { McpWebFunctionGateway, webFunctionAuthFor } from '../../lib/web-function-gateway';

/**
 * The Web Function form (`-c deploymentForm=webFunction`): the same table, role, secrets, configuration
 * and gateway alarms as the function-URL form, the gateway's own server in a Lambda Web Function
 * behind its endpoint. Apps skip bundling and CDK's CloudFormation schema validation, as in
 * mcp-gateway.test.ts, except the last describe; cdk-nag runs in every synthesis.
 */

const ROOT = join(__dirname, '..', '..');
const FAST = { builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] as string[] } };
const WEB = { deploymentForm: 'webFunction' };
const JWT = '{"type":"jwt","discoveryUrl":"https://idp.example.com/.well-known/openid-configuration"}';
const SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/upstream-AbC123';

function synth(context: Record<string, unknown> = {}): { stack: McpGatewayStack; template: Template } {
  const app = new App({ ...FAST, context: { ...FAST.context, ...context } });
  const stack = buildGatewayApp(app);
  return { stack, template: Template.fromStack(stack) };
}

// `any`: CloudFormation resources are untyped JSON.
type Resource = { Properties: Record<string, any>; [key: string]: any };
function only(template: Template, type: string): Resource {
  const found = Object.values(template.findResources(type));
  expect(found).toHaveLength(1);
  return found[0] as Resource;
}
function logicalIdOf(template: Template, type: string): string {
  const ids = Object.keys(template.findResources(type));
  expect(ids).toHaveLength(1);
  return ids[0];
}
function variables(template: Template): Record<string, any> {
  return only(template, 'AWS::Lambda::WebFunctionRevision').Properties.ServiceConfig.EnvironmentVariables;
}
function statements(template: Template, roleId: string): Array<{ Sid?: string; Action: unknown; Resource: unknown }> {
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => (policy as Resource).Properties.Roles.some((role: { Ref: string }) => role.Ref === roleId))
    .flatMap((policy) => (policy as Resource).Properties.PolicyDocument.Statement);
}
function contextError(context: Record<string, unknown>): ContextError {
  try {
    readGatewayContext({ tryGetContext: (key) => context[key], getAllContext: () => context });
  } catch (error) {
    expect(error).toBeInstanceOf(ContextError);
    return error as ContextError;
  }
  throw new Error('expected a ContextError');
}

describe('Web Function form (defaults)', () => {
  let template: Template;
  let stack: McpGatewayStack;
  beforeAll(() => {
    ({ template, stack } = synth(WEB));
  });

  test('one Web Function with its revision and endpoint: Node.js 24, the bundle index.mjs, 900 s, 64 requests per environment', () => {
    const webFunction = only(template, 'AWS::Lambda::WebFunction');
    const revision = only(template, 'AWS::Lambda::WebFunctionRevision');
    const endpoint = only(template, 'AWS::Lambda::WebFunctionEndpoint');
    const webFunctionId = logicalIdOf(template, 'AWS::Lambda::WebFunction');
    expect(revision.Properties.BuildConfig.RuntimeConfig).toEqual({ Runtime: 'nodejs24.x' });
    expect(revision.Properties.FunctionName).toEqual({ Ref: webFunctionId });
    expect(revision.Properties.ServiceConfig).toMatchObject({ TimeoutSeconds: 900, MaxConcurrencyPerEnvironment: 64 });
    // entryPoint reaches the runtime as AWS_LAMBDA_NODEJS_ENTRYPOINT.
    expect(variables(template).AWS_LAMBDA_NODEJS_ENTRYPOINT).toBe('index.mjs');
    // The code is the bundle staged into the stack's versioned code bucket.
    expect(revision.Properties.BuildConfig.CodeConfig.S3Object).toMatchObject({
      Bucket: { 'Fn::GetAtt': [expect.stringMatching('CodeCopy'), 'Bucket'] },
      VersionId: { 'Fn::GetAtt': [expect.stringMatching('CodeCopy'), 'VersionId'] },
    });
    expect(endpoint.Properties).toMatchObject({
      AuthType: 'IamAuth',
      EndpointType: 'HomeRegion',
      FunctionName: { 'Fn::GetAtt': [webFunctionId, 'FunctionArn'] },
    });
    expect(webFunction.Properties.FunctionName).toEqual(stack.webFunctionGateway.webFunctionName);
  });

  test('no function URL, alias or gateway Lambda function: the only functions are CDK deployment helpers', () => {
    template.resourceCountIs('AWS::Lambda::Url', 0);
    template.resourceCountIs('AWS::Lambda::Alias', 0);
    template.resourceCountIs('AWS::Lambda::Version', 0);
    template.resourceCountIs('AWS::CodeDeploy::DeploymentGroup', 0);
    const functions = template.findResources('AWS::Lambda::Function');
    // The code copy (its own role) and the managed code bucket's auto-delete handler.
    expect(Object.keys(functions).sort()).toEqual([
      expect.stringMatching(/^CustomS3AutoDeleteObjectsCustomResourceProviderHandler/),
      expect.stringMatching(/^CustomS3ObjectCopy/),
    ]);
    const copy = Object.entries(functions).find(([id]) => id.startsWith('CustomS3ObjectCopy'))![1] as Resource;
    const copyRole = stack.getLogicalId(stack.webFunctionGateway.codeCopyRole.node.defaultChild as never);
    expect(copy.Properties.Role).toEqual({ 'Fn::GetAtt': [copyRole, 'Arn'] });
    expect(copy.Properties.LoggingConfig.LogGroup).toEqual({ Ref: expect.stringMatching('GatewayCodeCopyLogs') });
    expect(() => stack.gateway).toThrow(/Web Function form/);
  });

  test('environment: the configuration, metrics names, source maps, the requestState key and the timeout; no function-URL CORS', () => {
    const env = variables(template);
    const tableId = stack.getLogicalId(stack.deployedGateway.table.node.defaultChild as never);
    expect(env).toMatchObject({
      POWERTOOLS_METRICS_NAMESPACE: 'McpGateway',
      POWERTOOLS_SERVICE_NAME: 'McpGateway',
      NODE_OPTIONS: '--enable-source-maps',
      [ENV.requestTimeoutSeconds]: '900',
      [ENV.requestStateSecretArn]: { Ref: expect.stringMatching('GatewayRequestStateKey') },
    });
    expect(env[ENV.cors]).toBeUndefined();
    expect(env[ENV.tracing]).toBeUndefined();
    const parts = env[ENV.config]['Fn::Join'][1] as Array<string | object>;
    expect(parts).toContainEqual({ Ref: tableId });
    const config = JSON.parse(parts.map((part) => (typeof part === 'string' ? part : '<TABLE>')).join(''));
    expect(config).toMatchObject({ targets: [], tableName: '<TABLE>', auth: { type: 'none' } });
  });

  test('the same table, log group and requestState key as the function-URL form', () => {
    const functionUrl = synth().template;
    for (const type of ['AWS::DynamoDB::Table', 'AWS::Logs::LogGroup', 'AWS::SecretsManager::Secret']) {
      const gatewayOwn = (t: Template) =>
        Object.fromEntries(Object.entries(t.findResources(type)).filter(([id]) => !id.includes('CodeCopy')));
      expect({ type, resources: gatewayOwn(template) }).toEqual({ type, resources: gatewayOwn(functionUrl) });
    }
  });

  test('the role: execution role of the revision; its log group, the table and the requestState secret, nothing else', () => {
    const roleId = stack.getLogicalId(stack.deployedGateway.role.node.defaultChild as never);
    const revision = only(template, 'AWS::Lambda::WebFunctionRevision');
    expect(revision.Properties.ServiceConfig.ExecutionRoleArn).toEqual({ 'Fn::GetAtt': [roleId, 'Arn'] });
    expect(revision.Properties.ServiceConfig.TelemetryConfig.LoggingConfig.LogGroup).toEqual({
      Ref: expect.stringMatching('GatewayLogs'),
    });
    // The revision is created once the role's permissions are in place.
    expect(revision.DependsOn).toContain(roleId);
    expect(revision.DependsOn.some((id: string) => id.startsWith('GatewayRoleDefaultPolicy'))).toBe(true);
    const tableId = stack.getLogicalId(stack.deployedGateway.table.node.defaultChild as never);
    expect(statements(template, roleId)).toEqual([
      {
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [expect.stringMatching('GatewayLogs'), 'Arn'] },
      },
      {
        Sid: 'GatewayTable',
        Action: [...TABLE_ACTIONS],
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [tableId, 'Arn'] },
      },
      {
        Sid: 'GatewaySecrets',
        Action: SECRET_ACTIONS[0],
        Effect: 'Allow',
        Resource: { Ref: expect.stringMatching('GatewayRequestStateKey') },
      },
    ]);
    const role = template.findResources('AWS::IAM::Role')[roleId] as Resource;
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
  });

  test('outputs: McpEndpoint is https://<endpoint domain>/mcp; GatewayUrl, UrlAuthType, TableName, FunctionName', () => {
    const endpointId = logicalIdOf(template, 'AWS::Lambda::WebFunctionEndpoint');
    const domain = { 'Fn::GetAtt': [endpointId, 'DomainName'] };
    const outputs = template.toJSON().Outputs;
    expect(outputs.McpEndpoint.Value).toEqual({ 'Fn::Join': ['', ['https://', domain, '/mcp']] });
    expect(outputs.GatewayUrl.Value).toEqual({ 'Fn::Join': ['', ['https://', domain, '/']] });
    expect(outputs.UrlAuthType.Value).toBe('IamAuth');
    expect(outputs.UrlAuthType.Description).toMatch(/^IamAuth: .*SigV4.*X-Amz-Content-SHA256/);
    expect(outputs.TableName.Value).toEqual({
      Ref: stack.getLogicalId(stack.deployedGateway.table.node.defaultChild as never),
    });
    expect(outputs.FunctionName.Value).toBe(only(template, 'AWS::Lambda::WebFunction').Properties.FunctionName);
    expect(outputs.AppConfig).toBeUndefined();
    expect(stack.templateOptions.description).toBe('MCP gateway: Lambda Web Function + DynamoDB');
  });

  test("monitoring: the gateway's own alarms and the table's; no alarm or widget on Lambda function metrics", () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[];
    expect(alarms).toHaveLength(4);
    expect(alarms.filter((alarm) => alarm.Properties.Namespace === 'AWS/Lambda')).toEqual([]);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { Namespace: 'McpGateway', MetricName: 'GatewayErrors' });
    const monitoring = stack.webFunctionGateway.monitoring;
    expect(monitoring.functionAlarms).toBeUndefined();
    expect(monitoring.alarms).toEqual([
      monitoring.gatewayErrorsAlarm,
      monitoring.expiredInputAlarm,
      monitoring.tableThrottlesAlarm,
      monitoring.targetListFailuresAlarm,
    ]);
    expect(() => monitoring.errorsAlarm).toThrow(/no function/);
    const body = JSON.stringify(only(template, 'AWS::CloudWatch::Dashboard').Properties.DashboardBody);
    expect(body).not.toContain('AWS/Lambda');
    expect(body).toContain('Input requests relayed');
  });

  test('cdk-nag (AwsSolutions, Serverless): no finding left, the code staging ones acknowledged with reasons', () => {
    const violations = [new AwsSolutionsChecks(), new ServerlessChecks()].flatMap((pack) =>
      pack.validateScope(stack).violations.map((v) => v.ruleName),
    );
    expect(violations).toEqual([]);
  });
});

describe('Web Function form from context', () => {
  test('timeoutSeconds is the Web Function timeout and every request deadline; maxConcurrencyPerEnvironment', () => {
    const { template } = synth({ ...WEB, timeoutSeconds: '120', maxConcurrencyPerEnvironment: '16' });
    expect(only(template, 'AWS::Lambda::WebFunctionRevision').Properties.ServiceConfig).toMatchObject({
      TimeoutSeconds: 120,
      MaxConcurrencyPerEnvironment: 16,
    });
    expect(variables(template)[ENV.requestTimeoutSeconds]).toBe('120');
    // Shorter than the function-URL form allows.
    expect(variables(synth({ ...WEB, timeoutSeconds: 3 }).template)[ENV.requestTimeoutSeconds]).toBe('3');
  });

  test('endpoint auth follows the configuration: iam (and none) → IamAuth, jwt → ApplicationManaged', () => {
    const iamAuth = synth({ ...WEB, auth: '{"type":"iam"}' }).template;
    expect(only(iamAuth, 'AWS::Lambda::WebFunctionEndpoint').Properties.AuthType).toBe('IamAuth');
    const jwt = synth({ ...WEB, auth: JWT }).template;
    expect(only(jwt, 'AWS::Lambda::WebFunctionEndpoint').Properties.AuthType).toBe('ApplicationManaged');
    const outputs = jwt.toJSON().Outputs;
    expect(outputs.UrlAuthType.Value).toBe('ApplicationManaged');
    expect(outputs.UrlAuthType.Description).toMatch(/^ApplicationManaged: .*public.*JWT/);
    expect(webFunctionAuthFor('iam')).toBe(lambda.WebFunctionAuthType.IAM_AUTH);
    expect(webFunctionAuthFor('none')).toBe(lambda.WebFunctionAuthType.IAM_AUTH);
    expect(webFunctionAuthFor('jwt')).toBe(lambda.WebFunctionAuthType.APPLICATION_MANAGED);
  });

  test('configSource appconfig, secrets, alarm e-mail and removal policy apply as in the other form', () => {
    const { template, stack } = synth({
      ...WEB,
      configSource: 'appconfig',
      secretArns: JSON.stringify([SECRET]),
      alarmEmail: 'ops@example.com',
      removalPolicy: 'destroy',
      logRetentionDays: '7',
    });
    const env = variables(template);
    expect(env[ENV.config]).toBeUndefined();
    expect(env[ENV.appConfig]).toBeDefined();
    expect(env[ENV.tableName]).toEqual({
      Ref: stack.getLogicalId(stack.deployedGateway.table.node.defaultChild as never),
    });
    const roleId = stack.getLogicalId(stack.deployedGateway.role.node.defaultChild as never);
    const all = statements(template, roleId);
    expect(all.find((s) => s.Sid === 'GatewaySecrets')?.Resource).toEqual(
      expect.arrayContaining([SECRET, { Ref: expect.stringMatching('GatewayRequestStateKey') }]),
    );
    expect(all.some((s) => JSON.stringify(s.Action).includes('appconfig:GetLatestConfiguration'))).toBe(true);
    expect(template.toJSON().Outputs.AppConfig).toBeDefined();
    template.resourceCountIs('AWS::SNS::Subscription', 1);
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
    // Both log groups (the gateway's and the code copy's) follow logRetentionDays and removalPolicy.
    const logGroups = Object.values(template.findResources('AWS::Logs::LogGroup')) as Resource[];
    expect(logGroups.map((group) => [group.Properties.RetentionInDays, group.DeletionPolicy])).toEqual([
      [7, 'Delete'],
      [7, 'Delete'],
    ]);
  });

  test('deploymentForm functionUrl, given explicitly, is the default template', () => {
    expect(synth({ deploymentForm: 'functionUrl' }).template.toJSON()).toEqual(synth().template.toJSON());
    expect(() => synth({ deploymentForm: 'functionUrl' }).stack.webFunctionGateway).toThrow(/function URL form/);
  });
});

describe('context keys that do not apply to the form are refused, naming the key', () => {
  test.each([
    ['memorySize', 2048, /^Invalid CDK context "memorySize": not supported with deploymentForm "webFunction": .*2 GB/],
    ['architecture', 'x86_64', /^Invalid CDK context "architecture": not supported .*arm64 only/],
    ['reservedConcurrency', 5, /^Invalid CDK context "reservedConcurrency": not supported .*no reserved concurrency/],
    [
      'gradualDeployment',
      'Canary10Percent5Minutes',
      /^Invalid CDK context "gradualDeployment": not supported .*no versions or aliases for CodeDeploy/,
    ],
    ['tracing', 'active', /^Invalid CDK context "tracing": not supported .*X-Ray/],
    [
      'vpc',
      JSON.stringify({ vpcId: 'vpc-0123456789abcdef0', subnetIds: ['subnet-0123456789abcdef0'] }),
      /^Invalid CDK context "vpc": not supported .*network connector/,
    ],
  ])('webFunction with %s (%p)', (key, value, message) => {
    const error = contextError({ ...WEB, [key]: value });
    expect(error.key).toBe(key);
    expect(error.message).toMatch(message);
  });

  test('maxConcurrencyPerEnvironment with the function-URL form (the default)', () => {
    for (const context of [{}, { deploymentForm: 'functionUrl' }]) {
      const error = contextError({ ...context, maxConcurrencyPerEnvironment: '32' });
      expect(error.key).toBe('maxConcurrencyPerEnvironment');
      expect(error.message).toMatch(/applies only to deploymentForm "webFunction"/);
    }
  });

  test('timeoutSeconds below 30 with the function-URL form; out of range in either', () => {
    expect(contextError({ timeoutSeconds: 10 }).message).toMatch(
      /^Invalid CDK context "timeoutSeconds": must be at least 30 with deploymentForm "functionUrl"/,
    );
    expect(contextError({ ...WEB, timeoutSeconds: 2 }).key).toBe('timeoutSeconds');
    expect(contextError({ ...WEB, timeoutSeconds: 901 }).key).toBe('timeoutSeconds');
    expect(contextError({ ...WEB, maxConcurrencyPerEnvironment: 129 }).key).toBe('maxConcurrencyPerEnvironment');
    expect(contextError({ ...WEB, maxConcurrencyPerEnvironment: 0 }).key).toBe('maxConcurrencyPerEnvironment');
    expect(contextError({ deploymentForm: 'lambda' }).key).toBe('deploymentForm');
  });

  test("the defaults cdk.json lists (memorySize 1024, arm64, gradualDeployment none, tracing off) are the Web Function's too", () => {
    const cdkJson = JSON.parse(readFileSync(join(ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
    const context: Record<string, unknown> = { ...cdkJson.context, ...WEB, gradualDeployment: 'none', tracing: 'off' };
    const settings = readGatewayContext({ tryGetContext: (key) => context[key], getAllContext: () => context });
    expect(settings.deployment).toMatchObject({
      deploymentForm: 'webFunction',
      memorySize: 1024,
      architecture: 'arm64',
    });
  });
});

describe('McpWebFunctionGateway construct', () => {
  function gatewayIn(props: ConstructorParameters<typeof McpWebFunctionGateway>[2]) {
    const app = new App(FAST);
    return new McpWebFunctionGateway(new Stack(app, 'S'), 'Gateway', props);
  }

  test('the variables the construct sets cannot be overridden through environment', () => {
    for (const name of [ENV.requestTimeoutSeconds, 'AWS_LAMBDA_NODEJS_ENTRYPOINT', ENV.config, ENV.cors]) {
      expect(() => gatewayIn({ environment: { [name]: '1' } })).toThrow(`environment: ${name} is set by the construct`);
    }
  });

  test('the timeout must leave pending requests time to expire while streamRelease is never', () => {
    expect(() =>
      gatewayIn({
        timeout: Duration.seconds(60),
        config: { streamRelease: 'never', pendingRequestTimeoutSeconds: 60 },
      }),
    ).toThrow(/pendingRequestTimeoutSeconds \(60\) must be less than the function timeout \(60 s\)/);
  });

  test('an entry that does not exist is refused', () => {
    expect(() => gatewayIn({ entry: join(ROOT, 'lambda', 'no-such-server.ts') })).toThrow(/does not exist/);
  });

  test('grantInvoke gives lambda:InvokeWebFunctionEndpoint on the endpoint', () => {
    const gateway = gatewayIn({});
    const stack = Stack.of(gateway);
    const role = new iam.Role(stack, 'Caller', { assumedBy: new iam.AccountRootPrincipal() });
    gateway.grantInvoke(role);
    Template.fromStack(stack).hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: [
          Match.objectLike({
            Action: 'lambda:InvokeWebFunctionEndpoint',
            Resource: { 'Fn::GetAtt': [Match.stringLikeRegexp('GatewayWebFunctionEndpoint'), 'EndpointArn'] },
          }),
        ],
      },
      Roles: [{ Ref: Match.stringLikeRegexp('Caller') }],
    });
  });

  test('GatewayMonitoring without a function: four alarms, no function alarm to hand out', () => {
    const stack = new Stack(new App(FAST), 'M');
    const table = new dynamodb.Table(stack, 'Table', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    });
    const monitoring = new GatewayMonitoring(stack, 'Monitoring', {
      table,
      timeout: Duration.seconds(60),
      metricsNamespace: 'Custom',
      metricsServiceName: 'svc',
    });
    expect(monitoring.alarms).toHaveLength(4);
    expect(() => monitoring.throttlesAlarm).toThrow(/GatewayMonitoring.throttlesAlarm: .*no function/);
    Template.fromStack(stack).resourceCountIs('AWS::CloudWatch::Alarm', 4);
  });
});

/** With bundling and CDK's CloudFormation validation, as `cdk synth -c deploymentForm=webFunction` does. */
describe('Web Function form synthesized for deployment', () => {
  const outdir = mkdtempSync(join(tmpdir(), 'mcp-gateway-web-function-'));
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  test('the code asset is the web-function bundle (index.mjs and its chunks), the bytes writeBundle writes', () => {
    const app = new App({ outdir, context: WEB });
    const stack = buildGatewayApp(app);
    const assembly = app.synth(); // cdk-nag and CloudFormation validation: a finding throws
    expect(assembly.getStackByName(stack.stackName).template.Resources).toBeDefined();
    const assets = readdirSync(outdir).filter(
      (name) => name.startsWith('asset.') && existsSync(join(outdir, name, 'index.mjs')),
    );
    expect(assets).toHaveLength(1); // the Web Function's only: no function-URL handler is bundled
    const files = readdirSync(join(outdir, assets[0]), { recursive: true, encoding: 'utf8' })
      .filter((name) => statSync(join(outdir, assets[0], name)).isFile())
      .sort();
    const built = join(outdir, 'built');
    expect(writeBundle(WEB_FUNCTION_ENTRY, built, ROOT, WEB_FUNCTION_BUILD_DIR)).toEqual(files);
    for (const name of files) {
      expect([name, readFileSync(join(outdir, assets[0], name))]).toEqual([name, readFileSync(join(built, name))]);
    }
    // The server entry, not the function-URL handler: it listens where the runtime says.
    expect(readFileSync(join(built, 'index.mjs'), 'utf8')).toContain('AWS_LAMBDA_HTTP_ENDPOINT');
  }, 120_000);
});
