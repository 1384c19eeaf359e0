import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { ContextError, readGatewayContext } from '../../lib/context';
import { buildGatewayApp } from '../../lib/mcp-gateway-stack';

/** The per-principal session limits are deploy-time settings, and an open CORS setting deploys behind SigV4. */
const read = (context: Record<string, unknown>) =>
  readGatewayContext({ tryGetContext: (key) => context[key], getAllContext: () => context });

describe('CDK context for the per-principal limits', () => {
  test('-c maxSessionsPerPrincipal and -c initializeRatePerMinute reach the configuration; the defaults otherwise', () => {
    expect(read({ maxSessionsPerPrincipal: '50', initializeRatePerMinute: '20' }).config).toMatchObject({
      maxSessionsPerPrincipal: 50,
      initializeRatePerMinute: 20,
    });
    expect(read({}).config).toMatchObject({ maxSessionsPerPrincipal: 1000, initializeRatePerMinute: 300 });
  });

  test('a value out of range names the key', () => {
    expect(() => read({ maxSessionsPerPrincipal: '0' })).toThrow(ContextError);
    expect(() => read({ initializeRatePerMinute: 'many' })).toThrow(/initializeRatePerMinute/);
  });
});

test('deployed, cors ["*"] with auth none is served behind SigV4 (AWS_IAM), which no web page can sign', () => {
  const app = new App({
    // No esbuild and no CloudFormation schema validation (seconds of start-up): test/cdk/synth.test.ts does both.
    builtinCloudFormationValidation: false,
    context: { 'aws:cdk:bundling-stacks': [], cors: '{"allowedOrigins":["*"]}' },
  });
  const template = Template.fromStack(buildGatewayApp(app));
  template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'AWS_IAM', Cors: { AllowOrigins: ['*'] } });
});
