#!/usr/bin/env node
import { App } from 'aws-cdk-lib';
import { buildGatewayApp } from '../lib/mcp-gateway-stack';

/** CDK app entry: `npx cdk synth|deploy -c key=value ...`; context keys are documented in README.md ("Deploy"). */
const app = new App();
buildGatewayApp(app);
app.synth();
