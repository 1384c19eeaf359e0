import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../../support/mcp-http';
import { jestNotRunLine, reportAtStart } from '../../support/setup/jest-report';
import type { PythonEnvironment } from '../../support/setup/python-environment';
import { type SetUpOptions, setUpTests } from '../../support/setup/step';
import { fakeRunner } from './fake-runner';

/**
 * The test set-up `npm test`, `npm run test:setup` and CI share, on a temporary root with a scripted
 * python3 and pip: what needs root is checked and said first, the rest is prepared once, two runs at
 * once prepare it once, and a run that requires all stops before preparing anything.
 */

let root: string;
let python: PythonEnvironment;
let lines: string[];
const NO_CHROMIUM = { CHROMIUM_PATH: '/nonexistent/chromium', PATH: process.env.PATH };
const WITH_CHROMIUM = { CHROMIUM_PATH: process.execPath, PATH: process.env.PATH };
const BROWSER_LINE =
  'tests not run here: 11 files need Chromium (not at /nonexistent/chromium, CHROMIUM_PATH): oauth/client-id-metadata, ' +
  'oauth/consent-security, oauth/hostile-target, oauth/login-csrf, oauth/per-user-oauth, oauth/protected-target-direct, ' +
  'oauth/refresh-across-instances, oauth/released-while-connecting, oauth/tokens-not-logged, ' +
  'oauth/url-elicitation-samples, integration/oauth-demo. install: sudo apt-get install chromium';

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'test-setup-'));
  python = { dir: join(root, '.venv-recipes'), requirements: join(root, 'requirements.txt') };
  writeFileSync(python.requirements, 'mcp>=2.3,<3\n');
  mkdirSync(join(root, 'simple'));
  lines = [];
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function setUp(env: NodeJS.ProcessEnv, options: Partial<SetUpOptions> = {}) {
  const runner = fakeRunner();
  const images: string[] = [];
  const result = setUpTests({
    root,
    env,
    selected: () => true,
    write: (line) => lines.push(line),
    run: runner.run,
    python,
    mirror: join(root, 'simple'),
    // Installed already: the real one then says nothing.
    runtimeImage: async () => {
      images.push('asked');
    },
    asRoot: false,
    ...options,
  });
  return { result, runner, images };
}

test('without Chromium: the first line names its files and the install command; the rest is prepared', async () => {
  const images: string[] = [];
  const { result, runner } = setUp(NO_CHROMIUM, {
    runtimeImage: async (progress) => {
      images.push('built');
      progress('preparing the Lambda runtime image (built once per machine) …');
      progress('  ready in 200 s');
    },
  });
  const { ok, missing } = await result;
  expect(ok).toBe(true);
  expect(missing.map((m) => m.prerequisite.name)).toEqual(['Chromium']);
  expect(lines[0]).toBe(BROWSER_LINE);
  expect(lines.slice(1)).toEqual([
    expect.stringMatching(/^test set-up: preparing the Python clients' environment once/),
    expect.stringMatching(/^test set-up: the Python clients' environment is ready/),
    'test set-up: preparing the Lambda runtime image (built once per machine) …',
    'test set-up: Lambda runtime image: ready in 200 s',
  ]);
  expect(runner.calls.map(([command]) => command)).toEqual(['python3', join(python.dir, 'bin', 'python')]);
  expect(images).toEqual(['built']);
});

test('everything here and prepared: nothing is said, nothing installed', async () => {
  await setUp(WITH_CHROMIUM).result;
  lines = [];
  const { result, runner } = setUp(WITH_CHROMIUM);
  await expect(result).resolves.toEqual({ ok: true, missing: [] });
  expect(runner.calls).toEqual([]);
  expect(lines).toEqual([]);
});

test('a run that requires all (CI): it stops after the line, before preparing anything', async () => {
  for (const env of [
    { ...NO_CHROMIUM, CI: 'true' },
    { ...NO_CHROMIUM, TEST_REQUIRE_ALL: '1' },
  ]) {
    lines = [];
    const { result, runner, images } = setUp(env);
    await expect(result).resolves.toMatchObject({ ok: false });
    expect(lines).toEqual([
      BROWSER_LINE,
      'test set-up: the run requires every test (--require-all or CI): it fails rather than skip them',
    ]);
    expect(runner.calls).toEqual([]);
    expect(images).toEqual([]);
  }
});

test('a narrowed run that selects none of the missing files is neither told nor failed', async () => {
  const { result } = setUp({ ...NO_CHROMIUM, CI: 'true' }, { selected: (suite) => suite.startsWith('test/unit/') });
  await expect(result).resolves.toMatchObject({ ok: true });
  expect(lines.filter((line) => line.startsWith('tests not run'))).toEqual([]);
});

test('two set-ups at once: one prepares, the other waits, then finds it ready', async () => {
  const first = setUp(WITH_CHROMIUM);
  first.runner.hold();
  const second = setUp(WITH_CHROMIUM);
  await eventually(() => expect(first.runner.held()).toBeGreaterThan(0));
  first.runner.release();
  await expect(Promise.all([first.result, second.result])).resolves.toEqual([
    { ok: true, missing: [] },
    { ok: true, missing: [] },
  ]);
  expect(first.runner.calls).toHaveLength(2);
  expect(second.runner.calls).toEqual([]);
  expect(lines).toContain(`test set-up: waiting for the set-up of another run (pid ${process.pid}) …`);
});

test('pip fails: a line names the Python files and the retry, and the run goes on (it stops if it requires all)', async () => {
  const failing = fakeRunner({ pip: { status: 1, output: 'ERROR: No matching distribution found for mcp' } });
  const { result } = setUp(WITH_CHROMIUM, { run: failing.run });
  const { ok, missing } = await result;
  expect(ok).toBe(true);
  expect(missing.map((m) => [m.prerequisite.name, m.reason])).toEqual([
    ["the Python clients' environment", 'pip install failed (exit 1)'],
  ]);
  expect(lines).toContain('ERROR: No matching distribution found for mcp');
  expect(lines.at(-1)).toMatch(
    /^tests not run here: 7 files need the Python clients' environment \(pip install failed \(exit 1\)\): oauth\/url-elicitation-samples, .*\. prepare: npm run test:setup$/,
  );

  lines = [];
  const strict = setUp({ ...WITH_CHROMIUM, CI: '1' }, { run: failing.run });
  await expect(strict.result).resolves.toMatchObject({ ok: false });
  expect(lines.at(-1)).toBe(
    'test set-up: the run requires every test (--require-all or CI): it fails rather than skip them',
  );
});

test('the Lambda runtime image cannot be built: the run stops, saying why', async () => {
  const { result } = setUp(WITH_CHROMIUM, {
    runtimeImage: async () => {
      throw new Error('installing the Lambda runtime image failed (exit 1)');
    },
  });
  await expect(result).resolves.toMatchObject({ ok: false });
  expect(lines.at(-1)).toBe('test set-up failed: installing the Lambda runtime image failed (exit 1)');
});

describe('a jest run started directly (npx jest)', () => {
  const config = (patterns: string[]) => ({ rootDir: join(__dirname, '../../..'), testPathPatterns: { patterns } });

  test('names what it selects and cannot run; under npm test it leaves that to the set-up', () => {
    expect(jestNotRunLine(config(['test/oauth/consent']), NO_CHROMIUM)).toMatch(
      /^tests not run here: 1 file needs Chromium \(not at \/nonexistent\/chromium, CHROMIUM_PATH\): oauth\/consent-security\. install: (sudo )?apt-get install chromium$/,
    );
    expect(jestNotRunLine(config(['test/unit/']), NO_CHROMIUM)).toBeUndefined();
    expect(jestNotRunLine(config(['test/oauth/consent']), { ...NO_CHROMIUM, TEST_PREREQUISITES_REPORTED: '1' })).toBe(
      undefined,
    );
  });

  test('requiring all, its global set-up fails the run', () => {
    const write = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(() => reportAtStart(config(['test/oauth/consent']), { ...NO_CHROMIUM, CI: 'true' })).toThrow(
        'the run requires every test (--require-all or CI): it fails rather than skip them',
      );
      expect(() => reportAtStart(config(['test/unit/']), { ...NO_CHROMIUM, CI: 'true' })).not.toThrow();
    } finally {
      write.mockRestore();
    }
  });
});
