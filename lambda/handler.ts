import { createStreamingHandler } from './adapters/streaming-handler';
import { createGatewayFromEnvironment } from './app/bootstrap';
import { systemClock } from './scheduling/clock';

/**
 * Lambda entry point: function URL with InvokeMode RESPONSE_STREAM. `awslambda` is a global of the
 * Node.js managed runtime. The gateway is built on the first invocation of each execution environment.
 */
export const handler = awslambda.streamifyResponse(
  // The gateway's clock is Node's in a deployment (bootstrap's default): the same one here.
  createStreamingHandler(() => createGatewayFromEnvironment(), {
    clock: systemClock,
    // Only in a real execution environment (or `--lambda`), never in a test process that imports this module.
    gracefulShutdown: process.env.AWS_LAMBDA_RUNTIME_API !== undefined,
  }),
);
