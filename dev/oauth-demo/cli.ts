import { parseArgs } from 'node:util';
import { isAddressInUse } from '../demo-targets';
import { DEFAULT_PORT, demoLines, startOAuthDemo } from './demo';

// As in dev/cli.ts: the AWS SDK's notice about its future Node 22 requirement does not apply to a local run.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const USAGE = `Usage: npm run oauth:demo -- [--port N]

Starts, on loopback, a test OAuth authorization server, an MCP server it protects, and the gateway with
that server as a per-user OAuth target (targets[].userOAuth), then prints how to try it.

  --port N    the gateway's port (0 picks a free one) [default: ${DEFAULT_PORT}, or a free one if it is in use]
  -h, --help  print this help and exit`;

/** How long a stop may take before the process exits anyway (a stuck stream must not keep it alive). */
const STOP_BOUND_MS = 10_000;

async function main(): Promise<void> {
  let values: { port?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      options: { port: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(USAGE);
    return;
  }
  let port: number | undefined;
  if (values.port !== undefined) {
    port = /^\d+$/.test(values.port) ? Number(values.port) : Number.NaN;
    if (!(port <= 65535)) {
      console.error(`--port: not a port number: ${values.port} (0–65535)`);
      process.exit(2);
    }
  }
  const demo = await startOAuthDemo({ port }).catch((error: unknown) => {
    console.error(
      isAddressInUse(error)
        ? `port ${error.port ?? port} is in use; choose another with --port N (0 picks a free one)`
        : `failed to start: ${(error as Error).message}`,
    );
    process.exit(1);
  });
  for (const line of demoLines(demo)) console.log(line);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: shutting down`);
    setTimeout(() => process.exit(1), STOP_BOUND_MS).unref();
    void demo.close().then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

void main();
