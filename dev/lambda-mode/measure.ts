/**
 * Figures for docs/performance.md: `npx tsx dev/lambda-mode/measure.ts [N]`.
 * Starts --lambda mode and the local server on one embedded DynamoDB and one demo target, then
 * measures the cold start, the first calls, and the same warm requests through both.
 */
import { startDemoTarget } from '../../examples/targets/demo-target';
import { startEmbeddedDynamo } from '../embedded-dynamodb';
import { startLocalGateway } from '../local-gateway';
import { startLambdaMode } from './index';

const N = Number(process.argv[2] ?? 50);
const ACCEPT = 'application/json, text/event-stream';

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const started = performance.now();
  const value = await fn();
  return [performance.now() - started, value];
}

async function rpc(url: string, headers: Record<string, string>, body: unknown): Promise<Response> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, ...headers },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res;
}

async function session(url: string): Promise<Record<string, string>> {
  const res = await rpc(
    url,
    {},
    {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'measure', version: '1' } },
    },
  );
  return { 'mcp-session-id': res.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
}

const echo = (url: string, headers: Record<string, string>, id: number) =>
  rpc(url, headers, {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'demo___echo', arguments: { text: 'x' } },
  });

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN).toFixed(1);
  return `median ${at(0.5)} ms, p90 ${at(0.9)} ms`;
}

async function series(run: (i: number) => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < N; i++) samples.push((await timed(() => run(i)))[0]);
  return samples;
}

async function main(): Promise<void> {
  const dynamo = await startEmbeddedDynamo();
  const demo = await startDemoTarget();
  const config = { targets: [{ name: 'demo', url: demo.url }], logLevel: 'SILENT' as const };
  const lambda = await startLambdaMode({
    port: 0,
    demo: false,
    config,
    dynamodbEndpoint: dynamo.endpoint,
    log: () => {},
  });
  const local = await startLocalGateway({
    port: 0,
    demo: false,
    config,
    dynamodbEndpoint: dynamo.endpoint,
    startupReport: false,
  });
  try {
    const rows: Array<[string, string]> = [];
    const [coldInit, lambdaHeaders] = await timed(() => session(lambda.url));
    rows.push(['cold start: first request (initialize), end to end', `${coldInit.toFixed(0)} ms`]);
    rows.push([
      '  of which init (process start → first /next, bundle loaded)',
      `${lambda.stats().detail[0]?.initMs} ms`,
    ]);
    const [firstCall] = await timed(() => echo(lambda.url, lambdaHeaders, 1));
    rows.push(['first tools/call in that environment (target session opened)', `${firstCall.toFixed(0)} ms`]);
    const localHeaders = await session(local.url);
    await echo(local.url, localHeaders, 1);

    const get = (url: string) => () => fetch(url).then((res) => res.arrayBuffer());
    const lambdaGet = await series(get(lambda.url));
    const localGet = await series(get(local.url));
    rows.push([`GET /mcp → 405, no I/O, x${N}: --lambda`, summary(lambdaGet)]);
    rows.push(['  same, local server', summary(localGet)]);
    const lambdaEcho = await series((i) => echo(lambda.url, lambdaHeaders, i + 10));
    const localEcho = await series((i) => echo(local.url, localHeaders, i + 10));
    rows.push([`tools/call demo___echo (DynamoDB + target), x${N}: --lambda`, summary(lambdaEcho)]);
    rows.push(['  same, local server', summary(localEcho)]);
    const median = (s: number[]) => [...s].sort((a, b) => a - b)[Math.floor(s.length / 2)] ?? Number.NaN;
    rows.push([
      'per-invocation overhead (median GET difference)',
      `${(median(lambdaGet) - median(localGet)).toFixed(1)} ms`,
    ]);
    const stats = lambda.stats();
    rows.push(['invocations / cold starts / freezes', `${stats.invocations} / ${stats.coldStarts} / ${stats.freezes}`]);
    console.log(`Node.js ${lambda.nodeVersion} in the environments, ${process.version} for the local server\n`);
    console.log('| figure | value |\n| --- | --- |');
    for (const [name, value] of rows) console.log(`| ${name} | ${value} |`);
  } finally {
    await local.close();
    await lambda.close();
    await demo.close();
    await dynamo.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
