import { serveOnNode } from './adapters/node-http';
import { createGatewayFromEnvironment } from './app/bootstrap';
import { readEnvironment } from './config/environment';
import { systemClock } from './scheduling/clock';

/**
 * Lambda Web Function entry point: the gateway core on node:http in the execution environment, many
 * requests at once, listening where the runtime says (`AWS_LAMBDA_HTTP_ENDPOINT`, `host:port`). The
 * same core as the function-URL handler (`handler.ts`); what differs is the platform's contract:
 * - the function's timeout cuts every request still open: each request's deadline is its start plus
 *   `GATEWAY_REQUEST_TIMEOUT_SECONDS` (the stack sets it to the timeout), so a waiting call is released
 *   (or ended) before the cut, as in the other form;
 * - scale-in sends SIGTERM, then about a second before the kill: no new connection is taken, every call
 *   that can go on elsewhere is released (its client's reconnect takes it over on another environment),
 *   the others are ended with a retryable error, and the process exits once their responses are written.
 */

/** From SIGTERM to the kill the platform gives about 1 s; the calls get most of it, the responses the rest. */
const SHUTDOWN_CALLS_MS = 700;
const SHUTDOWN_FLUSH_MS = 200;
/** Without a configured timeout: the Web Function's own default. */
const DEFAULT_TIMEOUT_SECONDS = 30;

/** `host:port` as the runtime gives it (an IPv6 host in brackets or bare). */
export function parseEndpoint(value: string | undefined): { host: string; port: number } {
  const match = /^\[?([^\]]*?)\]?:(\d{1,5})$/.exec(value ?? '');
  const port = Number(match?.[2]);
  if (!match?.[1] || port < 1 || port > 65535) {
    throw new Error(`AWS_LAMBDA_HTTP_ENDPOINT must be host:port, got ${JSON.stringify(value)}`);
  }
  return { host: match[1], port };
}

export async function startWebFunction(env: NodeJS.ProcessEnv = process.env): Promise<{ stop(): Promise<void> }> {
  const { host, port } = parseEndpoint(env.AWS_LAMBDA_HTTP_ENDPOINT);
  const timeoutSeconds = readEnvironment(env).requestTimeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  const gateway = await createGatewayFromEnvironment(env, SHUTDOWN_CALLS_MS);
  const server = await serveOnNode(gateway, {
    host,
    port,
    requestTimeoutMs: timeoutSeconds * 1000,
    behindEndpoint: true,
    allowedOrigins: gateway.allowedOrigins,
    // The gateway's clock is Node's in a deployment (bootstrap's default): the same one here.
    clock: systemClock,
  });
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      server.stopAccepting();
      await gateway.shutdown?.().catch((error: unknown) => console.error('[gateway] shutdown failed', error));
      // The responses of released and ended calls are written (their streams end), then the rest is cut.
      await new Promise((resolve) => setTimeout(resolve, SHUTDOWN_FLUSH_MS));
      await server.close();
    })();
    return stopping;
  };
  return { stop };
}

// Run as the Web Function's entry (the bundle's index.mjs); a test importing this module starts nothing.
if (process.env.AWS_LAMBDA_HTTP_ENDPOINT && !process.env.JEST_WORKER_ID) {
  startWebFunction().then(
    (running) => {
      process.once('SIGTERM', () => {
        void running.stop().finally(() => process.exit(0));
      });
    },
    (error: unknown) => {
      console.error('[gateway] the Web Function could not start', error);
      process.exit(1);
    },
  );
}
