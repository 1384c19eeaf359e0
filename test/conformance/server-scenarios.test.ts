import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { resolveRuntimeImage } from '../../tools/lambda-emulator/runtime-image';
import { startConformanceServer } from '../support/servers/conformance-server';
import { withGateway } from '../support/with-gateway';

/**
 * The official conformance suite's server scenarios (`@modelcontextprotocol/conformance`, every
 * scenario of 2025-11-25: `--suite all`), run against our reference server
 * (test/support/servers/conformance-server.ts) directly and through the gateway (the local server, the
 * server as its one target, bare tool names). Everything that passes directly must pass through the
 * gateway, except the gaps named below; a gap that starts passing fails this test, so the list
 * stays true (the suite's own `--expected-failures` rule).
 *
 * The suite needs Node.js 22+ (the runtime image's Node 24 is used when this one is older); the package
 * is a devDependency (`MCP_CONFORMANCE_DIR` may point at another copy).
 */

/** Scenarios the gateway does not pass yet, and why. */
const GATEWAY_GAPS: Record<string, string> = {};

function conformanceDir(): string {
  return process.env.MCP_CONFORMANCE_DIR ?? dirname(require.resolve('@modelcontextprotocol/conformance/package.json'));
}

function node22(): string {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  return resolveRuntimeImage().node;
}

interface SuiteRun {
  /** Per scenario: passed (no failed check) or not. */
  scenarios: Record<string, boolean>;
  /** The output directory: one folder of checks.json per scenario. */
  dir: string;
}

async function runSuite(cli: string, url: string): Promise<SuiteRun> {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-'));
  const { stdout } = await promisify(execFile)(node22(), [cli, 'server', '--url', url, '--suite', 'all', '-o', dir], {
    timeout: 240_000,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' })); // exit 1 when a scenario fails
  const scenarios: Record<string, boolean> = {};
  for (const line of stdout.split('\n')) {
    const match = /^[✓✗] ([\w-]+): (\d+) passed, (\d+) failed/.exec(line);
    if (match?.[1]) scenarios[match[1]] = match[3] === '0';
  }
  return { scenarios, dir };
}

function checksOf(
  run: SuiteRun,
  scenario: string,
): Array<{ id: string; status: string; details?: Record<string, unknown> }> {
  const folder = readdirSync(run.dir).find((name) => name.startsWith(`server-${scenario}-`));
  return folder ? JSON.parse(readFileSync(join(run.dir, folder, 'checks.json'), 'utf8')) : [];
}

const cli = join(conformanceDir(), 'dist', 'index.js');

describe('the official conformance suite (server scenarios, 2025-11-25)', () => {
  const gw = withGateway(
    { logLevel: 'SILENT', toolNamePrefix: 'conditional' },
    { targets: { conformance: () => startConformanceServer() } },
  );
  let direct: SuiteRun;

  beforeAll(async () => {
    direct = await runSuite(cli, gw.targets.conformance.url);
  }, 300_000);

  it('passes every scenario directly against the reference server', () => {
    expect(Object.keys(direct.scenarios).length).toBeGreaterThanOrEqual(30);
    expect(Object.entries(direct.scenarios).filter(([, passed]) => !passed)).toEqual([]);
  });

  it('passes through the gateway every scenario that passes directly, but the named gaps', async () => {
    const through = await runSuite(cli, gw.url);
    const failing = Object.entries(through.scenarios)
      .filter(([, passed]) => !passed)
      .map(([name]) => name)
      .sort();
    expect(failing).toEqual(Object.keys(GATEWAY_GAPS).sort());
    expect(Object.keys(through.scenarios).sort()).toEqual(Object.keys(direct.scenarios).sort());
    // server-sse-polling "passes" even when the call fails (it only warns); the call must complete.
    const polling = checksOf(through, 'server-sse-polling');
    expect(polling.some((check) => check.details?.receivedToolResponse === true)).toBe(true);
  }, 300_000);
});
