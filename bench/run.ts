/**
 * `npm run bench`: what the gateway adds to a call, side by side in one run, on loopback.
 *
 * The official SDK clients (v1 for 2025-11-25, v2 pinned to 2026-07-28) call the same tool on the
 * same target directly and through a gateway process, alternating call by call, so both see the same
 * machine state; each row prints direct and gateway p50/p95, the time the gateway adds, the CPU the
 * gateway process(es) spent per call (their own `process.cpuUsage()`) and the DynamoDB requests per
 * call (counted inside the dynalite process, no extra hop). Each row has a floor row: the same calls
 * through a proxy that only forwards (one proxy per instance the row crosses), measured right after
 * it; "× floor" is the row's added p50 divided by its floor's. Every server runs in its own process:
 * two gateways sharing one dynalite (two instances of one deployment), a 2025-only target (v1 SDK,
 * sessions and a GET stream), a dual-era target (v2 SDK). Then: an elicitation answered through the
 * other instance, 200 concurrent sessions over both instances, and the cold start of the Lambda
 * bundle (import, median of 7; first calls served by `npm start -- --lambda`), and the invocation time
 * one elicitation holds under the release policy (held, and trusted to resume). Writes
 * bench/results/latest.json, or the file named by `--json FILE` (or BENCH_OUT).
 *
 * BENCH_CALLS (default 300) calls per row, BENCH_LOAD_SESSIONS (default 200), BENCH_ONLY=row,row to
 * run some rows only (with their floors; `onRuntimeNode` selects the two rows on Node 24),
 * BENCH_COLD=0 to skip the cold start. The two deployment forms side by side (bench/web-function.ts):
 * `lambdaLegacyEcho`, `lambdaModernEcho` (function URL, `--lambda`), `webFunctionLegacyEcho`,
 * `webFunctionModernEcho` (Web Function), each with its floor in the same emulator; `webFunctionWaiting`
 * (one environment holding 1, 64, 128 elicitations: memory, idle CPU) and, with it, the cost model
 * (WEB_FUNCTION_RATE_* inputs; `heldTime` in the same run adds its check).
 */
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { startLambdaMode } from '../dev/lambda-mode/index';
import { SealedBox } from '../lambda/crypto/sealed-box';
import { argumentsDigest, RequestStateSealer } from '../lambda/modern/request-state';
import { systemClock } from '../lambda/scheduling/clock';
import { createDocumentClient, ensureTable } from '../lambda/state/dynamo-client';
import type { Json } from '../test/support/mcp-http';
import { type RuntimeImage, resolveRuntimeImage } from '../tools/lambda-emulator/runtime-image';
import { type BenchClient, legacyClient, modernClient } from './clients';
import { heldTime } from './held-time';
import { BUNDLE, buildBundle, bundleShape, importTimes, runtimeNode } from './import-time';
import { type PolicyCost, policyCost } from './policy';
import { type Child, cpuMs, dynamoCounts, startChild, startGatewayChild, startTarget } from './processes';
import { type Distribution, distribution, ratio } from './stats';
import {
  costModel,
  type Form,
  lambdaForwardOnly,
  lambdaGateway,
  printWebFunction,
  webFunctionForwardOnly,
  webFunctionGateway,
  webFunctionWaiting,
} from './web-function';

// Node 20 here, 22+ on Lambda: the AWS SDK's notice about its future Node requirement is noise in the
// figures (as in `npm start`); the server processes inherit this.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const N = Number(process.env.BENCH_CALLS ?? 300);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 100); // the first calls of a process run slower (JIT)
const LOAD_SESSIONS = Number(process.env.BENCH_LOAD_SESSIONS ?? 200);
const ONLY = process.env.BENCH_ONLY?.split(',');
const wanted = (row: string) => !ONLY || ONLY.includes(row);
const KEY = 'bench-key-0123456789abcdefghijklmnopqrstuvwxyz';

/** One line on stderr per part as it starts: a run takes minutes. */
function progress(part: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${part}\n`);
}

/** `--json FILE` (or BENCH_OUT) names the JSON written; by default bench/results/latest.json. */
function jsonFile(): string {
  const at = process.argv.indexOf('--json');
  const named = at === -1 ? undefined : process.argv[at + 1];
  return named ?? process.env.BENCH_OUT ?? join(__dirname, 'results/latest.json');
}

/** The 1, 5 and 15 minute load averages, as `uptime` prints them: the machine is shared. */
function loadAverages(): string {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const started = performance.now();
  const value = await fn();
  return [performance.now() - started, value];
}

export interface Row {
  direct?: Distribution;
  gateway: Distribution;
  p50Ratio?: number;
  p95Ratio?: number;
  /** gateway p50 − direct p50 */
  addedP50Ms?: number;
  /** CPU (user + system) of the gateway process(es) per gateway call. */
  gatewayCpuMsPerCall: number;
  dynamodbRequestsPerCall: Record<string, number>;
  /** Response bytes DynamoDB sent per call (the item size read). */
  dynamodbResponseBytesPerCall: number;
  /** The passthrough row this row is measured against: the same calls through a proxy that only forwards. */
  floor?: string;
  /** "× floor": this row's added p50 ÷ its floor row's added p50, both from this run (a floor row: 1). */
  timesFloor?: number;
}

interface Meter {
  gateways: Child[];
  dynamo: Child;
  /** CPU (ms) so far of processes that are not the benchmark's children (an emulator's environments), instead of the gateways'. */
  cpu?: () => Promise<number>;
}

/** CPU of the gateways and DynamoDB counts over `phase`, per call. */
async function metered<T>(
  meter: Meter,
  calls: number,
  phase: () => Promise<T>,
): Promise<[T, Pick<Row, 'gatewayCpuMsPerCall' | 'dynamodbRequestsPerCall' | 'dynamodbResponseBytesPerCall'>]> {
  const cpuNow =
    meter.cpu ?? (async () => (await Promise.all(meter.gateways.map(cpuMs))).reduce((sum, ms) => sum + ms, 0));
  const cpuBefore = await cpuNow();
  const dbBefore = await dynamoCounts(meter.dynamo);
  const value = await phase();
  const cpuAfter = await cpuNow();
  const dbAfter = await dynamoCounts(meter.dynamo);
  const cpu = cpuAfter - cpuBefore;
  const perCall: Record<string, number> = {};
  let bytes = 0;
  for (const [operation, after] of Object.entries(dbAfter)) {
    const requests = after.requests - (dbBefore[operation]?.requests ?? 0);
    bytes += after.responseBytes - (dbBefore[operation]?.responseBytes ?? 0);
    const rounded = Math.round((requests / calls) * 100) / 100;
    if (rounded > 0) perCall[operation] = rounded; // not the odd request of an earlier phase's cleanup
  }
  return [
    value,
    {
      gatewayCpuMsPerCall: Math.round((cpu / calls) * 100) / 100,
      dynamodbRequestsPerCall: perCall,
      dynamodbResponseBytesPerCall: Math.round(bytes / calls),
    },
  ];
}

/** Direct and gateway calls alternate (which goes first alternates too), so both see the same machine state. */
async function sideBySide(
  meter: Meter,
  direct: () => Promise<void>,
  gateway: () => Promise<void>,
  n = N,
): Promise<Row> {
  for (let i = 0; i < Math.min(WARMUP, n); i++) {
    await direct();
    await gateway();
  }
  const d: number[] = [];
  const g: number[] = [];
  const [, metrics] = await metered(meter, n, async () => {
    for (let i = 0; i < n; i++) {
      const first = i % 2 === 0;
      if (first) d.push((await timed(direct))[0]);
      g.push((await timed(gateway))[0]);
      if (!first) d.push((await timed(direct))[0]);
    }
  });
  const dd = distribution(d);
  const gd = distribution(g);
  return {
    direct: dd,
    gateway: gd,
    p50Ratio: ratio(gd.p50, dd.p50),
    p95Ratio: ratio(gd.p95, dd.p95),
    addedP50Ms: Math.round((gd.p50 - dd.p50) * 100) / 100,
    ...metrics,
  };
}

function expectText(expected: string): (text: string) => void {
  return (text) => {
    if (text !== expected) throw new Error(`unexpected answer: ${text}`);
  };
}

/** A row over a pair of SDK clients: `call` on each, checked. */
async function clientRow(
  meter: Meter,
  direct: BenchClient,
  gateway: BenchClient,
  tools: [string, string],
  args: Record<string, unknown>,
  expected: string,
  n = N,
): Promise<Row> {
  const check = expectText(expected);
  try {
    return await sideBySide(
      meter,
      async () => check(await direct.call(tools[0], args)),
      async () => check(await gateway.call(tools[1], args)),
      n,
    );
  } finally {
    await Promise.all([direct.close(), gateway.close()]);
  }
}

/** Microseconds to seal and open one requestState envelope (AES-256-GCM). */
function sealOpenMicroseconds(): number {
  const sealer = new RequestStateSealer(SealedBox.fromSecrets({ current: KEY }), 600, systemClock);
  const binding = { principal: 'p', target: 't', method: 'tools/call', name: 'n', argsDigest: argumentsDigest({}) };
  const started = performance.now();
  for (let i = 0; i < 10_000; i++)
    sealer.open(
      sealer.seal(binding, { kind: 'relay', targetState: `v1.${'x'.repeat(200)}`, confirmed: false }),
      binding,
    );
  return Math.round(((performance.now() - started) / 10_000) * 10_000) / 10;
}

/**
 * The part of a 2025 call that is DynamoDB's: the session `Query` alone, as the gateway makes it
 * (the same client options, built once, keep-alive), on a partition shaped like a session's. Its
 * latency against dynalite, and the CPU the AWS SDK spends per request (this process's own).
 */
async function queryAlone(endpoint: string): Promise<Json> {
  const client = createDocumentClient({ endpoint });
  const TableName = 'bench-query';
  await ensureTable(client, TableName);
  const session = { principal: 'anonymous', protocolVersion: '2025-11-25', clientCapabilities: {}, expiresAt: 9e9 };
  await client.send(new PutCommand({ TableName, Item: { pk: 'S#q', sk: 'SESSION', ...session } }));
  await client.send(
    new PutCommand({ TableName, Item: { pk: 'S#q', sk: 'T#legacy', targetSessionId: 'x'.repeat(36), expiresAt: 9e9 } }),
  );
  const query = () =>
    client.send(
      new QueryCommand({
        TableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': 'S#q' },
        ConsistentRead: true,
      }),
    );
  for (let i = 0; i < WARMUP; i++) await query();
  const samples: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < N; i++) samples.push((await timed(query))[0]);
  const used = process.cpuUsage(cpu);
  client.destroy();
  return { latency: distribution(samples), sdkCpuMsPerRequest: Math.round((used.user + used.system) / N / 10) / 100 };
}

/** 200 sessions at once: each calls a tool that elicits; streamed by one instance, answered through the other. */
async function load(meter: Meter, targetUrl: string, gateways: [Child, Child]): Promise<Json> {
  const run = async (connect: (i: number) => Promise<BenchClient>, tool: string) => {
    // Sessions are set up 20 at a time: what is measured is 200 elicitations at once, not 200
    // `initialize` at once (which one dynalite on a loaded 2-core machine answers past the SDK's 2 s timeout).
    const clients: BenchClient[] = [];
    for (let i = 0; i < LOAD_SESSIONS; i += 20)
      clients.push(
        ...(await Promise.all(Array.from({ length: Math.min(20, LOAD_SESSIONS - i) }, (_, j) => connect(i + j)))),
      );
    try {
      const samples: number[] = [];
      const failures: string[] = [];
      const [[wallMs, outcomes], metrics] = await metered(meter, LOAD_SESSIONS, () =>
        timed(() =>
          Promise.all(
            clients.map(async (client, i) => {
              try {
                const [ms, text] = await timed(() => client.call(tool, { command: `cmd-${i}` }));
                samples.push(ms);
                return text === `executed: cmd-${i}`;
              } catch (error) {
                failures.push(String(error)); // a call past the client's 60 s timeout fails, and is counted
                return false;
              }
            }),
          ),
        ),
      );
      const completed = outcomes.filter(Boolean).length;
      return {
        completed,
        failed: failures.length,
        firstFailure: failures[0],
        crossedOrLost: LOAD_SESSIONS - completed - failures.length, // answered, but not its own answer
        wallMs: Math.round(wallMs),
        call: distribution(samples),
        ...metrics,
      };
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  };
  const direct = await run(() => legacyClient(targetUrl), 'use_aws');
  const gateway = await run((i) => {
    const [streamer, answerer] = i % 2 === 0 ? gateways : [gateways[1], gateways[0]];
    return legacyClient(streamer.url, { answerUrl: answerer.url });
  }, 'legacy___use_aws');
  return {
    sessions: LOAD_SESSIONS,
    direct: { completed: direct.completed, wallMs: direct.wallMs, call: direct.call },
    gateway,
    p50Ratio: ratio(gateway.call.p50, direct.call.p50),
    p95Ratio: ratio(gateway.call.p95, direct.call.p95),
  };
}

async function rawPost(url: string, headers: Record<string, string>, body: Json): Promise<Response> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res;
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const modernEcho = (url: string, id: number) =>
  rawPost(
    url,
    { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'dual___echo' },
    {
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'dual___echo', arguments: { text: 'x' }, _meta: META },
    },
  );

/** Cold start: the bundle's import in a fresh Node, and first calls served by fresh `--lambda` environments. */
async function coldStart(config: Json, dynamodbEndpoint: string): Promise<Json> {
  buildBundle();
  const imports = importTimes(BUNDLE);
  // The deployed runtime's Node (24, the `--lambda` image's), where its import is the cold start's.
  const runtime = runtimeNode();
  const importsOnRuntime = runtime ? importTimes(BUNDLE, 7, runtime.node) : undefined;
  const lambdaConfig = { ...config, logLevel: 'SILENT' as const };
  const start = () =>
    startLambdaMode({ port: 0, demo: false, config: lambdaConfig, dynamodbEndpoint, build: 'never', log: () => {} });

  // A 2026-07-28 call as the first request of a fresh environment (no DynamoDB on this path).
  const modern = await start();
  let modernFirst: number;
  let modernInit: number | undefined;
  let modernNodeVersion: string;
  const warmModern: number[] = [];
  try {
    [modernFirst] = await timed(() => modernEcho(modern.url, 1));
    modernInit = modern.stats().detail[0]?.initMs;
    for (let i = 0; i < 30; i++) warmModern.push((await timed(() => modernEcho(modern.url, i + 2)))[0]);
    modernNodeVersion = modern.nodeVersion;
  } finally {
    await modern.close();
  }

  // A 2025 session: initialize as the first request, then its first call (the target session is opened).
  const legacy = await start();
  let initFirst: number;
  let legacyInit: number | undefined;
  let firstCall: number;
  const warmLegacy: number[] = [];
  try {
    let headers: Record<string, string> = {};
    [initFirst] = await timed(async () => {
      const res = await rawPost(
        legacy.url,
        {},
        {
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
        },
      );
      headers = { 'mcp-session-id': res.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    });
    legacyInit = legacy.stats().detail[0]?.initMs;
    const echo = (id: number) =>
      rawPost(legacy.url, headers, {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'legacy___echo', arguments: { text: 'x' } },
      });
    [firstCall] = await timed(() => echo(1));
    for (let i = 0; i < 30; i++) warmLegacy.push((await timed(() => echo(i + 2)))[0]);
  } finally {
    await legacy.close();
  }
  const ms = (x: number | undefined) => (x === undefined ? undefined : Math.round(x));
  return {
    bundleBytes: statSync(BUNDLE).size,
    // The chunks beside index.mjs: what is import()ed only when configured, not loaded by the import.
    bundleCodeBytes: bundleShape(BUNDLE).codeBytes,
    importMs: Math.round(distribution(imports).p50),
    importMsRuntimeNode: importsOnRuntime && Math.round(distribution(importsOnRuntime).p50),
    lambdaNode: modernNodeVersion,
    modern: {
      initMs: ms(modernInit),
      firstCallMs: ms(modernFirst),
      warm: distribution(warmModern),
    },
    legacy: {
      initMs: ms(legacyInit),
      initializeMs: ms(initFirst),
      firstCallMs: ms(firstCall),
      warm: distribution(warmLegacy),
    },
  };
}

async function main(): Promise<void> {
  const children: Child[] = [];
  const results: Json = {
    date: new Date().toISOString().slice(0, 10),
    command: 'npm run bench',
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      loadAverageAtStart: loadAverages(),
    },
    calls: N,
    rows: {},
  };
  const rows: Record<string, Row> = results.rows;
  // The deployment forms' emulators (bench/web-function.ts), each started once, when a row needs it.
  const forms = new Map<string, Promise<Form>>();
  const closeForms = async () => {
    const started = [...forms.values()];
    forms.clear();
    for (const form of started) await (await form.catch(() => undefined))?.close();
  };
  try {
    const dynamo = await startChild(['bench/serve-dynamo.ts'], /ready (\S+)/);
    children.push(dynamo);
    const [legacyTarget, dualTarget] = await Promise.all([startTarget('legacy'), startTarget('dual')]);
    children.push(legacyTarget, dualTarget);
    const config = {
      targets: [
        { name: 'legacy', url: legacyTarget.url },
        { name: 'dual', url: dualTarget.url },
      ],
      requestStateKeys: { current: KEY },
      logLevel: 'SILENT',
    };
    const [gatewayA, gatewayB] = await Promise.all([
      startGatewayChild(config, dynamo.url),
      startGatewayChild(config, dynamo.url),
    ]);
    children.push(gatewayA, gatewayB);
    const one: Meter = { gateways: [gatewayA], dynamo };
    const both: Meter = { gateways: [gatewayA, gatewayB], dynamo };
    const echo = { text: 'bench' };

    // The floor: the same calls through proxies that only forward (bench/serve-proxy.ts), one in front
    // of each target and a second one in front of the 2025-only target for the answers (as gateway B).
    const proxies = new Map<string, Child>();
    const proxyTo = async (name: string, url: string): Promise<Child> => {
      let proxy = proxies.get(name);
      if (!proxy) {
        proxy = await startChild(['bench/serve-proxy.ts', url], /ready (\S+)/);
        children.push(proxy);
        proxies.set(name, proxy);
      }
      return proxy;
    };
    /** A gateway row, then (once per run) its floor row; the floor row's meter is the proxies' own CPU. */
    const measured = async (
      key: string,
      gatewayRow: () => Promise<Row>,
      floor: { key: string; row: (meter: (proxies: Child[]) => Meter) => Promise<Row> },
      selectedBy = key, // the name BENCH_ONLY selects it by
    ): Promise<void> => {
      if (!wanted(selectedBy)) return;
      progress(key);
      rows[key] = { ...(await gatewayRow()), floor: floor.key };
      if (!rows[floor.key]) {
        progress(floor.key);
        rows[floor.key] = { ...(await floor.row((gateways) => ({ gateways, dynamo }))), floor: floor.key };
      }
    };
    const legacyFloor = (key: string, target: Child, options: { elicitation?: boolean } = {}) => ({
      key,
      row: async (meter: (proxies: Child[]) => Meter) => {
        const proxy = await proxyTo(key === 'legacyEchoDualPassthrough' ? 'dual' : 'legacy', target.url);
        return clientRow(
          meter([proxy]),
          await legacyClient(target.url, options),
          await legacyClient(proxy.url, options),
          ['echo', 'echo'],
          echo,
          'echo: bench',
        );
      },
    });
    const modernEchoFloor = {
      key: 'modernEchoPassthrough',
      row: async (meter: (proxies: Child[]) => Meter) => {
        const proxy = await proxyTo('dual', dualTarget.url);
        return clientRow(
          meter([proxy]),
          await modernClient(dualTarget.url),
          await modernClient(proxy.url),
          ['echo', 'echo'],
          echo,
          'echo: bench',
        );
      },
    };
    const legacyEchoFloor = legacyFloor('legacyEchoPassthrough', legacyTarget);
    const legacyEchoNoInputFloor = legacyFloor('legacyEchoNoInputPassthrough', legacyTarget, { elicitation: false });

    await measured(
      'legacyEchoDual',
      async () =>
        clientRow(
          one,
          await legacyClient(dualTarget.url),
          await legacyClient(gatewayA.url),
          ['echo', 'dual___echo'],
          echo,
          'echo: bench',
        ),
      legacyFloor('legacyEchoDualPassthrough', dualTarget),
    );
    await measured(
      'legacyEcho',
      async () =>
        clientRow(
          one,
          await legacyClient(legacyTarget.url),
          await legacyClient(gatewayA.url),
          ['echo', 'legacy___echo'],
          echo,
          'echo: bench',
        ),
      legacyEchoFloor,
    );
    await measured(
      'legacyEchoNoInput',
      async () =>
        clientRow(
          one,
          await legacyClient(legacyTarget.url, { elicitation: false }),
          await legacyClient(gatewayA.url, { elicitation: false }),
          ['echo', 'legacy___echo'],
          echo,
          'echo: bench',
        ),
      legacyEchoNoInputFloor,
    );
    // The read-ahead lever beside it: the same calls through a gateway that reads the session before
    // each call (sessionReadAhead false), on the same DynamoDB and target.
    await measured(
      'legacyEchoNoInputNoReadAhead',
      async () => {
        const strict = await startGatewayChild({ ...config, sessionReadAhead: false }, dynamo.url);
        children.push(strict);
        return clientRow(
          { gateways: [strict], dynamo },
          await legacyClient(legacyTarget.url, { elicitation: false }),
          await legacyClient(strict.url, { elicitation: false }),
          ['echo', 'legacy___echo'],
          echo,
          'echo: bench',
        );
      },
      legacyEchoNoInputFloor,
    );
    // The hop a 50 ms tool's call crosses is an echo's: its floor is the echo's, not measured again.
    await measured(
      'legacy50msTool',
      async () =>
        clientRow(
          one,
          await legacyClient(legacyTarget.url),
          await legacyClient(gatewayA.url),
          ['slow', 'legacy___slow'],
          { ms: 50 },
          'slept 50',
          Math.ceil(N / 4),
        ),
      legacyEchoFloor,
    );
    await measured(
      'modernEcho',
      async () =>
        clientRow(
          one,
          await modernClient(dualTarget.url),
          await modernClient(gatewayA.url),
          ['echo', 'dual___echo'],
          echo,
          'echo: bench',
        ),
      modernEchoFloor,
    );
    // The same two echo rows with the gateway on the deployed runtime's Node (24, the `--lambda`
    // image's binary): AsyncLocalStorage (the request context) costs every promise a hook on Node
    // 20 and next to nothing on Node 24, where it is built on AsyncContextFrame.
    const runtimeNode = wanted('onRuntimeNode') ? lambdaRuntimeNode() : undefined;
    if (runtimeNode) {
      const gatewayC = await startGatewayChild(config, dynamo.url, [], runtimeNode.node);
      children.push(gatewayC);
      const onC: Meter = { gateways: [gatewayC], dynamo };
      results.runtimeNode = runtimeNode.nodeVersion;
      await measured(
        'modernEchoRuntimeNode',
        async () =>
          clientRow(
            onC,
            await modernClient(dualTarget.url),
            await modernClient(gatewayC.url),
            ['echo', 'dual___echo'],
            echo,
            'echo: bench',
          ),
        modernEchoFloor,
        'onRuntimeNode',
      );
      await measured(
        'legacyEchoNoInputRuntimeNode',
        async () =>
          clientRow(
            onC,
            await legacyClient(legacyTarget.url, { elicitation: false }),
            await legacyClient(gatewayC.url, { elicitation: false }),
            ['echo', 'legacy___echo'],
            echo,
            'echo: bench',
          ),
        legacyEchoNoInputFloor,
        'onRuntimeNode',
      );
    }
    await measured(
      'modernInputRequired',
      async () =>
        clientRow(
          one,
          await modernClient(dualTarget.url),
          await modernClient(gatewayA.url),
          ['use_aws', 'dual___use_aws'],
          { command: 'ls' },
          'executed: ls',
        ),
      {
        key: 'modernInputRequiredPassthrough',
        row: async (meter) => {
          const proxy = await proxyTo('dual', dualTarget.url);
          return clientRow(
            meter([proxy]),
            await modernClient(dualTarget.url),
            await modernClient(proxy.url),
            ['use_aws', 'use_aws'],
            { command: 'ls' },
            'executed: ls',
          );
        },
      },
    );
    // A held round: the call streamed by A, the client's answer POSTed to B (as Lambda routes it);
    // its floor: the call through one proxy, the answer through another.
    await measured(
      'legacyElicitationOtherInstance',
      async () =>
        clientRow(
          both,
          await legacyClient(legacyTarget.url),
          await legacyClient(gatewayA.url, { answerUrl: gatewayB.url }),
          ['use_aws', 'legacy___use_aws'],
          { command: 'ls' },
          'executed: ls',
        ),
      {
        key: 'legacyElicitationPassthrough',
        row: async (meter) => {
          const [callProxy, answerProxy] = [
            await proxyTo('legacy', legacyTarget.url),
            await proxyTo('legacy answers', legacyTarget.url),
          ];
          return clientRow(
            meter([callProxy, answerProxy]),
            await legacyClient(legacyTarget.url),
            await legacyClient(callProxy.url, { answerUrl: answerProxy.url }),
            ['use_aws', 'use_aws'],
            { command: 'ls' },
            'executed: ls',
          );
        },
      },
    );
    // The deployment forms side by side: the same echo calls through the gateway as a function URL
    // (`--lambda`) and as a Web Function, each against a function that only forwards, in the same emulator.
    const form = (name: string, start: () => Promise<Form>): Promise<Form> => {
      if (!forms.has(name)) forms.set(name, start());
      return forms.get(name)!;
    };
    const formMeter = (started: Form): Meter => ({ gateways: [], dynamo, cpu: () => started.cpuMs() });
    const formRows = async (
      prefix: 'lambda' | 'webFunction',
      gateway: () => Promise<Form>,
      floor: (targetUrl: string) => Promise<Form>,
    ): Promise<void> => {
      await measured(
        `${prefix}LegacyEcho`,
        async () => {
          const started = await form(prefix, gateway);
          return clientRow(
            formMeter(started),
            await legacyClient(legacyTarget.url, { elicitation: false }),
            await legacyClient(started.url, { elicitation: false }),
            ['echo', 'legacy___echo'],
            echo,
            'echo: bench',
          );
        },
        {
          key: `${prefix}LegacyEchoPassthrough`,
          row: async () => {
            const started = await form(`${prefix} floor legacy`, () => floor(legacyTarget.url));
            return clientRow(
              formMeter(started),
              await legacyClient(legacyTarget.url, { elicitation: false }),
              await legacyClient(started.url, { elicitation: false }),
              ['echo', 'echo'],
              echo,
              'echo: bench',
            );
          },
        },
      );
      await measured(
        `${prefix}ModernEcho`,
        async () => {
          const started = await form(prefix, gateway);
          return clientRow(
            formMeter(started),
            await modernClient(dualTarget.url),
            await modernClient(started.url),
            ['echo', 'dual___echo'],
            echo,
            'echo: bench',
          );
        },
        {
          key: `${prefix}ModernEchoPassthrough`,
          row: async () => {
            const started = await form(`${prefix} floor dual`, () => floor(dualTarget.url));
            return clientRow(
              formMeter(started),
              await modernClient(dualTarget.url),
              await modernClient(started.url),
              ['echo', 'echo'],
              echo,
              'echo: bench',
            );
          },
        },
      );
    };
    await formRows(
      'lambda',
      () => lambdaGateway(config, dynamo.url),
      (url) => lambdaForwardOnly(url, dynamo.url),
    );
    await formRows(
      'webFunction',
      () => webFunctionGateway(config, dynamo.url),
      (url) => webFunctionForwardOnly(url),
    );
    if (forms.size) {
      results.forms = Object.fromEntries(
        await Promise.all([...forms].map(async ([name, started]) => [name, (await started).describe()])),
      );
      await closeForms();
    }
    for (const row of Object.values(rows)) {
      const floor = row.floor === undefined ? undefined : rows[row.floor];
      // A floor within the noise of zero (or below it) gives no meaningful quotient.
      if (floor?.addedP50Ms !== undefined && row.addedP50Ms !== undefined && floor.addedP50Ms > 0.05)
        row.timesFloor = ratio(row.addedP50Ms, floor.addedP50Ms);
    }
    results.sealPlusOpenMicroseconds = sealOpenMicroseconds();
    if (wanted('policy')) {
      progress('policy');
      results.policy = policyCost();
    }
    if (wanted('dynamodbQuery')) {
      progress('dynamodbQuery');
      results.dynamodbQuery = await queryAlone(dynamo.url);
    }
    if (wanted('load')) {
      progress('load');
      results.load = await load(both, legacyTarget.url, [gatewayA, gatewayB]);
    }
    if (process.env.BENCH_COLD !== '0' && wanted('coldStart')) {
      progress('coldStart');
      results.coldStart = await coldStart(config, dynamo.url);
    }
    // One Web Function environment holding 1, 64 and 128 waiting elicitations (bench/web-function.ts).
    if (wanted('webFunctionWaiting')) {
      progress('webFunctionWaiting');
      results.webFunctionWaiting = await webFunctionWaiting(dynamo, legacyTarget.url);
    }
    // The release policy's held invocation time per elicitation (10 s of think time, `--lambda`).
    if (wanted('heldTime')) {
      progress('heldTime');
      buildBundle();
      results.heldTime = await heldTime(dynamo.url);
    }
    if (results.webFunctionWaiting) results.costModel = costModel(results.webFunctionWaiting, results.heldTime);
  } catch (error) {
    // What was measured before the failure is still written and printed, with the failure named.
    results.failed = String(error);
    process.exitCode = 1;
  } finally {
    await closeForms();
    await Promise.all(children.map((child) => child.stop()));
  }

  results.machine.loadAverageAtEnd = loadAverages();
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  const file = jsonFile();
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  print(results);
  if (results.failed) console.log(`stopped early: ${results.failed}`);
  console.log(`figures written to ${file}`);
}

const LABELS: Record<string, string> = {
  legacyEchoDual: '2025-11-25 echo, dual-era target',
  legacyEchoDualPassthrough: '  its floor: passthrough proxy',
  legacyEcho: '2025-11-25 echo, input caps (GET/call)',
  legacyEchoPassthrough: '  its floor: passthrough proxy',
  legacyEchoNoInput: '2025-11-25 echo, no input caps',
  legacyEchoNoInputNoReadAhead: '  … read-ahead off',
  legacyEchoNoInputPassthrough: '  its floor: passthrough proxy',
  legacy50msTool: '2025-11-25, a 50 ms tool (echo floor)',
  modernEcho: '2026-07-28 echo',
  modernEchoPassthrough: '  its floor: passthrough proxy',
  modernEchoRuntimeNode: '2026-07-28 echo, gateway on Node 24',
  legacyEchoNoInputRuntimeNode: '2025 echo no input caps, gw Node 24',
  modernInputRequired: '2026-07-28 input_required round',
  modernInputRequiredPassthrough: '  its floor: passthrough proxy',
  legacyElicitationOtherInstance: '2025 elicitation round held, answer→B',
  legacyElicitationPassthrough: '  its floor: call/answer via 2 proxies',
  lambdaLegacyEcho: 'function URL: 2025 echo, no input caps',
  lambdaLegacyEchoPassthrough: '  its floor: forward-only function',
  lambdaModernEcho: 'function URL: 2026-07-28 echo',
  lambdaModernEchoPassthrough: '  its floor: forward-only function',
  webFunctionLegacyEcho: 'Web Function: 2025 echo, no input caps',
  webFunctionLegacyEchoPassthrough: '  its floor: forward-only server',
  webFunctionModernEcho: 'Web Function: 2026-07-28 echo',
  webFunctionModernEchoPassthrough: '  its floor: forward-only server',
};

/** The `--lambda` image's Node.js (24), or undefined (with a note) where it is not installed. */
function lambdaRuntimeNode(): RuntimeImage | undefined {
  try {
    return resolveRuntimeImage();
  } catch (error) {
    console.log(`rows on the runtime's Node skipped: ${(error as Error).message}`);
    return undefined;
  }
}

function print(results: Json): void {
  const f = (x: number | undefined) => (x === undefined ? '-' : x.toFixed(2));
  const m = results.machine;
  console.log(
    `machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}, load average ${m.loadAverageAtStart} at the start, ${m.loadAverageAtEnd} at the end (1/5/15 min); ${results.calls} calls per row`,
  );
  console.log(
    '× floor: the added p50 (gateway p50 − direct p50) ÷ the added p50 of the same calls through a proxy that only forwards, in this run; cpu/call: the gateway (floor rows: the proxy) process CPU per call',
  );
  console.log(
    `${'row'.padEnd(40)} ${'direct p50/p95'.padEnd(14)} ${'via p50/p95'.padEnd(13)} added  × floor cpu/call DynamoDB/call`,
  );
  for (const [key, r] of Object.entries(results.rows as Record<string, Row>)) {
    const db = Object.keys(r.dynamodbRequestsPerCall).length
      ? `${JSON.stringify(r.dynamodbRequestsPerCall)} (${r.dynamodbResponseBytesPerCall} B read)`
      : '0';
    console.log(
      `${(LABELS[key] ?? key).padEnd(40)} ${`${f(r.direct?.p50)}/${f(r.direct?.p95)}`.padEnd(14)} ${`${f(r.gateway.p50)}/${f(r.gateway.p95)}`.padEnd(13)} ${f(r.addedP50Ms).padEnd(6)} ${f(r.timesFloor).padEnd(7)} ${f(r.gatewayCpuMsPerCall).padEnd(8)} ${db}`,
    );
  }
  console.log(`requestState seal + open: ${results.sealPlusOpenMicroseconds} µs`);
  const p = results.policy as PolicyCost | undefined;
  if (p) {
    const cost = (d: { p50: number; p99: number }) => `p50 ${d.p50} µs, p99 ${d.p99} µs`;
    for (const [count, c] of Object.entries(p.byPolicies))
      console.log(`policy, ${count} policies: a call ${cost(c.call)}; a listed tool ${cost(c.list)}`);
    console.log(`policy engine first load: ${p.engineLoadMs} ms`);
  }
  const q = results.dynamodbQuery;
  if (q)
    console.log(
      `the session Query alone (AWS SDK → dynalite): p50 ${f(q.latency.p50)} ms, p95 ${f(q.latency.p95)} ms; SDK CPU ${q.sdkCpuMsPerRequest} ms per request`,
    );
  const l = results.load;
  if (l)
    console.log(
      `load: ${l.sessions} sessions × 1 elicitation at once, direct: ${l.direct.completed} completed, ${l.direct.wallMs} ms wall, p50 ${f(l.direct.call.p50)} p95 ${f(l.direct.call.p95)} ms | over 2 gateways (answers through the other): ${l.gateway.completed} completed, ${l.gateway.crossedOrLost} crossed or lost, ${l.gateway.failed} failed${l.gateway.firstFailure ? ` (${l.gateway.firstFailure})` : ''}, ${l.gateway.wallMs} ms wall, p50 ${f(l.gateway.call.p50)} p95 ${f(l.gateway.call.p95)} ms, ratio p50 ${l.p50Ratio}, cpu ${l.gateway.gatewayCpuMsPerCall} ms/call, DynamoDB ${JSON.stringify(l.gateway.dynamodbRequestsPerCall)}`,
    );
  const c = results.coldStart;
  if (c)
    console.log(
      `cold start: bundle ${(c.bundleBytes / 1024).toFixed(0)} KiB (${(c.bundleCodeBytes / 1024).toFixed(0)} KiB with its chunks), import ${c.importMs} ms (median of 7, Node ${results.machine.node}), ${c.importMsRuntimeNode ?? '-'} ms (median of 7, Node ${c.lambdaNode}); --lambda (Node ${c.lambdaNode}): 2026 echo as first request ${c.modern.firstCallMs} ms (init ${c.modern.initMs} ms), warm p50 ${f(c.modern.warm.p50)} ms; 2025 initialize as first request ${c.legacy.initializeMs} ms (init ${c.legacy.initMs} ms), first tools/call ${c.legacy.firstCallMs} ms, warm p50 ${f(c.legacy.warm.p50)} ms`,
    );
  printWebFunction(results);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
