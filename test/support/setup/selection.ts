import { isAbsolute, join, relative } from 'node:path';

/** Whether a run selects a test file (a path from the repository's root). */
export type Selection = (suite: string) => boolean;

/**
 * The test files a jest run with these path patterns selects, by jest's rules (each pattern a
 * case-insensitive regular expression, tried on the path from the root directory and on the absolute
 * path; a leading `./` anchors it at the root; no pattern, or an invalid one, selects every file).
 * Other filters (a test name pattern, --onlyChanged) are not applied: the files they leave out are
 * still named.
 */
export function selectionOf(patterns: readonly string[], rootDir: string): Selection {
  let regexes: RegExp[];
  try {
    regexes = patterns.map((pattern) => new RegExp(pattern.replace(/^\.\//, '^'), 'i'));
  } catch {
    regexes = [];
  }
  if (regexes.length === 0) return () => true;
  return (suite) => {
    const absolute = join(rootDir, suite);
    const fromRoot = relative(rootDir, absolute);
    return regexes.some(
      (regex, i) => regex.test(isAbsolute(patterns[i]!) ? absolute : fromRoot) || regex.test(absolute),
    );
  };
}

/** The path patterns of jest's command line (`jest <patterns> --testPathPatterns …`), read as jest reads them. */
export async function jestPathPatterns(args: readonly string[]): Promise<string[]> {
  // jest's own parser, so an option's value is never taken for a pattern.
  const { buildArgv } = await import('jest');
  const argv = await buildArgv([...args]);
  return [...argv._.map(String), ...(argv.testPathPatterns ?? [])];
}
