import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type PythonEnvironment,
  preparePythonEnvironment,
  pythonShortfall,
  recipesPython,
  runCommand,
} from '../support/setup/python-environment';
import { fakeRunner } from '../unit/test-setup/fake-runner';

/**
 * The Python clients' environment the test set-up prepares: made once (venv, then pip from the
 * requirements file), marked, and then found ready by reading one file; a changed requirements file
 * installs again; what cannot be done names what supplies it.
 */

let dir: string;
let at: PythonEnvironment;
let mirror: string;
let lines: string[];
const REQUIREMENTS = 'mcp>=2.3,<3\nfastmcp>=4,<5  # a client\nrequests>=2.32,<3\n';

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'python-environment-'));
  at = { dir: join(dir, '.venv-recipes'), requirements: join(dir, 'requirements.txt') };
  mirror = join(dir, 'simple');
  mkdirSync(mirror);
  writeFileSync(at.requirements, REQUIREMENTS);
  lines = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const prepare = (runner: ReturnType<typeof fakeRunner>, env: NodeJS.ProcessEnv = {}) =>
  preparePythonEnvironment({ at, env, run: runner.run, progress: (line) => lines.push(line), mirror });

const python = () => join(at.dir, 'bin', 'python');
const pip = (...index: string[]) => [
  python(),
  ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...index, '--requirement', at.requirements],
];

test('a machine without it: the venv is made, the requirements installed from the local index, then it is ready', async () => {
  expect(pythonShortfall({}, at)).toEqual({
    reason: `${at.dir} not prepared`,
    packages: [],
    command: 'npm run test:setup',
  });
  const runner = fakeRunner();
  await expect(prepare(runner)).resolves.toBeUndefined();
  expect(runner.calls).toEqual([['python3', ['-m', 'venv', at.dir]], pip('--index-url', `file://${mirror}`)]);
  expect(pythonShortfall({}, at)).toBeUndefined();
  expect(lines).toEqual([
    `test set-up: preparing the Python clients' environment once (${at.dir}: mcp, fastmcp, requests) …`,
    expect.stringMatching(/^test set-up: the Python clients' environment is ready \(\d+ s\)$/),
  ]);
});

test('a second run asks nothing and says nothing', async () => {
  await prepare(fakeRunner());
  lines = [];
  const again = fakeRunner();
  await expect(prepare(again)).resolves.toBeUndefined();
  expect(again.calls).toEqual([]);
  expect(lines).toEqual([]);
});

test('a changed requirements file installs again, in the same venv', async () => {
  await prepare(fakeRunner());
  writeFileSync(at.requirements, `${REQUIREMENTS}httpx>=0.28\n`);
  expect(pythonShortfall({}, at)).toMatchObject({ reason: `${at.dir} not prepared` });
  const runner = fakeRunner();
  await prepare(runner);
  expect(runner.calls).toEqual([pip('--index-url', `file://${mirror}`)]);
  expect(pythonShortfall({}, at)).toBeUndefined();
});

test('PIP_INDEX_URL set, or no local index: pip chooses its index', async () => {
  const withUrl = fakeRunner();
  await prepare(withUrl, { PIP_INDEX_URL: 'http://127.0.0.1:9/simple' });
  expect(withUrl.calls[1]).toEqual(pip());

  rmSync(at.dir, { recursive: true });
  rmSync(mirror, { recursive: true });
  const noMirror = fakeRunner();
  await prepare(noMirror);
  expect(noMirror.calls[1]).toEqual(pip());
});

test('no python3: names the Debian packages that install it and the command that prepares it after', async () => {
  const runner = fakeRunner({ python3: { status: 127, output: 'python3: spawn python3 ENOENT' } });
  await expect(prepare(runner)).resolves.toEqual({
    reason: 'python3 not found',
    packages: ['python3', 'python3-venv'],
    command: 'npm run test:setup',
  });
  expect(runner.calls).toHaveLength(1);
  expect(lines).toContain('python3: spawn python3 ENOENT');
});

test("Debian's python3 without its venv module: python3-venv is named", async () => {
  const output = 'The virtual environment was not created successfully because ensurepip is not available.';
  const runner = fakeRunner({ python3: { status: 1, output } });
  await expect(prepare(runner)).resolves.toEqual({
    reason: 'python3 -m venv failed (exit 1)',
    packages: ['python3', 'python3-venv'],
    command: 'npm run test:setup',
  });
  expect(lines).toContain(output);
});

test('pip fails: its last lines are shown, nothing is marked, and the next run tries again', async () => {
  const output = Array.from({ length: 30 }, (_, i) => `pip line ${i + 1}`).join('\n');
  const failing = fakeRunner({ pip: { status: 1, output } });
  await expect(prepare(failing)).resolves.toEqual({
    reason: 'pip install failed (exit 1)',
    packages: [],
    command: 'npm run test:setup',
  });
  expect(lines[1]).toBe(output.split('\n').slice(-20).join('\n'));
  expect(pythonShortfall({}, at)).toMatchObject({ reason: `${at.dir} not prepared` });

  const retry = fakeRunner();
  await expect(prepare(retry)).resolves.toBeUndefined();
  expect(retry.calls).toEqual([pip('--index-url', `file://${mirror}`)]);
});

test('RECIPES_PYTHON names the interpreter instead: nothing is prepared', async () => {
  const interpreter = join(dir, 'python');
  writeFileSync(interpreter, '');
  const runner = fakeRunner();
  await expect(prepare(runner, { RECIPES_PYTHON: interpreter })).resolves.toBeUndefined();
  expect(recipesPython({ RECIPES_PYTHON: interpreter }, at)).toBe(interpreter);
  await expect(prepare(runner, { RECIPES_PYTHON: join(dir, 'none') })).resolves.toEqual({
    reason: `RECIPES_PYTHON names no file (${join(dir, 'none')})`,
    packages: [],
  });
  expect(runner.calls).toEqual([]);
  expect(recipesPython({}, at)).toBe(python());
});

test('the real runner: a program that is not there is status 127; one that fails, its status and output', async () => {
  await expect(runCommand('no-such-program-here', [])).resolves.toMatchObject({ status: 127 });
  await expect(runCommand(process.execPath, ['-e', 'console.error("why"); process.exit(3)'])).resolves.toEqual({
    status: 3,
    output: 'why\n',
  });
});
