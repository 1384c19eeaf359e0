import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startLambdaMode } from '../dev/lambda-mode/index';
import { startModernDemoTarget } from '../examples/targets/modern-demo-target';
import type { Json } from '../test/support/mcp-http';

/**
 * What the release policy costs and saves in held invocation time: one elicitation answered after
 * THINK_S seconds by the official TypeScript SDK client (v1, a 2025-11-25 session), through the
 * deployment bundle in `npm start -- --lambda` (function timeout 30 s), on a 2026-07-28 target (a call
 * that can be released). Per case: the invocation time the call's requests ran for in all (what a
 * function URL bills while the person thinks) and how many invocations it took.
 * - `held`: a client never seen resuming (the default `streamRelease: "proven"`, its first call);
 * - `trusted`: a client trusted to resume (on `streamReleaseClients`, as one seen resuming is):
 *   released after `streamReleaseAfterSeconds` (2 s), then each reconnect's look (200 ms every
 *   `streamReleaseRetryMs`, 2 s).
 */

const THINK_S = Number(process.env.BENCH_THINK_S ?? 10);

async function oneCall(url: string, name: string): Promise<void> {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async () => {
    await new Promise((resolve) => setTimeout(resolve, THINK_S * 1000));
    return { action: 'accept', content: { confirm: true } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    await client.callTool({ name: 'use_aws', arguments: { command: 'ls' } }, CallToolResultSchema, {
      timeout: 120_000,
    });
  } finally {
    await client.close();
  }
}

export async function heldTime(dynamodbEndpoint: string): Promise<Json> {
  const target = await startModernDemoTarget();
  const gateway = await startLambdaMode({
    port: 0,
    demo: false,
    dynamodbEndpoint,
    build: 'never',
    timeoutMs: 30_000,
    log: () => {},
    config: {
      logLevel: 'SILENT',
      toolNamePrefix: 'conditional',
      targets: [{ name: 'only', url: target.url }],
      streamReleaseClients: [{ name: 'bench trusted' }],
      // No standalone GET stream: only the call's own invocations are counted.
      clientStreamHoldSeconds: 0,
    },
  });
  try {
    const measure = async (client: string) => {
      const before = gateway.stats().invocationMs.length;
      await oneCall(gateway.url, client);
      // An invocation is counted once its environment reports its end, just after the response.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const during = gateway.stats().invocationMs.slice(before);
      return {
        invocations: during.length,
        invocationSeconds: Math.round(during.reduce((sum, ms) => sum + ms, 0)) / 1000,
        longestInvocationSeconds: Math.max(...during) / 1000,
      };
    };
    const held = await measure('bench unproven');
    const trusted = await measure('bench trusted');
    return {
      thinkSeconds: THINK_S,
      functionTimeoutSeconds: 30,
      client: '@modelcontextprotocol/sdk 1.32.2 (2025-11-25 session)',
      held,
      trusted,
      savedSeconds: Math.round((held.invocationSeconds - trusted.invocationSeconds) * 1000) / 1000,
    };
  } finally {
    await gateway.close();
    await target.close();
  }
}

if (require.main === module) {
  const endpoint = process.argv[2];
  if (!endpoint) throw new Error('usage: tsx bench/held-time.ts DYNAMODB_ENDPOINT');
  void heldTime(endpoint).then((result) => console.log(JSON.stringify(result, null, 2)));
}
