import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { resolveRuntimeImage } from '../../tools/lambda-emulator/runtime-image';

/**
 * Runs the official conformance suite's server scenarios (`@modelcontextprotocol/conformance`, a
 * devDependency; `MCP_CONFORMANCE_DIR` may point at another copy) against one URL and reads what it
 * scored. The suite writes one folder per scenario (`server-<scenario>-<timestamp>/checks.json`);
 * each check is SUCCESS, FAILURE or WARNING (scored) or INFO or SKIPPED (not). One check id may occur
 * several times in a scenario; like the suite's own baseline, its occurrences collapse to the most
 * severe. The suite needs Node.js 22+ (the Lambda runtime image's Node 24 when this one is older).
 */

export type SpecVersion = '2025-11-25' | '2026-07-28';
export type Scored = 'SUCCESS' | 'WARNING' | 'FAILURE';

export interface Check {
  id: string;
  status: Scored | 'INFO' | 'SKIPPED';
  errorMessage?: string;
  details?: Record<string, unknown>;
}

export interface SuiteRun {
  /** The scenarios run, by name. */
  scenarios: string[];
  /** Per `<scenario>:<check id>` (the suite's baseline notation): the collapsed status of a scored check. */
  scored: Record<string, Scored>;
  /** Per scenario: every check as written. */
  checks: Record<string, Check[]>;
}

const SEVERITY: Record<Scored, number> = { SUCCESS: 0, WARNING: 1, FAILURE: 2 };
const TIMESTAMP = /-\d{4}-\d{2}-\d{2}T[\d-]+Z$/;

function conformanceCli(): string {
  const dir =
    process.env.MCP_CONFORMANCE_DIR ?? dirname(require.resolve('@modelcontextprotocol/conformance/package.json'));
  return join(dir, 'dist', 'index.js');
}

function node22(): string {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  return resolveRuntimeImage().node;
}

/**
 * Every scenario of `specVersion` (`--suite all --spec-version`: the scenarios of that revision's wire,
 * pending ones included; extensions such as tasks are not on the revision's timeline), or the named
 * scenarios, one after another. An extension's scenarios need `force` (`--force`): the suite skips a
 * scenario not on the revision's timeline, and the spec version still picks the wire it speaks.
 */
export async function runSuite(
  url: string,
  specVersion: SpecVersion,
  options: { scenario?: string | readonly string[]; force?: boolean; timeoutMs?: number } = {},
): Promise<SuiteRun> {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-'));
  try {
    const selections =
      options.scenario === undefined
        ? [['--suite', 'all']]
        : [options.scenario].flat().map((scenario) => ['--scenario', scenario]);
    let stderr = '';
    for (const selection of selections) {
      const args = [conformanceCli(), 'server', '--url', url, ...selection, '--spec-version', specVersion, '-o', dir];
      if (options.force) args.push('--force');
      const output = await promisify(execFile)(node22(), args, {
        // Beside a second copy of the test suite one run took over 120 s.
        timeout: options.timeoutMs ?? 300_000,
        maxBuffer: 16 * 1024 * 1024,
      }).catch((error: { stderr?: string; killed?: boolean }) => {
        // Exit 1 only says a check failed; the folders say which.
        if (error.killed) throw new Error(`the conformance suite timed out against ${url}`);
        return { stderr: error.stderr ?? '' };
      });
      stderr += output.stderr;
    }
    const run = readRun(dir);
    if (run.scenarios.length === 0) throw new Error(`the conformance suite ran no scenario against ${url}: ${stderr}`);
    return run;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs the jobs at most `limit` at a time, results in the jobs' order. The suite's checks wait on fixed
 * windows (a listen's notification within 1.5 s): seven suites at once on two cores, each with its own
 * process, would make those windows a measure of this test's own load rather than of the server.
 */
export async function inTurns<T>(limit: number, jobs: ReadonlyArray<() => Promise<T>>): Promise<T[]> {
  const results = new Array<T>(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const index = next++;
      results[index] = await (jobs[index] as () => Promise<T>)();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker));
  return results;
}

/** The server scenarios of an extension (`conformance list`: `- <name> [extension]`) whose names start with `prefix`. */
export async function extensionScenarios(prefix: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)(node22(), [conformanceCli(), 'list'], { maxBuffer: 4 * 1024 * 1024 });
  const clients = stdout.search(/client scenarios/i);
  const server = clients < 0 ? stdout : stdout.slice(0, clients);
  return [...server.matchAll(/^\s*- (\S+) \[extension\]$/gm)]
    .map((match) => match[1] as string)
    .filter((name) => name.startsWith(prefix));
}

function readRun(dir: string): SuiteRun {
  const run: SuiteRun = { scenarios: [], scored: {}, checks: {} };
  for (const folder of readdirSync(dir)) {
    const scenario = folder.replace(/^server-/, '').replace(TIMESTAMP, '');
    const file = join(dir, folder, 'checks.json');
    // A scenario that threw leaves its folder without checks.json (the suite prints the error).
    const checks: Check[] = existsSync(file)
      ? JSON.parse(readFileSync(file, 'utf8'))
      : [{ id: 'scenario-ran', status: 'FAILURE', errorMessage: 'the scenario threw; no checks.json' }];
    run.scenarios.push(scenario);
    run.checks[scenario] = checks;
    for (const check of checks) {
      if (check.status !== 'SUCCESS' && check.status !== 'WARNING' && check.status !== 'FAILURE') continue;
      const key = `${scenario}:${check.id}`;
      const before = run.scored[key];
      if (!before || SEVERITY[check.status] > SEVERITY[before]) run.scored[key] = check.status;
    }
  }
  run.scenarios.sort();
  return run;
}

/** What a run scores that is not SUCCESS, by `<scenario>:<check id>`. */
export function notPassing(run: SuiteRun): Record<string, Scored> {
  return Object.fromEntries(Object.entries(run.scored).filter(([, status]) => status !== 'SUCCESS'));
}

/**
 * The checks `through` does worse on than `direct`: passing directly but not through (scored lower,
 * or not scored at all: `'unscored'`), or failing or warning through while not scored directly.
 */
export function worseThrough(direct: SuiteRun, through: SuiteRun): Record<string, Scored | 'unscored'> {
  const worse: Record<string, Scored | 'unscored'> = {};
  for (const key of new Set([...Object.keys(direct.scored), ...Object.keys(through.scored)])) {
    const before = direct.scored[key];
    const after = through.scored[key];
    if (before === 'SUCCESS' && after !== 'SUCCESS') worse[key] = after ?? 'unscored';
    else if (before === undefined && after !== undefined && after !== 'SUCCESS') worse[key] = after;
  }
  return worse;
}
