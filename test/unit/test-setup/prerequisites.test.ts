import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { chromium, openssl, PREREQUISITES, pythonClients, runsHere } from '../../support/prerequisites';
import { requireAll } from '../../support/setup/prerequisite';

/**
 * Whether a test that needs something of the machine runs: decided in one place, from what is here
 * and the run's mode (a run that requires all runs it, and it fails).
 */

const ROOT = join(__dirname, '../../..');
const BROWSER_FILE = 'test/oauth/consent-security.test.ts';

test('Chromium: at CHROMIUM_PATH (else /usr/bin/chromium); missing, it names where it looked and its package', () => {
  expect(chromium.check({ CHROMIUM_PATH: process.execPath })).toBeUndefined();
  expect(chromium.check({ CHROMIUM_PATH: '/nonexistent/chromium' })).toEqual({
    reason: 'not at /nonexistent/chromium, CHROMIUM_PATH',
    packages: ['chromium'],
  });
});

test('openssl: looked for on PATH', () => {
  expect(openssl.check({ PATH: `/nonexistent:${process.env.PATH}` })).toBeUndefined();
  expect(openssl.check({ PATH: '/nonexistent' })).toEqual({ reason: 'not on PATH', packages: ['openssl'] });
});

test('a missing prerequisite skips its tests, unless the run requires all (--require-all or CI)', () => {
  const without = { CHROMIUM_PATH: '/nonexistent/chromium' };
  expect(runsHere([chromium], BROWSER_FILE, without)).toBe(false);
  expect(runsHere([chromium], BROWSER_FILE, { CHROMIUM_PATH: process.execPath })).toBe(true);
  expect(runsHere([chromium], BROWSER_FILE, { ...without, TEST_REQUIRE_ALL: '1' })).toBe(true);
  expect(runsHere([chromium], BROWSER_FILE, { ...without, CI: 'true' })).toBe(true);
  expect(runsHere([chromium], BROWSER_FILE, { ...without, CI: 'false' })).toBe(false);
  expect(requireAll({ CI: '0' })).toBe(false);
  expect(requireAll({ CI: '' })).toBe(false);
});

test('a gate in a file its prerequisite does not list throws, naming what to add', () => {
  expect(() => runsHere([pythonClients], BROWSER_FILE, {})).toThrow(
    "test/oauth/consent-security.test.ts needs the Python clients' environment: add it to that prerequisite's suites (test/support/prerequisites.ts), so a run without it names the file",
  );
});

test('every file a prerequisite lists exists', () => {
  const listed = PREREQUISITES.flatMap((prerequisite) => prerequisite.suites);
  expect(listed.filter((suite) => !existsSync(join(ROOT, suite)))).toEqual([]);
});

test('no test file decides to skip on its own: the gates of test/support/prerequisites.ts do', () => {
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
    );
  const skipping = files(join(ROOT, 'test'))
    .filter((file) => !file.endsWith('test/support/prerequisites.ts') && file !== __filename)
    .filter((file) => /\b(describe|it|test)\.skip\b|\bx(it|describe|test)\(/.test(readFileSync(file, 'utf8')))
    .map((file) => relative(ROOT, file));
  expect(skipping).toEqual([]);
});
