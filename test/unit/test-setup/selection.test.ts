import { jestPathPatterns, selectionOf } from '../../support/setup/selection';

/** Which test files a run selects, read from its jest arguments as jest reads them. */

const ROOT = '/repo';
const FILES = [
  'test/oauth/consent-security.test.ts',
  'test/integration/oauth-demo.test.ts',
  'test/unit/catalog/cache.test.ts',
];
const chosen = (patterns: string[]) => FILES.filter(selectionOf(patterns, ROOT));

test("jest's rules: regular expressions on the path, case-insensitive, ./ anchored at the root, absolute paths", () => {
  expect(chosen([])).toEqual(FILES);
  expect(chosen(['test/oauth/'])).toEqual([FILES[0]]);
  expect(chosen(['OAUTH'])).toEqual([FILES[0], FILES[1]]);
  expect(chosen(['oauth-demo', 'unit/'])).toEqual([FILES[1], FILES[2]]);
  expect(chosen(['./integration'])).toEqual([]);
  expect(chosen(['./test/integration'])).toEqual([FILES[1]]);
  expect(chosen(['/repo/test/unit'])).toEqual([FILES[2]]);
  expect(chosen(['^/repo/test/oauth'])).toEqual([FILES[0]]);
  // jest runs everything when a pattern is not a regular expression.
  expect(chosen(['oauth/(', 'unit'])).toEqual(FILES);
});

test("the patterns of a command line: positional ones and --testPathPatterns, never an option's value", async () => {
  await expect(jestPathPatterns([])).resolves.toEqual([]);
  await expect(
    jestPathPatterns(['--json', '--outputFile', 'report.json', 'test/oauth/', '-t', 'consent', '--maxWorkers=2']),
  ).resolves.toEqual(['test/oauth/']);
  await expect(jestPathPatterns(['--testPathPatterns', 'a', 'b', '--ci'])).resolves.toEqual(['a', 'b']);
});
