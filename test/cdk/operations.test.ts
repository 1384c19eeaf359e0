import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { ENV } from '../../lambda/config/environment';
import { CORS_BY_ENV } from '../../lambda/http/cors';
import { MetricName } from '../../lambda/observability/metrics';
import { readGatewayContext } from '../../lib/context';
import { buildGatewayApp, type McpGatewayStack } from '../../lib/mcp-gateway-stack';

/** Operations on the CDK side: optional X-Ray active tracing, the CORS owner, the target-listing alarm. */

const FAST = { builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] as string[] } };

function synth(context: Record<string, unknown> = {}): { stack: McpGatewayStack; template: Template } {
  const app = new App({ ...FAST, context: { ...FAST.context, ...context } });
  const stack = buildGatewayApp(app);
  return { stack, template: Template.fromStack(stack) };
}

// `any`: CloudFormation resources are untyped JSON.
type Resource = { Properties: Record<string, any> };
function theFunction(template: Template): Resource {
  const [fn, ...others] = Object.values(template.findResources('AWS::Lambda::Function')) as Resource[];
  expect(others).toHaveLength(0);
  return fn as Resource;
}
function statements(template: Template): Array<{ Action: string | string[]; Resource: unknown }> {
  return Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
    (policy) => (policy as Resource).Properties.PolicyDocument.Statement,
  );
}
function nagViolations(stack: McpGatewayStack): string[] {
  return [new AwsSolutionsChecks(), new ServerlessChecks()].flatMap((pack) =>
    pack.validateScope(stack).violations.map((v) => `${v.ruleName} ${JSON.stringify(v.violatingResources)}`),
  );
}
const xrayStatements = (template: Template) =>
  statements(template).filter((s) => [s.Action].flat().some((action) => action.startsWith('xray:')));

describe('X-Ray active tracing (context tracing)', () => {
  test('off by default: no tracing config, no X-Ray permission, no tracer in the function', () => {
    const { stack, template } = synth();
    const fn = theFunction(template);
    expect(fn.Properties.TracingConfig).toBeUndefined();
    expect(fn.Properties.Environment.Variables[ENV.tracing]).toBeUndefined();
    expect(xrayStatements(template)).toEqual([]);
    expect(nagViolations(stack)).toEqual([]);
  });

  test('tracing=active: Active mode, the X-Ray write actions on "*" (acknowledged with a reason), cdk-nag clean', () => {
    const { stack, template } = synth({ tracing: 'active' });
    const fn = theFunction(template);
    expect(fn.Properties.TracingConfig).toEqual({ Mode: 'Active' });
    expect(fn.Properties.Environment.Variables[ENV.tracing]).toBe('active');
    const xray = xrayStatements(template);
    expect(xray).toHaveLength(1);
    expect([xray[0]?.Action].flat().sort()).toEqual(['xray:PutTelemetryRecords', 'xray:PutTraceSegments']);
    expect(xray[0]?.Resource).toBe('*');
    expect(nagViolations(stack)).toEqual([]);
    // And the acknowledgement is needed: without it, exactly the wildcard finding fires.
    const spy = jest.spyOn(Validations.prototype, 'acknowledge').mockImplementation(() => undefined);
    try {
      // Validated without synthesizing: synthesis itself fails on an unacknowledged finding.
      const bare = buildGatewayApp(new App({ ...FAST, context: { ...FAST.context, tracing: 'active' } }));
      const fired = nagViolations(bare).map((line) => line.split(' ')[0]);
      expect(fired).toContain('AwsSolutions-IAM5[Resource::*]');
      expect(fired).not.toContain('Serverless-LambdaTracing');
    } finally {
      spy.mockRestore();
    }
  });

  test('an unknown value fails with the key named', () => {
    expect(() => readGatewayContext({ tryGetContext: (key) => (key === 'tracing' ? 'on' : undefined) })).toThrow(
      /^Invalid CDK context "tracing": .*"off"\|"active"/,
    );
  });
});

describe('CORS: the function URL is its only source when deployed', () => {
  test('the function is told so, with or without origins', () => {
    for (const context of [{}, { cors: '{"allowedOrigins":["http://localhost:6274"]}' }]) {
      const variables = theFunction(synth(context).template).Properties.Environment.Variables;
      expect(variables[CORS_BY_ENV]).toBe('function-url');
    }
  });
});

describe('targets that cannot be listed', () => {
  test('an alarm on TargetListFailures over every target of this service', () => {
    const { template } = synth();
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as Resource[];
    const alarm = alarms.find((a) =>
      JSON.stringify(a.Properties.Metrics ?? []).includes(`SUM(${MetricName.TargetListFailures})`),
    );
    expect(alarm?.Properties.Threshold).toBe(5);
    expect(JSON.stringify(alarm?.Properties.Metrics)).toContain("WHERE service = '");
    expect(alarm?.Properties.AlarmDescription).toMatch(/GET \/health\?targets=1/);
  });

  test('accessLog is a configuration key like every other (off with -c accessLog=false)', () => {
    const { stack } = synth({ accessLog: 'false' });
    expect(stack.gateway.config.accessLog).toBe(false);
    expect(synth().stack.gateway.config.accessLog).toBe(true);
  });
});
