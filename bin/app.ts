#!/usr/bin/env node
import { App } from 'aws-cdk-lib';
import { ConfigError } from '../lambda/config/schema';
import { ContextError } from '../lib/context';
import { buildGatewayApp } from '../lib/mcp-gateway-stack';

/**
 * CDK app entry: `npx cdk synth|deploy -c key=value ...`; context keys are documented in docs/deploy.md ("Context").
 * A mistake in the context or configuration is the user's to fix, not a bug: it is printed as one line,
 * without a stack trace, and the process exits non-zero so the cdk CLI stops. Anything else is a bug
 * and keeps its stack trace.
 */
const app = new App();
try {
  buildGatewayApp(app);
} catch (error) {
  if (!(error instanceof ContextError || error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}
app.synth();
