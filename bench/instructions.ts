/**
 * `npx tsx bench/instructions.ts <mode>[,<mode>…] [calls]`: instructions the gateway process executes
 * per call, counted by valgrind (callgrind), which stays repeatable on a loaded machine where CPU
 * time does not. For measuring a lever whose effect is small; the published figures come from
 * `npm run bench`.
 *
 * The gateway (bench/serve-gateway.ts, bundled by esbuild so it starts in reasonable time under
 * valgrind) runs with instrumentation off; after a warm-up it is switched on for `calls` calls of
 * each mode and the total is divided; a full collection before and (counted) after the calls
 * makes the phase pay for its garbage, so runs repeat within a few per cent. Modes: `modern` (2026-07-28 echo on the dual-era target),
 * `legacy` (2025 echo on the 2025-only target, no input capabilities), `legacy-input` (the same with
 * elicitation declared: the target session's GET stream per call), `legacy-dual` (2025 echo on the
 * dual-era target, elicitation declared).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { type BenchClient, legacyClient, modernClient } from './clients';
import { type Child, startChild, startTarget } from './processes';

const modes = (process.argv[2] ?? 'modern').split(',');
const calls = Number(process.argv[3] ?? 200);
const WARMUP = 300;

async function connect(mode: string, url: string): Promise<[BenchClient, string]> {
  switch (mode) {
    case 'modern':
      return [await modernClient(url), 'dual___echo'];
    case 'legacy':
      return [await legacyClient(url, { elicitation: false }), 'legacy___echo'];
    case 'legacy-input':
      return [await legacyClient(url), 'legacy___echo'];
    case 'legacy-dual':
      return [await legacyClient(url), 'dual___echo'];
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'instructions-'));
  const bundle = join(dir, 'gateway.mjs');
  await build({
    entryPoints: [join(__dirname, 'serve-gateway.ts')],
    outfile: bundle,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['dynalite'],
    mainFields: ['module', 'main'],
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    logLevel: 'warning',
  });
  const children: Child[] = [];
  const dynamo = await startChild(['bench/serve-dynamo.ts'], /ready (\S+)/);
  children.push(dynamo);
  const [legacy, dual] = await Promise.all([startTarget('legacy'), startTarget('dual')]);
  children.push(legacy, dual);
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      targets: [
        { name: 'legacy', url: legacy.url },
        { name: 'dual', url: dual.url },
      ],
      requestStateKeys: { current: 'k'.repeat(40) },
      logLevel: 'SILENT',
    }),
  );
  const out = join(dir, 'callgrind.out');
  const gateway = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      '--smc-check=all-non-file',
      `--callgrind-out-file=${out}`,
      process.execPath,
      '--expose-gc',
      bundle,
      config,
      dynamo.url,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } },
  );
  let output = '';
  const waitFor = (pattern: RegExp, from: number) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${pattern} from the gateway\n${output}`)), 300_000);
      const check = () => {
        const match = pattern.exec(output.slice(from));
        if (!match) return;
        clearTimeout(timer);
        gateway.stdout.off('data', check);
        resolve(match);
      };
      gateway.stdout.on('data', check);
      check();
    });
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
  };
  gateway.stdout.on('data', onData);
  gateway.stderr.on('data', onData);
  /** A full collection (instrumented or not), so a measured phase pays for the garbage it made. */
  const gc = async () => {
    const from = output.length;
    gateway.stdin.write('gc\n');
    await waitFor(/gc done/, from);
  };
  try {
    const url = (await waitFor(/MCP gateway ready: (\S+)/, 0))[1]!;
    const control = (...args: string[]) =>
      execFileSync('callgrind_control', [...args, String(gateway.pid)], { stdio: 'pipe' }).toString();
    for (const mode of modes) {
      const [client, tool] = await connect(mode, url);
      for (let i = 0; i < WARMUP; i++) await client.call(tool, { text: 'x' });
      await gc();
      control('--zero');
      control('-i', 'on');
      for (let i = 0; i < calls; i++) await client.call(tool, { text: 'x' });
      await gc();
      control('-i', 'off');
      control('--dump');
      await client.close();
      // Each dump is a file of its own: callgrind.out.<n>, the newest has the highest n.
      const [latest] = readdirSync(dir)
        .filter((name) => name.startsWith('callgrind.out.'))
        .sort((a, b) => Number(b.split('.').pop()) - Number(a.split('.').pop()));
      const totals = readFileSync(join(dir, latest!), 'utf8')
        .split('\n')
        .find((line) => line.startsWith('totals:'));
      const total = Number(totals?.split(/\s+/)[1]);
      console.log(`${mode}: ${(total / calls / 1e6).toFixed(2)} M instructions per call (${calls} calls)`);
    }
  } finally {
    gateway.kill('SIGKILL');
    await Promise.all(children.map((c) => c.stop()));
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
