/**
 * `npx tsx bench/import-time.ts [bundle.mjs] [runs] [--instructions]`: how long a fresh Node takes to
 * import the Lambda bundle (dist/lambda/index.mjs, built first when none is named), the median of
 * `runs` (7) fresh processes, on this Node and on the deployed runtime's Node (the `--lambda` image's,
 * when installed). The part of a cold start the bundle decides; `npm run bench` reports it with the
 * rest. `--instructions`: also the instructions the import executes on the runtime's Node, counted by
 * valgrind (callgrind; a process that imports nothing subtracted), which repeat within a fraction of
 * a per cent on a loaded machine where the milliseconds do not (about a minute per count); and those
 * of the import plus a first invocation, so work moved from the import to the first request shows.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { resolveRuntimeImage } from '../tools/lambda-emulator/runtime-image';
import { percentile } from './stats';

const root = join(__dirname, '..');
export const BUNDLE = join(root, 'dist/lambda/index.mjs');

/** The bundle's shape: its entry file's bytes, and its folder's chunks and bytes of code (source maps left out). */
export function bundleShape(bundle: string): { entryBytes: number; chunks: number; codeBytes: number } {
  const folder = dirname(bundle);
  const code = readdirSync(folder).filter((name) => name.endsWith('.mjs'));
  const codeBytes = code.reduce((sum, name) => sum + statSync(join(folder, name)).size, 0);
  return { entryBytes: statSync(bundle).size, chunks: code.length - 1, codeBytes };
}

/** Milliseconds of each of `runs` imports of `bundle`, each in a fresh `node` process. */
export function importTimes(bundle: string, runs = 7, node = process.execPath): number[] {
  // `awslambda` is the managed runtime's global the handler module uses at import.
  const script = `globalThis.awslambda={streamifyResponse:f=>f,HttpResponseStream:{}};const t=performance.now();await import(${JSON.stringify(pathToFileURL(bundle).href)});console.log(performance.now()-t)`;
  return Array.from({ length: runs }, () =>
    Number(
      execFileSync(node, ['--input-type=module', '-e', script], {
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      }).toString(),
    ),
  );
}

/**
 * A first invocation that builds the gateway from `GATEWAY_CONFIG` (the configuration parsed, the
 * DynamoDB client made) and answers a `GET /mcp` without any network: what a lazier import would move
 * to the first request shows here. The stream ends when the handler wrote its answer.
 */
const FIRST_INVOCATION = `
const { Writable } = await import('node:stream');
const stream = new Writable({ write(_c, _e, cb) { cb(); } });
const ended = new Promise((resolve) => stream.on('finish', resolve));
await mod.handler({ version: '2.0', rawPath: '/mcp', rawQueryString: '', headers: { host: 'x.lambda-url.eu-west-1.on.aws' },
  requestContext: { http: { method: 'GET', path: '/mcp', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' },
    domainName: 'x.lambda-url.eu-west-1.on.aws', requestId: 'r', timeEpoch: 0 }, isBase64Encoded: false },
  stream, { getRemainingTimeInMillis: () => 900000 });
await ended;`;

/**
 * Millions of instructions `node` executes importing `bundle` (and, with `firstInvocation`, serving the
 * first invocation described above), less those of a process importing nothing.
 */
export function importInstructions(bundle: string, node = process.execPath, firstInvocation = false): number {
  const count = (module?: string) => {
    const script = `globalThis.awslambda={streamifyResponse:f=>f,HttpResponseStream:{from:(s)=>s}};${module ? `const mod=await import(${JSON.stringify(pathToFileURL(module).href)});${firstInvocation ? FIRST_INVOCATION : ''}` : ''}`;
    // callgrind prints its count on stderr.
    const { stderr } = spawnSync(
      'valgrind',
      ['--tool=callgrind', '--callgrind-out-file=/dev/null', node, '--input-type=module', '-e', script],
      {
        encoding: 'utf8',
        env: {
          ...process.env,
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          GATEWAY_CONFIG: JSON.stringify({ tableName: 'bench', targets: [] }),
          GATEWAY_LOG_LEVEL: 'SILENT',
          AWS_REGION: 'eu-west-1',
          AWS_ACCESS_KEY_ID: 'bench',
          AWS_SECRET_ACCESS_KEY: 'bench',
        },
      },
    );
    const collected = /Collected : (\d+)/.exec(stderr ?? '');
    if (!collected) throw new Error('callgrind printed no count');
    return Number(collected[1]);
  };
  return Math.round((count(bundle) - count()) / 1e6);
}

export function buildBundle(): void {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'ignore' });
}

/** The `--lambda` image's Node.js binary and version, or undefined where it is not installed. */
export function runtimeNode(): { node: string; version: string } | undefined {
  try {
    const image = resolveRuntimeImage();
    return { node: image.node, version: image.nodeVersion };
  } catch {
    return undefined;
  }
}

if (require.main === module) {
  const args = process.argv.slice(2).filter((arg) => arg !== '--instructions');
  const named = args[0];
  const runs = Number(args[1] ?? 7);
  if (!named) buildBundle();
  const bundle = resolve(named ?? BUNDLE);
  const median = (times: number[]) => percentile(times, 50).toFixed(1);
  const shape = bundleShape(bundle);
  const kib = (bytes: number) => (bytes / 1024).toFixed(0);
  console.log(
    `${bundle}: ${kib(shape.entryBytes)} KiB; with its ${shape.chunks} chunks ${kib(shape.codeBytes)} KiB of code in the folder`,
  );
  const here = importTimes(bundle, runs);
  console.log(
    `Node ${process.version}: import median ${median(here)} ms of ${runs} (${here.map(Math.round).join(', ')})`,
  );
  const runtime = runtimeNode();
  if (runtime) {
    const there = importTimes(bundle, runs, runtime.node);
    console.log(
      `Node ${runtime.version}: import median ${median(there)} ms of ${runs} (${there.map(Math.round).join(', ')})`,
    );
  }
  if (process.argv.includes('--instructions')) {
    const node = runtime?.node ?? process.execPath;
    console.log(
      `Node ${runtime?.version ?? process.version}: import ${importInstructions(bundle, node)} M instructions; import and a first invocation (the gateway built, GET /mcp answered) ${importInstructions(bundle, node, true)} M`,
    );
  }
}
