import { App, Stack } from 'aws-cdk-lib';
import { createGatewayFromEnvironment } from '../../lambda/app/bootstrap';
import { holderLeaseMsOf, readEnvironment } from '../../lambda/config/environment';
import { ConfigError } from '../../lambda/config/schema';
import { McpGateway } from '../../lib/mcp-gateway';
import { runCli } from '../support/cli';

/**
 * The gateway's environment variables are validated once, by one module shared by the runtime and the
 * CDK construct: a malformed value fails at start naming the variable, never NaN timers or an unknown
 * log level later.
 */

describe('the environment', () => {
  test('the Lambda cold start fails naming GATEWAY_KEEPALIVE_MS when it is not a number', async () => {
    await expect(createGatewayFromEnvironment({ GATEWAY_KEEPALIVE_MS: 'abc' })).rejects.toThrow(
      new ConfigError(
        'invalid environment: GATEWAY_KEEPALIVE_MS: must be a whole number of milliseconds from 50 to 600000, got "abc"',
      ),
    );
  });

  test('an unknown GATEWAY_LOG_LEVEL fails the cold start naming it and the allowed levels', async () => {
    await expect(createGatewayFromEnvironment({ GATEWAY_LOG_LEVEL: 'verbose' })).rejects.toThrow(
      'invalid environment: GATEWAY_LOG_LEVEL: must be DEBUG, INFO, WARN, ERROR or SILENT, got "verbose"',
    );
  });

  test('every malformed variable is named at once; empty means unset', () => {
    expect(() =>
      readEnvironment({
        GATEWAY_KEEPALIVE_MS: '1.5e3',
        GATEWAY_HOLDER_LEASE_MS: '10',
        GATEWAY_CORS: 'yes',
        GATEWAY_TRACING: 'on',
        DYNAMODB_ENDPOINT: 'localhost:8000',
        GATEWAY_LOG_LEVEL: '',
      }),
    ).toThrow(
      /^invalid environment: GATEWAY_CORS: must be unset, or "function-url", got "yes"; GATEWAY_TRACING: must be unset, or "active", got "on"; GATEWAY_KEEPALIVE_MS: .*got "1\.5e3"; GATEWAY_HOLDER_LEASE_MS: must be a whole number of milliseconds from 300 to 30000, got "10"; DYNAMODB_ENDPOINT: must be an http\(s\) URL, got "localhost:8000"$/,
    );
  });

  test('valid values come back typed', () => {
    expect(
      readEnvironment({
        GATEWAY_KEEPALIVE_MS: '250',
        GATEWAY_HOLDER_LEASE_MS: '1500',
        GATEWAY_LOG_LEVEL: 'SILENT',
        GATEWAY_CORS: 'function-url',
        DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000',
        UNRELATED: 'x',
      }),
    ).toEqual({
      keepAliveMs: 250,
      holderLeaseMs: 1500,
      logLevel: 'SILENT',
      cors: 'function-url',
      dynamodbEndpoint: 'http://127.0.0.1:8000',
    });
    expect(holderLeaseMsOf({ GATEWAY_HOLDER_LEASE_MS: '1500' })).toBe(1500);
    expect(holderLeaseMsOf({})).toBe(30_000);
  });

  test('npm start fails at start with one line naming the variable (exit 1)', async () => {
    const cli = runCli(['--port', '0', '--no-demo'], { GATEWAY_LOG_LEVEL: 'verbose' });
    try {
      const outcome = await Promise.race([cli.exited, cli.ready().then((url) => (url ? 'started' : 'exited'))]);
      expect(outcome).toBe(1);
      expect(cli.output()).toEqual({
        stdout: '',
        stderr: 'invalid environment: GATEWAY_LOG_LEVEL: must be DEBUG, INFO, WARN, ERROR or SILENT, got "verbose"\n',
      });
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGTERM');
    }
  }, 40_000);

  test('the CDK construct checks the variables it is given the same way, at synth', () => {
    const gateway = (environment: Record<string, string>) =>
      new McpGateway(new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'S'), 'Gateway', {
        environment,
      });
    expect(() => gateway({ GATEWAY_KEEPALIVE_MS: 'abc' })).toThrow(/^invalid environment: GATEWAY_KEEPALIVE_MS: /);
    expect(() => gateway({ GATEWAY_LOG_LEVEL: 'DEBUG', GATEWAY_KEEPALIVE_MS: '20000' })).not.toThrow();
  });
});
