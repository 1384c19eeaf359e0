import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { parseConfig } from '../../lambda/config/schema';
import { APPCONFIG_ENV, CONFIG_ENV, TABLE_NAME_ENV } from '../../lambda/config/source';
import { MetricName } from '../../lambda/observability/metrics';
import { APPCONFIG_ACTIONS, configurationJsonSchema } from '../../lib/app-config';
import { esbuildOptions, HANDLER_ENTRY, LAMBDA_BUNDLE } from '../../lib/bundling';
import { GRADUAL_DEPLOYMENTS } from '../../lib/context';
import { CORS_ALLOWED_HEADERS, DEFAULT_ENTRY, LIVE_ALIAS, McpGateway, TABLE_ACTIONS } from '../../lib/mcp-gateway';
import { buildGatewayApp, type McpGatewayStack } from '../../lib/mcp-gateway-stack';
import { GatewayMonitoring, SERVER_ERROR_CODE } from '../../lib/monitoring';

/** Deploying and operating (the stack's options for it), one describe per point. Apps skip bundling, as in mcp-gateway.test.ts. */

const ROOT = join(__dirname, '..', '..');
const FAST = { builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] as string[] } };
const JWT = '{"type":"jwt","discoveryUrl":"https://idp.example.com/.well-known/openid-configuration"}';
const VPC = {
  vpcId: 'vpc-0123456789abcdef0',
  subnetIds: ['subnet-0123456789abcdef0', 'subnet-0fedcba9876543210'],
};

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
function logicalId(template: Template, type: string): string {
  const ids = Object.keys(template.findResources(type));
  expect(ids).toHaveLength(1);
  return ids[0];
}
function statements(template: Template): Array<{ Sid?: string; Action: string | string[]; Resource: unknown }> {
  return Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
    (policy) => (policy as Resource).Properties.PolicyDocument.Statement,
  );
}
function nagViolations(stack: Stack): string[] {
  return [new AwsSolutionsChecks(), new ServerlessChecks()].flatMap((pack) =>
    pack.validateScope(stack).violations.map((v) => v.ruleName),
  );
}

describe('outputs', () => {
  test('McpEndpoint is the full …/mcp URL of the function URL (which ends with /)', () => {
    const { template } = synth();
    const url = logicalId(template, 'AWS::Lambda::Url');
    template.hasOutput('McpEndpoint', {
      Value: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [url, 'FunctionUrl'] }, 'mcp']] },
      Description: Match.stringLikeRegexp('MCP endpoint'),
    });
    template.hasOutput('GatewayUrl', {
      Value: { 'Fn::GetAtt': [url, 'FunctionUrl'] },
      Description: Match.stringLikeRegexp('McpEndpoint'),
    });
  });

  test('UrlAuthType describes its own value: SigV4 only for AWS_IAM', () => {
    const iamOutput = synth().template.findOutputs('UrlAuthType').UrlAuthType;
    expect(iamOutput.Value).toBe('AWS_IAM');
    expect(iamOutput.Description).toMatch(/^AWS_IAM: .*SigV4/);
    const publicOutput = synth({ auth: JWT }).template.findOutputs('UrlAuthType').UrlAuthType;
    expect(publicOutput.Value).toBe('NONE');
    expect(publicOutput.Description).toMatch(/^NONE: .*JWT/);
    expect(publicOutput.Description).not.toMatch(/SigV4|AWS_IAM/);
  });

  test('every output has a description', () => {
    for (const context of [{}, { configSource: 'appconfig' }]) {
      const outputs = synth(context).template.toJSON().Outputs as Record<string, { Description?: string }>;
      for (const [name, output] of Object.entries(outputs)) {
        expect({ name, described: (output.Description ?? '').length > 20 }).toEqual({ name, described: true });
      }
    }
  });
});

describe('version and alias', () => {
  test('a published version behind the alias "live", and the function URL serves the alias', () => {
    const { template } = synth();
    const fn = logicalId(template, 'AWS::Lambda::Function');
    const version = logicalId(template, 'AWS::Lambda::Version');
    template.hasResourceProperties('AWS::Lambda::Version', { FunctionName: { Ref: fn } });
    template.hasResourceProperties('AWS::Lambda::Alias', {
      Name: LIVE_ALIAS,
      FunctionName: { Ref: fn },
      FunctionVersion: { 'Fn::GetAtt': [version, 'Version'] },
    });
    template.hasResourceProperties('AWS::Lambda::Url', {
      TargetFunctionArn: { 'Fn::GetAtt': [fn, 'Arn'] },
      Qualifier: LIVE_ALIAS,
      InvokeMode: 'RESPONSE_STREAM',
    });
    // Without gradual deployment the alias moves at once: no CodeDeploy.
    template.resourceCountIs('AWS::CodeDeploy::DeploymentGroup', 0);
    expect(only(template, 'AWS::Lambda::Alias').UpdatePolicy).toBeUndefined();
  });

  test('a public (JWT) URL grants invoke on the alias only', () => {
    const { template } = synth({ auth: JWT });
    const alias = logicalId(template, 'AWS::Lambda::Alias');
    const permissions = Object.values(template.findResources('AWS::Lambda::Permission')) as Resource[];
    expect(permissions.length).toBeGreaterThan(0);
    for (const permission of permissions) expect(permission.Properties.FunctionName).toEqual({ Ref: alias });
    expect(permissions.map((p) => p.Properties.Action)).toContain('lambda:InvokeFunctionUrl');
  });

  test('grantInvokeUrl names the alias ARN, not every version', () => {
    const app = new App(FAST);
    const stack = new Stack(app, 'S');
    const gateway = new McpGateway(stack, 'Gateway');
    const caller = new iam.Role(stack, 'Caller', { assumedBy: new iam.AccountRootPrincipal() });
    gateway.grantInvokeUrl(caller);
    const template = Template.fromStack(stack);
    const alias = logicalId(template, 'AWS::Lambda::Alias');
    const invokeUrl = statements(template).find((s) => s.Action === 'lambda:InvokeFunctionUrl');
    expect(invokeUrl?.Resource).toEqual({ Ref: alias });
  });
});

describe('gradual deployment (CodeDeploy)', () => {
  test('Canary10Percent5Minutes: CodeDeploy shifts the alias and rolls back on the alarms', () => {
    const { template, stack } = synth({ gradualDeployment: 'Canary10Percent5Minutes' });
    template.hasResourceProperties('AWS::CodeDeploy::DeploymentGroup', {
      DeploymentConfigName: 'CodeDeployDefault.LambdaCanary10Percent5Minutes',
      AutoRollbackConfiguration: {
        Enabled: true,
        Events: Match.arrayWith(['DEPLOYMENT_FAILURE', 'DEPLOYMENT_STOP_ON_ALARM']),
      },
    });
    const group = only(template, 'AWS::CodeDeploy::DeploymentGroup');
    const monitoring = stack.gateway.monitoring;
    const rollbackAlarms = [monitoring.errorsAlarm, monitoring.throttlesAlarm, monitoring.gatewayErrorsAlarm].map(
      (alarm) => ({ Name: { Ref: stack.getLogicalId(alarm.node.defaultChild as never) } }),
    );
    expect(group.Properties.AlarmConfiguration).toMatchObject({ Enabled: true });
    expect(group.Properties.AlarmConfiguration.Alarms).toEqual(rollbackAlarms);
    expect(only(template, 'AWS::Lambda::Alias').UpdatePolicy).toEqual({
      CodeDeployLambdaAliasUpdate: {
        ApplicationName: { Ref: expect.stringMatching(/Deployment/) },
        DeploymentGroupName: { Ref: expect.stringMatching(/Deployment/) },
      },
    });
    expect(nagViolations(stack)).toEqual([]);
  });

  test.each(GRADUAL_DEPLOYMENTS.filter((name) => name !== 'none'))(
    '%s maps to its CodeDeployDefault.Lambda… configuration',
    (name) => {
      synth({ gradualDeployment: name }).template.hasResourceProperties('AWS::CodeDeploy::DeploymentGroup', {
        DeploymentConfigName: `CodeDeployDefault.Lambda${name}`,
      });
    },
  );
});

describe('alarms on the gateway metrics and on DynamoDB throttling', () => {
  test("server-side GatewayErrors (code -32603) in the gateway's namespace and service", () => {
    synth({ stackName: 'GatewayProd' }).template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'McpGateway',
      MetricName: MetricName.GatewayErrors,
      Dimensions: Match.arrayEquals([
        { Name: 'code', Value: SERVER_ERROR_CODE },
        { Name: 'service', Value: 'GatewayProd' },
      ]),
      Statistic: 'Sum',
      Threshold: 5,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
  });

  test('ExpiredInputRequests over every method (Metrics Insights query on the service)', () => {
    const { template } = synth({ stackName: 'GatewayProd' });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: [
        {
          Id: 'expr_1',
          Expression: `SELECT SUM(${MetricName.ExpiredInputRequests}) FROM SCHEMA("McpGateway", method, service) WHERE service = 'GatewayProd'`,
          Period: 300,
          ReturnData: true,
        },
      ],
      Threshold: 3,
    });
  });

  test('table read and write throttle events', () => {
    const { template } = synth();
    const table = logicalId(template, 'AWS::DynamoDB::Table');
    const metric = (name: string) =>
      Match.objectLike({
        MetricStat: Match.objectLike({
          Metric: {
            Namespace: 'AWS/DynamoDB',
            MetricName: name,
            Dimensions: [{ Name: 'TableName', Value: { Ref: table } }],
          },
          Stat: 'Sum',
        }),
      });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'FILL(reads, 0) + FILL(writes, 0)' }),
        metric('ReadThrottleEvents'),
        metric('WriteThrottleEvents'),
      ]),
      Threshold: 1,
    });
  });

  test('the e-mail topic gets every alarm, the new ones included', () => {
    const { template } = synth({ alarmEmail: 'ops@example.com' });
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[];
    expect(alarms).toHaveLength(7);
    for (const alarm of alarms)
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: expect.stringMatching(/Topic/) }]);
  });

  test('monitoring is a construct of its own, usable without the gateway', () => {
    const app = new App(FAST);
    const stack = new Stack(app, 'S');
    const fn = new lambda.Function(stack, 'Fn', {
      runtime: lambda.Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('exports.handler = async () => {}'),
    });
    const table = new dynamodb.Table(stack, 'Table', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    });
    const monitoring = new GatewayMonitoring(stack, 'Monitoring', {
      function: fn,
      table,
      timeout: Duration.seconds(60),
      metricsNamespace: 'Custom',
      metricsServiceName: 'svc',
    });
    expect(monitoring.alarms).toHaveLength(7);
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::CloudWatch::Alarm', 7);
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'Duration', Threshold: 54_000 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { Namespace: 'Custom', MetricName: 'GatewayErrors' });
  });
});

describe('VPC', () => {
  test('subnets and a created security group by id; least-privilege network interface permissions', () => {
    const { template, stack } = synth({ vpc: JSON.stringify(VPC) });
    const group = logicalId(template, 'AWS::EC2::SecurityGroup');
    template.hasResourceProperties('AWS::EC2::SecurityGroup', {
      VpcId: VPC.vpcId,
      SecurityGroupEgress: [{ CidrIp: '0.0.0.0/0', IpProtocol: '-1' }],
    });
    expect(only(template, 'AWS::EC2::SecurityGroup').Properties.SecurityGroupIngress).toBeUndefined();
    template.hasResourceProperties('AWS::Lambda::Function', {
      VpcConfig: { SubnetIds: VPC.subnetIds, SecurityGroupIds: [{ 'Fn::GetAtt': [group, 'GroupId'] }] },
    });
    const arn = (resource: string) => ({
      'Fn::Join': [
        '',
        ['arn:', { Ref: 'AWS::Partition' }, ':ec2:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, resource],
      ],
    });
    const vpcStatements = statements(template).filter((s) => s.Sid?.startsWith('GatewayVpc'));
    expect(vpcStatements).toEqual([
      {
        Sid: 'GatewayVpcDescribe',
        Effect: 'Allow',
        Action: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'],
        Resource: '*',
      },
      {
        Sid: 'GatewayVpcInterfaces',
        Effect: 'Allow',
        Action: [
          'ec2:AssignPrivateIpAddresses',
          'ec2:CreateNetworkInterface',
          'ec2:DeleteNetworkInterface',
          'ec2:UnassignPrivateIpAddresses',
        ],
        Resource: [
          arn(':network-interface/*'),
          arn(`:subnet/${VPC.subnetIds[0]}`),
          arn(`:subnet/${VPC.subnetIds[1]}`),
          {
            'Fn::Join': [
              '',
              [
                'arn:',
                { Ref: 'AWS::Partition' },
                ':ec2:',
                { Ref: 'AWS::Region' },
                ':',
                { Ref: 'AWS::AccountId' },
                ':security-group/',
                { 'Fn::GetAtt': [group, 'GroupId'] },
              ],
            ],
          },
        ],
      },
    ]);
    expect(only(template, 'AWS::IAM::Role').Properties.ManagedPolicyArns).toBeUndefined();
    expect(nagViolations(stack)).toEqual([]);
  });

  test('given security groups are used as they are, and nothing is looked up (synth stays offline)', () => {
    const app = new App({
      ...FAST,
      context: { ...FAST.context, vpc: { ...VPC, securityGroupIds: ['sg-0123456789abcdef0'] } },
    });
    const stack = buildGatewayApp(app);
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::EC2::SecurityGroup', 0);
    template.hasResourceProperties('AWS::Lambda::Function', {
      VpcConfig: { SubnetIds: VPC.subnetIds, SecurityGroupIds: ['sg-0123456789abcdef0'] },
    });
    expect(app.synth().manifest.missing).toBeUndefined();
  });

  test('no VPC by default: no VpcConfig and no EC2 permissions', () => {
    const { template } = synth();
    expect(only(template, 'AWS::Lambda::Function').Properties.VpcConfig).toBeUndefined();
    expect(JSON.stringify(statements(template))).not.toContain('ec2:');
  });
});

describe('configuration in AWS AppConfig', () => {
  const targets = Array.from({ length: 100 }, (_, i) => ({
    name: `target-${i}`,
    url: `https://target-${i}.example.com/mcp`,
  }));

  test('hosted configuration with a JSON Schema validator from the same zod schema, deployed at once', () => {
    const { template } = synth({ configSource: 'appconfig', targets: JSON.stringify(targets.slice(0, 2)) });
    template.resourceCountIs('AWS::AppConfig::Application', 1);
    template.resourceCountIs('AWS::AppConfig::Environment', 1);
    template.resourceCountIs('AWS::AppConfig::Deployment', 1);
    const profile = only(template, 'AWS::AppConfig::ConfigurationProfile');
    expect(profile.Properties).toMatchObject({
      LocationUri: 'hosted',
      Validators: [{ Type: 'JSON_SCHEMA', Content: configurationJsonSchema() }],
    });
    expect(JSON.parse(configurationJsonSchema())).toMatchObject({
      $schema: 'http://json-schema.org/draft-04/schema#',
      type: 'object',
      additionalProperties: false,
    });
    const version = only(template, 'AWS::AppConfig::HostedConfigurationVersion');
    expect(version.Properties.ContentType).toBe('application/json');
    const document = JSON.parse(version.Properties.Content);
    expect(document.tableName).toBeUndefined(); // the stack tells the function the table
    expect(parseConfig(document)).toEqual(parseConfig({ targets: targets.slice(0, 2) }));
    template.hasResource('AWS::AppConfig::ConfigurationProfile', { DeletionPolicy: 'Retain' });
  });

  test('the function gets the location and the table, not the configuration; it may read exactly that profile', () => {
    const { template } = synth({ configSource: 'appconfig' });
    const variables = only(template, 'AWS::Lambda::Function').Properties.Environment.Variables;
    expect(variables[CONFIG_ENV]).toBeUndefined();
    const [app, env, profile] = ['Application', 'Environment', 'ConfigurationProfile'].map((type) =>
      logicalId(template, `AWS::AppConfig::${type}`),
    );
    expect(variables[APPCONFIG_ENV]).toEqual({
      'Fn::Join': ['', [{ Ref: app }, '/', { Ref: env }, '/', { Ref: profile }]],
    });
    expect(variables[TABLE_NAME_ENV]).toEqual({ Ref: logicalId(template, 'AWS::DynamoDB::Table') });
    const read = statements(template).filter((s) => JSON.stringify(s.Action).includes('appconfig:'));
    expect(read).toEqual([
      {
        Effect: 'Allow',
        Action: [...APPCONFIG_ACTIONS],
        Resource: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':appconfig:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              ':application/',
              { Ref: app },
              '/environment/',
              { Ref: env },
              '/configuration/',
              { Ref: profile },
            ],
          ],
        },
      },
    ]);
    template.hasOutput('AppConfig', { Value: variables[APPCONFIG_ENV] });
  });

  test('a configuration larger than the 4 KB environment deploys through AppConfig, and the error says so', () => {
    expect(() => synth({ targets: JSON.stringify(targets) })).toThrow(
      /^targets: .*4096-byte limit; keep it in AWS AppConfig instead \(context configSource=appconfig\)/,
    );
    const { template, stack } = synth({ configSource: 'appconfig', targets: JSON.stringify(targets) });
    const document = JSON.parse(only(template, 'AWS::AppConfig::HostedConfigurationVersion').Properties.Content);
    expect(document.targets).toHaveLength(100);
    expect(nagViolations(stack)).toEqual([]);
  });

  test('the granted AppConfig actions are exactly the AppConfigData commands the runtime sends', () => {
    const used = new Set<string>();
    for (const file of listTs(join(ROOT, 'lambda'))) {
      const source = readFileSync(file, 'utf8');
      if (!source.includes('@aws-sdk/client-appconfigdata')) continue;
      for (const match of source.matchAll(/\b(\w+)Command\b/g)) used.add(`appconfig:${match[1]}`);
    }
    expect([...used].sort()).toEqual([...APPCONFIG_ACTIONS].sort());
    // The table grant is unchanged by the configuration source.
    const { template } = synth({ configSource: 'appconfig' });
    expect(statements(template).find((s) => s.Sid === 'GatewayTable')?.Action).toEqual([...TABLE_ACTIONS]);
  });

  test('destroy lets `cdk destroy` remove a profile read in the last hour', () => {
    const { template } = synth({ configSource: 'appconfig', removalPolicy: 'destroy' });
    template.hasResource('AWS::AppConfig::ConfigurationProfile', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ DeletionProtectionCheck: 'BYPASS' }),
    });
  });
});

describe('CORS on the function URL', () => {
  test('none by default', () => {
    expect(only(synth().template, 'AWS::Lambda::Url').Properties.Cors).toBeUndefined();
  });

  test('from the same cors.allowedOrigins the gateway uses, with the MCP headers', () => {
    const { template } = synth({ cors: '{"allowedOrigins":["http://localhost:6274","https://app.example.com"]}' });
    expect(only(template, 'AWS::Lambda::Url').Properties.Cors).toEqual({
      AllowOrigins: ['http://localhost:6274', 'https://app.example.com'],
      AllowMethods: ['POST', 'GET', 'DELETE'],
      AllowHeaders: [
        'content-type',
        'authorization',
        'mcp-session-id',
        'mcp-protocol-version',
        'mcp-method',
        'mcp-name',
        'last-event-id',
        'traceparent',
        'tracestate',
      ],
      ExposeHeaders: ['mcp-session-id'],
      MaxAge: 3600,
    });
    expect(CORS_ALLOWED_HEADERS).toHaveLength(9);
  });

  test('an invalid origin fails synthesis naming the key', () => {
    expect(() => synth({ cors: '{"allowedOrigins":["https://app.example.com/"]}' })).toThrow(
      /^Invalid CDK context "cors": .*scheme:\/\/host\[:port\].* at cors\.allowedOrigins\.0/,
    );
  });
});

describe('one set of esbuild options for scripts/build.mjs and the CDK bundling', () => {
  test('the build script and the construct bundle the handler with lib/bundling.ts writeBundle', () => {
    const script = readFileSync(join(ROOT, 'scripts', 'build.mjs'), 'utf8');
    expect(script).toMatch(
      /import \{ BUILD_DIR, HANDLER_ENTRY, WEB_FUNCTION_BUILD_DIR, WEB_FUNCTION_ENTRY, writeBundle \} from '\.\.\/lib\/bundling\.ts'/,
    );
    // Both forms' bundles, each for its own folder, with the one writeBundle.
    expect(script).toContain('writeBundle(entry, staging, ROOT, buildDir)');
    expect(script).toContain('build(HANDLER_ENTRY, BUILD_DIR);');
    expect(script).toContain('build(WEB_FUNCTION_ENTRY, WEB_FUNCTION_BUILD_DIR);');
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.build).toBe('tsx scripts/build.mjs');
    expect(relative(ROOT, DEFAULT_ENTRY)).toBe(HANDLER_ENTRY);
    // The construct's source bundling (test/cdk/synth.test.ts compares its asset with writeBundle's files).
    const construct = readFileSync(join(ROOT, 'lib', 'mcp-gateway.ts'), 'utf8');
    expect(construct).toContain('writeBundle(entry, outputDir, PROJECT_ROOT)');
  });

  test('the esbuild options carry every shared option, split into index.mjs and chunks', () => {
    const esbuild = esbuildOptions('in.ts', 'out');
    expect(esbuild).toMatchObject({
      entryPoints: { index: 'in.ts' },
      outdir: 'out',
      outExtension: { '.js': '.mjs' },
      bundle: true,
      format: LAMBDA_BUNDLE.format,
      platform: LAMBDA_BUNDLE.platform,
      target: LAMBDA_BUNDLE.target,
      minify: LAMBDA_BUNDLE.minify,
      keepNames: LAMBDA_BUNDLE.keepNames,
      sourcemap: 'linked',
      sourcesContent: LAMBDA_BUNDLE.sourcesContent,
      splitting: true,
      mainFields: LAMBDA_BUNDLE.mainFields,
      banner: { js: LAMBDA_BUNDLE.banner },
    });
    for (const key of Object.keys(LAMBDA_BUNDLE)) {
      expect({ key, esbuild: key in esbuild }).toEqual({ key, esbuild: true });
    }
  });
});

describe('cdk-nag across the new options', () => {
  test.each([
    ['VPC + AppConfig + canary + CORS + alarm e-mail', {}],
    ['public URL (JWT) + linear', { auth: JWT, gradualDeployment: 'Linear10PercentEvery1Minute' }],
  ])('%s: no unacknowledged finding', (_name, extra) => {
    const { stack } = synth({
      vpc: VPC,
      configSource: 'appconfig',
      gradualDeployment: 'Canary10Percent5Minutes',
      cors: { allowedOrigins: ['http://localhost:6274'] },
      alarmEmail: 'ops@example.com',
      ...extra,
    });
    expect(nagViolations(stack)).toEqual([]);
  });
});

function listTs(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return listTs(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}
