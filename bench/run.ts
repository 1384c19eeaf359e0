/**
 * `npm run bench`: the gateway's overhead against a direct call, in one run, on loopback.
 * Prints p50/p95 and gateway/direct ratios per protocol era, DynamoDB requests per operation,
 * the Lambda bundle's size and import time, and a 200-session elicitation load over two gateway
 * processes sharing one DynamoDB endpoint. Writes bench/results/latest.json.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { SealedBox } from '../lambda/crypto/sealed-box';
import { argumentsDigest, RequestStateSealer } from '../lambda/stateless/request-state';
import { startCountedDynamo } from '../test/support/dynamo';
import { callAndAnswer, initSession, type Json, post, readMessage } from '../test/support/mcp-http';
import { type Child, startChild, startGatewayChild, startTarget } from './processes';
import { type Distribution, distribution, ratio } from './stats';

const N = Number(process.env.BENCH_CALLS ?? 400);
const WARMUP = 100; // the first few hundred calls of a process run slower (JIT)
const LOAD_SESSIONS = Number(process.env.BENCH_LOAD_SESSIONS ?? 200);
const accept = { result: { action: 'accept', content: { confirm: true } } };

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const started = performance.now();
  const value = await fn();
  return [performance.now() - started, value];
}

/** Direct and gateway calls alternate, so both see the same machine state. */
async function interleaved(
  direct: () => Promise<void>,
  gateway: () => Promise<void>,
  n = N,
): Promise<{ direct: Distribution; gateway: Distribution }> {
  for (let i = 0; i < Math.min(WARMUP, n); i++) {
    await direct();
    await gateway();
  }
  const d: number[] = [];
  const g: number[] = [];
  for (let i = 0; i < n; i++) {
    const first = i % 2 === 0;
    if (first) d.push((await timed(direct))[0]);
    g.push((await timed(gateway))[0]);
    if (!first) d.push((await timed(direct))[0]);
  }
  return { direct: distribution(d), gateway: distribution(g) };
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
};

/** A 2026-07-28 call: headers mirror the body, capabilities ride in `_meta`. */
async function modernCall(url: string, name: string, params: Json): Promise<Json> {
  const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name };
  const message = await readMessage(
    await post(url, headers, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, ...params, _meta: META } }),
  );
  if (!message.result) throw new Error(`unexpected answer: ${JSON.stringify(message)}`);
  return message.result;
}

async function inputRequiredRoundTrip(url: string, name: string): Promise<void> {
  const first = await modernCall(url, name, { arguments: { command: 'ls' } });
  const done = await modernCall(url, name, {
    arguments: { command: 'ls' },
    inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    requestState: first.requestState,
  });
  if (done.resultType !== 'complete') throw new Error(`round trip did not complete: ${JSON.stringify(done)}`);
}

/** Microseconds to seal and open one requestState envelope (AES-256-GCM). */
function sealOpenMicroseconds(): number {
  const sealer = new RequestStateSealer(
    SealedBox.fromSecrets({ current: 'bench-key-0123456789abcdefghijklmnopqrstuvwxyz' }),
    600,
  );
  const binding = {
    principal: 'p',
    target: 't',
    method: 'tools/call',
    name: 'n',
    argsDigest: argumentsDigest({ command: 'ls' }),
  };
  const started = performance.now();
  for (let i = 0; i < 10_000; i++)
    sealer.open(
      sealer.seal(binding, { kind: 'relay', targetState: `v1.${'x'.repeat(200)}`, confirmed: false }),
      binding,
    );
  return Math.round(((performance.now() - started) / 10_000) * 10_000) / 10;
}

async function echoCall(url: string, headers: Record<string, string>, name: string, id: number): Promise<void> {
  const res = await post(url, headers, {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: { text: 'bench' } },
  });
  const message = await readMessage(res);
  if (message.result?.content?.[0]?.text !== 'echo: bench')
    throw new Error(`unexpected answer: ${JSON.stringify(message)}`);
}

function bundleFigures(): { bytes: number; importMs: number } {
  const bundle = join(__dirname, '../dist/lambda/index.mjs');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: join(__dirname, '..'), stdio: 'ignore' });
  const script = `globalThis.awslambda={streamifyResponse:f=>f,HttpResponseStream:{}};const t=performance.now();await import(${JSON.stringify(bundle)});console.log(performance.now()-t)`;
  const runs = Array.from({ length: 5 }, () =>
    Number(execFileSync(process.execPath, ['--input-type=module', '-e', script]).toString()),
  );
  return { bytes: statSync(bundle).size, importMs: Math.round(distribution(runs).p50) };
}

async function main(): Promise<void> {
  const children: Child[] = [];
  // dynalite in its own process; gateway A reaches it directly (latency), gateway B through a
  // counting proxy (DynamoDB requests per operation). Both share its data, as two instances would.
  const dynalite = await startChild(['bench/serve-dynamo.ts'], /ready (\S+)/);
  children.push(dynalite);
  const dynamo = await startCountedDynamo(dynalite.url);
  const results: Json = {
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    calls: N,
  };
  try {
    const [target, modern] = await Promise.all([startTarget('legacy'), startTarget('modern')]);
    children.push(target, modern);
    const config = {
      targets: [
        { name: 'demo', url: target.url },
        { name: 'modern', url: modern.url },
      ],
      requestStateKeys: { current: 'bench-key-0123456789abcdefghijklmnopqrstuvwxyz' },
    };
    const [gatewayA, gatewayB] = await Promise.all([
      startGatewayChild(config, dynalite.url),
      startGatewayChild(config, dynamo.endpoint),
    ]);
    children.push(gatewayA, gatewayB);

    // 2025-11-25: a session on the target directly, and one through the gateway.
    const direct = await initSession(target.url);
    const viaGateway = await initSession(gatewayA.url, { capabilities: { elicitation: { form: {} } } });
    let id = 0;
    const legacy = await interleaved(
      () => echoCall(target.url, direct.headers, 'echo', ++id),
      () => echoCall(gatewayA.url, viaGateway.headers, 'demo___echo', ++id),
    );
    results.legacy = {
      ...legacy,
      p50Ratio: ratio(legacy.gateway.p50, legacy.direct.p50),
      p95Ratio: ratio(legacy.gateway.p95, legacy.direct.p95),
    };

    // The same with a tool that works for 50 ms, closer to what real tools take.
    const slowCall = async (url: string, headers: Record<string, string>, name: string) => {
      const message = await readMessage(
        await post(url, headers, {
          jsonrpc: '2.0',
          id: ++id,
          method: 'tools/call',
          params: { name, arguments: { ms: 50 } },
        }),
      );
      if (message.result?.content?.[0]?.text !== 'slept 50')
        throw new Error(`unexpected answer: ${JSON.stringify(message)}`);
    };
    const legacy50 = await interleaved(
      () => slowCall(target.url, direct.headers, 'slow'),
      () => slowCall(gatewayA.url, viaGateway.headers, 'demo___slow'),
      Math.ceil(N / 4),
    );
    results.legacy50msTool = {
      ...legacy50,
      p50Ratio: ratio(legacy50.gateway.p50, legacy50.direct.p50),
      p95Ratio: ratio(legacy50.gateway.p95, legacy50.direct.p95),
    };

    // 2026-07-28: stateless, straight to a 2026 target and through the gateway.
    const stateless = await interleaved(
      async () => void (await modernCall(modern.url, 'echo', { arguments: { text: 'bench' } })),
      async () => void (await modernCall(gatewayA.url, 'modern___echo', { arguments: { text: 'bench' } })),
    );
    results.stateless = {
      ...stateless,
      p50Ratio: ratio(stateless.gateway.p50, stateless.direct.p50),
      p95Ratio: ratio(stateless.gateway.p95, stateless.direct.p95),
    };
    const rounds = await interleaved(
      () => inputRequiredRoundTrip(modern.url, 'use_aws'),
      () => inputRequiredRoundTrip(gatewayA.url, 'modern___use_aws'),
    );
    results.statelessInputRequired = {
      ...rounds,
      p50Ratio: ratio(rounds.gateway.p50, rounds.direct.p50),
      p95Ratio: ratio(rounds.gateway.p95, rounds.direct.p95),
    };
    results.sealPlusOpenMicroseconds = sealOpenMicroseconds();

    // DynamoDB requests per operation.
    const counted = await initSession(gatewayB.url, { capabilities: { elicitation: { form: {} } } });
    await echoCall(gatewayB.url, counted.headers, 'demo___echo', ++id); // opens the target session
    dynamo.reset();
    await echoCall(gatewayB.url, counted.headers, 'demo___echo', ++id);
    const perCall = Object.fromEntries(dynamo.counts);
    dynamo.reset();
    await callAndAnswer(
      gatewayB.url,
      counted.headers,
      { id: ++id, params: { name: 'demo___use_aws', arguments: { command: 'x' } } },
      () => accept,
    );
    await new Promise((resolve) => setTimeout(resolve, 200)); // the cleanup write follows the response
    const perRound = Object.fromEntries(dynamo.counts);
    dynamo.reset();
    await modernCall(gatewayB.url, 'modern___echo', { arguments: { text: 'bench' } });
    await inputRequiredRoundTrip(gatewayB.url, 'modern___use_aws');
    const statelessCounts = Object.fromEntries(dynamo.counts);
    results.dynamodb = {
      legacyCallWithoutInput: perCall,
      legacyCallWithOneElicitation: perRound,
      statelessCallAndRoundTrip: statelessCounts,
    };

    // Load: sessions streamed by one process, answered through the other.
    const load: number[] = [];
    const [loadMs, outcomes] = await timed(() =>
      Promise.all(
        Array.from({ length: LOAD_SESSIONS }, async (_, i) => {
          const [streamer, answerer] = i % 2 === 0 ? [gatewayA, gatewayB] : [gatewayB, gatewayA];
          const { headers } = await initSession(streamer.url, { capabilities: { elicitation: { form: {} } } });
          const [ms, call] = await timed(() =>
            callAndAnswer(
              streamer.url,
              headers,
              { id: i, params: { name: 'demo___use_aws', arguments: { command: `cmd-${i}` } } },
              () => accept,
              {
                answerUrl: answerer.url,
              },
            ),
          );
          load.push(ms);
          return call.response.result?.content?.[0]?.text === `executed: cmd-${i}`;
        }),
      ),
    );
    const completed = outcomes.filter(Boolean).length;
    results.load = {
      sessions: LOAD_SESSIONS,
      completed,
      crossedOrLost: LOAD_SESSIONS - completed,
      wallMs: Math.round(loadMs),
      callMs: distribution(load),
    };

    results.bundle = bundleFigures();
  } finally {
    await Promise.all(children.map((child) => child.stop()));
    await dynamo.close();
  }

  mkdirSync(join(__dirname, 'results'), { recursive: true });
  writeFileSync(join(__dirname, 'results/latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  print(results);
}

function print(results: Json): void {
  const row = (label: string, r: Json) =>
    `${label.padEnd(22)} direct p50 ${r.direct.p50.toFixed(2)} ms  p95 ${r.direct.p95.toFixed(2)} ms | gateway p50 ${r.gateway.p50.toFixed(2)} ms  p95 ${r.gateway.p95.toFixed(2)} ms | ratio p50 ${r.p50Ratio}  p95 ${r.p95Ratio}`;
  console.log(
    `machine: ${results.machine.cpus} × ${results.machine.cpuModel}, ${results.machine.memoryGiB} GiB, Node ${results.machine.node}; ${results.calls} calls each`,
  );
  console.log(row('2025-11-25 tools/call', results.legacy));
  console.log(row('2025-11-25, 50 ms tool', results.legacy50msTool));
  console.log(row('2026-07-28 tools/call', results.stateless));
  console.log(row('2026-07-28 input round', results.statelessInputRequired));
  console.log(`requestState seal + open: ${results.sealPlusOpenMicroseconds} µs`);
  const db = results.dynamodb;
  console.log(
    `DynamoDB requests: 2025 call without input ${JSON.stringify(db.legacyCallWithoutInput)}; with one elicitation ${JSON.stringify(db.legacyCallWithOneElicitation)}; stateless call + input round ${JSON.stringify(db.statelessCallAndRoundTrip)}`,
  );
  const l = results.load;
  console.log(
    `load: ${l.sessions} sessions × 1 elicitation over 2 processes: ${l.completed} completed, ${l.crossedOrLost} crossed or lost, ${l.wallMs} ms wall; per call p50 ${l.callMs.p50} ms, p95 ${l.callMs.p95} ms, p99 ${l.callMs.p99} ms, max ${l.callMs.max} ms`,
  );
  console.log(
    `bundle: ${(results.bundle.bytes / 1024).toFixed(0)} KiB, import ${results.bundle.importMs} ms (median of 5)`,
  );
  console.log('figures written to bench/results/latest.json');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
