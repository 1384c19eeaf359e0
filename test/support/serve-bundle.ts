/**
 * Serves the esbuild bundle (dist/lambda/index.mjs, what CDK deploys) behind the local function-URL
 * invoker, in its own process: `tsx test/support/serve-bundle.ts`. Prints `ready <url> <importMs>`.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { installLambdaGlobals, startLambdaInvoker } from './lambda-invoker';

async function main(): Promise<void> {
  installLambdaGlobals();
  const started = performance.now();
  const bundle = (await import(pathToFileURL(resolve(__dirname, '../../dist/lambda/index.mjs')).href)) as {
    handler: Parameters<typeof startLambdaInvoker>[0];
  };
  const importMs = performance.now() - started;
  const invoker = await startLambdaInvoker(bundle.handler);
  console.log(`ready ${invoker.url.replace(/\/$/, '')}/mcp ${importMs.toFixed(0)}`);
  process.on('SIGTERM', () => void invoker.close().then(() => process.exit(0)));
}

void main();
