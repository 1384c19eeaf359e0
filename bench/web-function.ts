/**
 * The two deployment forms side by side in `npm run bench` (BENCH_ONLY keys in bench/run.ts):
 * - the forms themselves, for the echo rows: the function URL (`npm start -- --lambda`'s emulator,
 *   one request per invocation, environments frozen in between) and the Lambda Web Function
 *   (`startWebFunctionMode`, the gateway's own node:http server, many requests per environment), each
 *   with its forward-only floor run by the same emulator (bench/forward-only.mjs), and the CPU of their
 *   environments' processes read from /proc (the front ends run in the benchmark's own process, as the
 *   platform's do outside the function);
 * - `webFunctionWaiting`: the memory and the idle CPU of one Web Function environment holding 1, 64 and
 *   128 waiting 2025-11-25 elicitations (raw HTTP, as test/web-function/web-function.test.ts does), then
 *   every one answered and its result checked (BENCH_WAITING_WARMUP rounds first, default 30;
 *   BENCH_WAITING_IDLE_S seconds of idle CPU per step, default 5);
 * - `costModel`: $ per million elicitations at 0, 10 and 60 s of think time for the function URL held,
 *   the function URL released (a client trusted to resume) and the Web Function held, from published
 *   function-URL rates and Web Function rates taken as inputs (none published: stated assumptions).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startLambdaMode } from '../dev/lambda-mode/index';
import { startWebFunctionMode } from '../dev/web-function-mode/index';
import { initSession, type Json, post, sseEvents } from '../test/support/mcp-http';
import { resolveRuntimeImage } from '../tools/lambda-emulator/runtime-image';
import { startWebFunctionEmulator } from '../tools/web-function-emulator/emulator';
import { type Child, dynamoCounts } from './processes';
import { distribution } from './stats';

const FORWARD_ONLY = join(__dirname, 'forward-only.mjs');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round2 = (x: number) => Math.round(x * 100) / 100;

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (100 on Linux almost everywhere). */
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU (user + system, ms) a process has used so far, from /proc/<pid>/stat; undefined once it is gone. */
export function processCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name in parentheses: field 3 (state) is [0], utime (14) [11], stime (15) [12].
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** The process's resident memory (VmRSS, MB), from /proc/<pid>/status. */
export function residentMb(pid: number): number {
  const line = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!line) throw new Error(`no VmRSS for ${pid}`);
  return Number(line[1]) / 1024;
}

/** CPU (ms) of a changing set of processes: each one's last reading counts after it has exited. */
function processesCpu(pids: () => Array<number | undefined>): () => Promise<number> {
  const last = new Map<number, number>();
  return async () => {
    for (const pid of pids()) {
      const ms = pid === undefined ? undefined : processCpuMs(pid);
      if (ms !== undefined) last.set(pid!, ms);
    }
    return [...last.values()].reduce((sum, ms) => sum + ms, 0);
  };
}

/** A gateway (or its floor) in one deployment form: its URL, its environments' CPU so far, what it did. */
export interface Form {
  url: string;
  cpuMs(): Promise<number>;
  describe(): Json;
  close(): Promise<void>;
}

/** The gateway as a function URL: the deployment bundle in `npm start -- --lambda`'s emulator. */
export async function lambdaGateway(config: Json, dynamodbEndpoint: string): Promise<Form> {
  const mode = await startLambdaMode({ port: 0, demo: false, config, dynamodbEndpoint, log: () => {} });
  return {
    url: mode.url,
    cpuMs: processesCpu(() => mode.stats().detail.map((environment) => environment.pid)),
    describe: () => lambdaDescription(mode.stats(), mode.nodeVersion),
    close: mode.close,
  };
}

/** Its floor: bench/forward-only.mjs as the function, forwarding to `targetUrl`. */
export async function lambdaForwardOnly(targetUrl: string, dynamodbEndpoint: string): Promise<Form> {
  const mode = await startLambdaMode({
    port: 0,
    demo: false,
    dynamodbEndpoint,
    config: { logLevel: 'SILENT', targets: [{ name: 'floor', url: targetUrl }] },
    function: { file: FORWARD_ONLY, handler: 'handler' },
    environment: { FORWARD_TO: targetUrl },
    log: () => {},
  });
  return {
    url: mode.url,
    cpuMs: processesCpu(() => mode.stats().detail.map((environment) => environment.pid)),
    describe: () => lambdaDescription(mode.stats(), mode.nodeVersion),
    close: mode.close,
  };
}

function lambdaDescription(
  stats: ReturnType<Awaited<ReturnType<typeof startLambdaMode>>['stats']>,
  node: string,
): Json {
  return {
    form: 'function URL (--lambda)',
    node,
    coldStarts: stats.coldStarts,
    invocations: stats.invocations,
    invocationMs: stats.invocationMs.length ? distribution(stats.invocationMs) : undefined,
  };
}

/** The gateway as a Web Function: the Web Function bundle in `startWebFunctionMode` (default 64 per environment). */
export async function webFunctionGateway(config: Json, dynamodbEndpoint: string): Promise<Form> {
  const mode = await startWebFunctionMode({
    port: 0,
    demo: false,
    config,
    dynamodbEndpoint,
    idleSeconds: 3600,
    log: () => {},
  });
  return {
    url: mode.url,
    cpuMs: processesCpu(() => mode.environments().map((environment) => environment.pid)),
    describe: () => webFunctionDescription(mode.stats(), mode.nodeVersion),
    close: mode.close,
  };
}

/** Its floor: bench/forward-only.mjs as the application, in the same emulator, on the runtime's Node. */
export async function webFunctionForwardOnly(targetUrl: string): Promise<Form> {
  const image = resolveRuntimeImage();
  const emulator = await startWebFunctionEmulator({
    entry: FORWARD_ONLY,
    nodeBinary: image.node,
    env: { FORWARD_TO: targetUrl },
    port: 0,
    timeoutSeconds: 900,
    idleSeconds: 3600,
    log: () => {},
  });
  return {
    url: `${emulator.url}/mcp`,
    cpuMs: processesCpu(() => emulator.environments().map((environment) => environment.pid)),
    describe: () => webFunctionDescription(emulator.stats(), image.nodeVersion),
    close: () => emulator.close(),
  };
}

function webFunctionDescription(
  stats: ReturnType<Awaited<ReturnType<typeof startWebFunctionMode>>['stats']>,
  node: string,
): Json {
  return {
    form: 'Web Function',
    node,
    environmentsStarted: stats.environmentsStarted,
    requests: stats.requests,
    maxOpenPerEnvironment: stats.maxOpenPerEnvironment,
  };
}

// ---------------------------------------------------------------------------------------------------
// One environment holding waiting elicitations: memory and idle CPU.

const ELICITATION = { elicitation: { form: {} } };
/** Not on `streamReleaseClients`: its calls are held (and a 2025 target without event ids cannot be released anyway). */
const CLIENT = { name: 'bench waiting', version: '1.0.0' };
const STEPS = [1, 64, 128];
const WARM_ROUNDS = Number(process.env.BENCH_WAITING_WARMUP ?? 30);
const IDLE_SECONDS = Number(process.env.BENCH_WAITING_IDLE_S ?? 5);

/** A 2025 call that asks its client a question: the question when it arrives, the call's result when it ends. */
function waitingCall(url: string, headers: Record<string, string>, id: string, command: string) {
  let asked!: (question: Json) => void;
  let failed!: (error: Error) => void;
  const question = new Promise<Json>((resolve, reject) => {
    asked = resolve;
    failed = reject;
  });
  const result = (async () => {
    const res = await post(url, headers, {
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'legacy___use_aws', arguments: { command } },
    });
    for await (const event of sseEvents(res)) {
      if (event.message?.method === 'elicitation/create') asked(event.message);
      if (event.message?.id === id) return event.message;
    }
    throw new Error(`${id}: the stream ended without its result`);
  })();
  result.catch((error: Error) => failed(error));
  return { question, result };
}

async function answer(url: string, headers: Record<string, string>, question: Json): Promise<number> {
  const res = await post(url, headers, {
    jsonrpc: '2.0',
    id: question.id,
    result: { action: 'accept', content: { confirm: true } },
  });
  await res.body?.cancel();
  return res.status;
}

/** VmRSS, the median of 5 readings 200 ms apart. */
async function steadyRss(pid: number): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < 5; i++) {
    readings.push(residentMb(pid));
    await sleep(200);
  }
  return readings.sort((a, b) => a - b)[2]!;
}

/**
 * One Web Function environment (`maxConcurrencyPerEnvironment: 128`) holding N 2025-11-25 calls that
 * each wait for an elicitation's answer on a 2025-only target (the v1-SDK demo target, `legacyTargetUrl`):
 * its VmRSS after warm-up with 0 waiting (the sessions already set up), then with 1, 64 and 128
 * waiting, and its CPU and DynamoDB requests over IDLE_SECONDS while they wait; then all are answered
 * and every result checked. Also the CPU, DynamoDB requests and duration of one round answered at once.
 */
export async function webFunctionWaiting(dynamo: Child, legacyTargetUrl: string): Promise<Json> {
  const mode = await startWebFunctionMode({
    port: 0,
    demo: false,
    dynamodbEndpoint: dynamo.url,
    maxConcurrencyPerEnvironment: 128,
    idleSeconds: 3600,
    config: { logLevel: 'SILENT', targets: [{ name: 'legacy', url: legacyTargetUrl }] },
    log: () => {},
  });
  try {
    const url = mode.url;
    const holderOf = () => {
      const live = mode.environments();
      if (live.length !== 1 || live[0]!.pid === undefined)
        throw new Error(`expected one environment: ${JSON.stringify(live)}`);
      return live[0]!;
    };

    // Warm-up, and the round answered at once: one session, rounds one after the other.
    const warm = await initSession(url, { capabilities: ELICITATION, clientInfo: CLIENT });
    for (let i = 0; i < 5; i++) {
      const call = waitingCall(url, warm.headers, `warm-${i}`, `warm ${i}`);
      await answer(url, warm.headers, await call.question);
      await call.result;
    }
    const pid = holderOf().pid!;
    const durations: number[] = [];
    const cpuBefore = processCpuMs(pid)!;
    const dbBefore = await dynamoCounts(dynamo);
    for (let i = 0; i < WARM_ROUNDS; i++) {
      const started = performance.now();
      const call = waitingCall(url, warm.headers, `round-${i}`, `round ${i}`);
      await answer(url, warm.headers, await call.question);
      const result = await call.result;
      if (result.result?.content?.[0]?.text !== `executed: round ${i}`)
        throw new Error(`round ${i}: ${JSON.stringify(result)}`);
      durations.push(performance.now() - started);
    }
    const roundCpuMs = (processCpuMs(pid)! - cpuBefore) / WARM_ROUNDS;
    const roundDynamo = perUnit(dbBefore, await dynamoCounts(dynamo), WARM_ROUNDS);

    // The sessions of the waiting calls, set up before the baseline: what is measured is the calls.
    const sessions: Array<Awaited<ReturnType<typeof initSession>>> = [];
    const most = STEPS[STEPS.length - 1]!;
    for (let i = 0; i < most; i += 16)
      sessions.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(16, most - i) }, () =>
            initSession(url, { capabilities: ELICITATION, clientInfo: CLIENT }),
          ),
        )),
      );
    await sleep(2000);
    if (holderOf().pid !== pid) throw new Error('the environment changed');
    const baselineMb = await steadyRss(pid);

    const calls: Array<ReturnType<typeof waitingCall>> = [];
    const questions: Json[] = [];
    const steps: Json[] = [];
    for (const n of STEPS) {
      while (calls.length < n) {
        const i = calls.length;
        calls.push(waitingCall(url, sessions[i]!.headers, `wait-${i}`, `wait ${i}`));
      }
      questions.push(...(await Promise.all(calls.slice(questions.length).map((call) => call.question))));
      await sleep(1500);
      const holder = holderOf();
      const rssMb = await steadyRss(pid);
      // Idle: every call waits for its person; the holder's looks and lease renewals are what runs.
      const cpu0 = processCpuMs(pid)!;
      const db0 = await dynamoCounts(dynamo);
      const t0 = performance.now();
      await sleep(IDLE_SECONDS * 1000);
      const seconds = (performance.now() - t0) / 1000;
      const idleCpuMs = processCpuMs(pid)! - cpu0;
      const idleDynamo = perUnit(db0, await dynamoCounts(dynamo), n * seconds);
      steps.push({
        waiting: n,
        openInEnvironment: holder.open,
        rssMb: round2(rssMb),
        addedMb: round2(rssMb - baselineMb),
        mbPerWaitingCall: round2((rssMb - baselineMb) / n),
        idleSeconds: round2(seconds),
        idleCpuMsPerSecond: round2(idleCpuMs / seconds),
        idleCpuMsPerWaitingCallSecond: Math.round((idleCpuMs / seconds / n) * 1000) / 1000,
        dynamodbPerWaitingCallSecond: idleDynamo,
      });
    }

    // Every question answered (the holder full, the answers start a second environment), every result checked.
    const statuses = await Promise.all(questions.map((question, i) => answer(url, sessions[i]!.headers, question)));
    const results = await Promise.all(calls.map((call) => call.result));
    const correct = results.filter((r, i) => r.result?.content?.[0]?.text === `executed: wait ${i}`).length;
    const asked = questions.filter((q, i) => q.params?.message === `Run \`wait ${i}\`?`).length;
    return {
      node: mode.nodeVersion,
      maxConcurrencyPerEnvironment: 128,
      environmentMemoryMb: 2048,
      round: {
        rounds: WARM_ROUNDS,
        durationMs: distribution(durations),
        cpuMs: round2(roundCpuMs),
        dynamodbRequests: roundDynamo,
      },
      baselineMb: round2(baselineMb),
      steps,
      answered: {
        questionsAsExpected: asked,
        answerStatuses: [...new Set(statuses)],
        correctResults: correct,
        of: calls.length,
        environmentsStarted: mode.stats().environmentsStarted,
        maxOpenPerEnvironment: mode.stats().maxOpenPerEnvironment,
      },
    };
  } finally {
    await mode.close();
  }
}

function perUnit(
  before: Record<string, { requests: number }>,
  after: Record<string, { requests: number }>,
  units: number,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [operation, counts] of Object.entries(after)) {
    const per = (counts.requests - (before[operation]?.requests ?? 0)) / units;
    if (per > 0) out[operation] = Math.round(per * 1000) / 1000;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// The cost model.

/** A rate from the environment, else its default; `assumed` when the default is not a published price. */
function rate(name: string, fallback: number): { value: number; from: string } {
  const given = process.env[name];
  if (given !== undefined && given !== '' && Number.isFinite(Number(given)))
    return { value: Number(given), from: 'env' };
  return { value: fallback, from: 'default' };
}

/** Lambda arm64, us-east-1, as docs/performance.md's cost table uses them. */
const ARM_REQUEST_PER_MILLION = 0.2;
const ARM_GB_SECOND = 0.0000133334;

/**
 * The function URL's figures docs/performance.md's cost table is built from (1024 MB; the release
 * defaults `streamReleaseAfterSeconds` 2 s and `streamReleaseRetryMs` 2 s):
 * - a held round answered at once: 2 requests (the call, the answer), 28.05 ms of invocation, DynamoDB
 *   $5.38 per million; each second of think time 1 GB-s and 4 reads (the holder's looks), $0.50;
 * - released: held for the grace, then its stream ends with `retry`; a reconnect every 2 s holding
 *   ~250 ms (0.5 requests and 0.125 GB-s per second of think time past the grace, DynamoDB $1.31);
 *   the round itself 3 requests, the grace plus ~100 ms, DynamoDB $9.38. At or under the grace it is
 *   the held round (the answer comes before the release).
 */
const HELD = { requests: 2, seconds: 0.02805, dynamodb: 5.38, dynamodbPerSecond: 0.5 };
const RELEASED = {
  graceSeconds: 2,
  requests: 3,
  extraSeconds: 0.1,
  dynamodb: 9.38,
  requestsPerSecond: 0.5,
  heldPerSecond: 0.125,
  dynamodbPerSecond: 1.31,
};

export const THINK_SECONDS = [0, 10, 60];

export interface CostRow {
  form: string;
  thinkSeconds: number;
  /** Per elicitation. */
  requests: number;
  gbSeconds: number;
  vcpuSeconds?: number;
  /** Per million elicitations. */
  computeUsd: number;
  dynamodbUsd: number;
  totalUsd: number;
}

/**
 * $ per million elicitations at each think time. `waiting`: webFunctionWaiting's result (MB per waiting
 * call at 128, CPU per round and per waiting second, the round's duration); `heldTime`: bench/held-time.ts's
 * measurement when it ran, printed beside the model's figure for the same think time.
 */
export function costModel(waiting: Json, heldTime?: Json): Json {
  const fu = {
    requestPerMillion: rate('FUNCTION_URL_RATE_REQUEST_PER_MILLION', ARM_REQUEST_PER_MILLION),
    gbSecond: rate('FUNCTION_URL_RATE_PER_GB_SECOND', ARM_GB_SECOND),
  };
  const wf = {
    requestPerMillion: rate('WEB_FUNCTION_RATE_REQUEST_PER_MILLION', ARM_REQUEST_PER_MILLION),
    cpuPerVcpuSecond: rate('WEB_FUNCTION_RATE_CPU_PER_VCPU_SECOND', 0),
    memoryPerGbSecond: rate('WEB_FUNCTION_RATE_MEMORY_PER_GB_SECOND', ARM_GB_SECOND),
  };
  const last = (waiting.steps as Json[]).at(-1)!;
  const mbPerCall = Math.max(0, last.mbPerWaitingCall as number);
  const roundSeconds = waiting.round.durationMs.p50 / 1000;
  const cpuRoundSeconds = waiting.round.cpuMs / 1000;
  const cpuPerWaitingSecond = last.idleCpuMsPerWaitingCallSecond / 1000;
  const money = (x: number) => Math.round(x * 100) / 100;

  const rows: CostRow[] = [];
  const functionUrl = (form: string, t: number, requests: number, seconds: number, dynamodb: number) => {
    const gbSeconds = seconds; // 1024 MB
    const compute = requests * fu.requestPerMillion.value + gbSeconds * 1e6 * fu.gbSecond.value;
    rows.push({
      form,
      thinkSeconds: t,
      requests,
      gbSeconds: Math.round(gbSeconds * 1e6) / 1e6,
      computeUsd: money(compute),
      dynamodbUsd: money(dynamodb),
      totalUsd: money(compute + dynamodb),
    });
  };
  /** A waiting call's share of its environment's 2048 MB: its own memory, or 1/calls-per-environment of it. */
  const webFunction = (form: string, t: number, shareMb: number) => {
    const gbSeconds = (shareMb / 1024) * (t + roundSeconds);
    const vcpuSeconds = cpuRoundSeconds + t * cpuPerWaitingSecond;
    const compute =
      HELD.requests * wf.requestPerMillion.value +
      gbSeconds * 1e6 * wf.memoryPerGbSecond.value +
      vcpuSeconds * 1e6 * wf.cpuPerVcpuSecond.value;
    const dynamodb = HELD.dynamodb + HELD.dynamodbPerSecond * t;
    rows.push({
      form,
      thinkSeconds: t,
      requests: HELD.requests,
      gbSeconds: Math.round(gbSeconds * 1e6) / 1e6,
      vcpuSeconds: Math.round(vcpuSeconds * 1e6) / 1e6,
      computeUsd: money(compute),
      dynamodbUsd: money(dynamodb),
      totalUsd: money(compute + dynamodb),
    });
  };
  const releasedSeconds = (t: number) =>
    t <= RELEASED.graceSeconds
      ? HELD.seconds + t
      : RELEASED.graceSeconds + RELEASED.extraSeconds + RELEASED.heldPerSecond * (t - RELEASED.graceSeconds);
  for (const t of THINK_SECONDS) {
    functionUrl(
      'function URL, held (1024 MB)',
      t,
      HELD.requests,
      HELD.seconds + t,
      HELD.dynamodb + HELD.dynamodbPerSecond * t,
    );
    const past = Math.max(0, t - RELEASED.graceSeconds);
    if (t <= RELEASED.graceSeconds)
      functionUrl(
        'function URL, released (trusted client)',
        t,
        HELD.requests,
        releasedSeconds(t),
        HELD.dynamodb + HELD.dynamodbPerSecond * t,
      );
    else
      functionUrl(
        'function URL, released (trusted client)',
        t,
        RELEASED.requests + RELEASED.requestsPerSecond * past,
        releasedSeconds(t),
        RELEASED.dynamodb + RELEASED.dynamodbPerSecond * past,
      );
    webFunction('Web Function, held, 64 per environment (default)', t, Math.max(mbPerCall, 2048 / 64));
    webFunction('Web Function, held, 128 per environment', t, Math.max(mbPerCall, 2048 / 128));
    webFunction('Web Function, held, measured MB only (lower bound)', t, mbPerCall);
  }
  // Per second of think time (per million elicitations): how many calls must wait at once in each Web
  // Function environment (its 2 GB shared by them) for a held call to cost what the function URL's does.
  const perSecond = {
    functionUrlHeld: fu.gbSecond.value * 1e6 + HELD.dynamodbPerSecond,
    functionUrlReleased:
      RELEASED.requestsPerSecond * fu.requestPerMillion.value +
      RELEASED.heldPerSecond * fu.gbSecond.value * 1e6 +
      RELEASED.dynamodbPerSecond,
    webFunctionHeldBeforeMemory: cpuPerWaitingSecond * wf.cpuPerVcpuSecond.value * 1e6 + HELD.dynamodbPerSecond,
    webFunctionEnvironment: 2 * wf.memoryPerGbSecond.value * 1e6,
  };
  const breakEven = (functionUrl: number) =>
    functionUrl > perSecond.webFunctionHeldBeforeMemory
      ? round2(perSecond.webFunctionEnvironment / (functionUrl - perSecond.webFunctionHeldBeforeMemory))
      : undefined;
  const check = heldTime && {
    thinkSeconds: heldTime.thinkSeconds,
    measuredHeldSeconds: heldTime.held?.invocationSeconds,
    modelHeldSeconds: round2(HELD.seconds + heldTime.thinkSeconds),
    measuredTrustedSeconds: heldTime.trusted?.invocationSeconds,
    modelTrustedSeconds: round2(releasedSeconds(heldTime.thinkSeconds)),
  };
  return {
    perMillionElicitations: true,
    rates: {
      functionUrl: {
        requestPerMillion: fu.requestPerMillion.value,
        gbSecond: fu.gbSecond.value,
        source: 'AWS list price, Lambda arm64, us-east-1 (docs/performance.md)',
        from: { requestPerMillion: fu.requestPerMillion.from, gbSecond: fu.gbSecond.from },
      },
      webFunction: {
        requestPerMillion: wf.requestPerMillion.value,
        cpuPerVcpuSecond: wf.cpuPerVcpuSecond.value,
        memoryPerGbSecond: wf.memoryPerGbSecond.value,
        // No published Web Function rates were found: a default is an assumption, not a price.
        assumed: Object.entries(wf)
          .filter(([, r]) => r.from === 'default')
          .map(([name]) => name),
      },
      dynamodb: 'the held and released rounds’ DynamoDB $ from docs/performance.md (on-demand, us-east-1)',
    },
    inputs: {
      webFunctionMbPerWaitingCall: mbPerCall,
      webFunctionRoundSeconds: roundSeconds,
      webFunctionCpuSecondsPerRound: cpuRoundSeconds,
      webFunctionCpuSecondsPerWaitingSecond: cpuPerWaitingSecond,
      functionUrlHeld: HELD,
      functionUrlReleased: RELEASED,
    },
    rows,
    perThinkSecond: {
      functionUrlHeld: money(perSecond.functionUrlHeld),
      functionUrlReleased: money(perSecond.functionUrlReleased),
      /** Plus the environment's memory (`webFunctionEnvironmentPerSecond`) divided by the calls waiting in it. */
      webFunctionHeldWithoutMemory: money(perSecond.webFunctionHeldBeforeMemory),
      webFunctionEnvironmentPerSecond: money(perSecond.webFunctionEnvironment),
      breakEvenCallsPerEnvironment: {
        vsFunctionUrlHeld: breakEven(perSecond.functionUrlHeld),
        vsFunctionUrlReleased: breakEven(perSecond.functionUrlReleased),
      },
    },
    heldTimeCheck: check,
  };
}

/** The Web Function part of the benchmark's printout. */
export function printWebFunction(results: Json): void {
  const w = results.webFunctionWaiting;
  if (w) {
    console.log(
      `Web Function, one environment (max 128 at once, Node ${w.node}): baseline VmRSS ${w.baselineMb} MB (warm, ${w.round.rounds} rounds; sessions set up); a round answered at once p50 ${w.round.durationMs.p50} ms, CPU ${w.round.cpuMs} ms, DynamoDB ${JSON.stringify(w.round.dynamodbRequests)}`,
    );
    console.log(
      'waiting  open  VmRSS MB  added MB  MB/call  idle CPU ms/s  CPU ms per call-second  DynamoDB per call-second',
    );
    for (const s of w.steps as Json[])
      console.log(
        `${String(s.waiting).padEnd(8)} ${String(s.openInEnvironment).padEnd(5)} ${String(s.rssMb).padEnd(9)} ${String(s.addedMb).padEnd(9)} ${String(s.mbPerWaitingCall).padEnd(8)} ${String(s.idleCpuMsPerSecond).padEnd(14)} ${String(s.idleCpuMsPerWaitingCallSecond).padEnd(23)} ${JSON.stringify(s.dynamodbPerWaitingCallSecond)}`,
      );
    const a = w.answered;
    console.log(
      `answered: ${a.correctResults} of ${a.of} results correct (${a.questionsAsExpected} questions as expected), answer statuses ${a.answerStatuses.join(',')}, environments started ${a.environmentsStarted}`,
    );
  }
  const c = results.costModel;
  if (!c) return;
  const r = c.rates;
  console.log(
    `cost per million elicitations (modelled): function URL $${r.functionUrl.requestPerMillion}/M requests, $${r.functionUrl.gbSecond}/GB-s; Web Function $${r.webFunction.requestPerMillion}/M requests, $${r.webFunction.cpuPerVcpuSecond}/vCPU-s, $${r.webFunction.memoryPerGbSecond}/GB-s${r.webFunction.assumed.length ? ` (assumed, no published rate: ${r.webFunction.assumed.join(', ')})` : ''}`,
  );
  console.log(`${'form'.padEnd(52)} think  requests  GB-s       vCPU-s    compute $  DynamoDB $  total $`);
  for (const row of c.rows as CostRow[])
    console.log(
      `${row.form.padEnd(52)} ${`${row.thinkSeconds} s`.padEnd(6)} ${String(row.requests).padEnd(9)} ${String(row.gbSeconds).padEnd(10)} ${String(row.vcpuSeconds ?? '-').padEnd(9)} ${String(row.computeUsd).padEnd(10)} ${String(row.dynamodbUsd).padEnd(11)} ${row.totalUsd}`,
    );
  const p = c.perThinkSecond;
  console.log(
    `per second of think time: function URL held $${p.functionUrlHeld}, released $${p.functionUrlReleased}; Web Function held $${p.webFunctionHeldWithoutMemory} + $${p.webFunctionEnvironmentPerSecond} (one environment's 2 GB) ÷ calls waiting in it: cheaper than held above ${p.breakEvenCallsPerEnvironment.vsFunctionUrlHeld}, than released above ${p.breakEvenCallsPerEnvironment.vsFunctionUrlReleased} calls per environment`,
  );
  const k = c.heldTimeCheck;
  if (k)
    console.log(
      `check (bench/held-time.ts, ${k.thinkSeconds} s think): held ${k.measuredHeldSeconds} s of invocations measured, ${k.modelHeldSeconds} s modelled; trusted ${k.measuredTrustedSeconds} s measured, ${k.modelTrustedSeconds} s modelled`,
    );
}

// `npx tsx bench/web-function.ts [results.json]`: the cost model again from a run's measurements
// (webFunctionWaiting, heldTime) with the rates of this environment, without measuring again.
if (require.main === module) {
  const file = process.argv[2] ?? join(__dirname, 'results/latest.json');
  const results = JSON.parse(readFileSync(file, 'utf8')) as Json;
  if (!results.webFunctionWaiting)
    throw new Error(`${file} has no webFunctionWaiting: run it with BENCH_ONLY=webFunctionWaiting`);
  printWebFunction({ ...results, costModel: costModel(results.webFunctionWaiting, results.heldTime) });
}
