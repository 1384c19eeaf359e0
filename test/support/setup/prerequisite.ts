/**
 * Something a group of test files needs from the machine (a browser, a program, a prepared Python
 * environment), and what a run says when it is missing: which files will not run, and how to get it.
 */
export interface Prerequisite {
  /** How the not-run line names it ("Chromium"). */
  readonly name: string;
  /** The test files that need it, from the repository's root; the gates refuse any other file. */
  readonly suites: readonly string[];
  /** Why it is missing here and how to get it, or undefined when it is present. */
  check(env: NodeJS.ProcessEnv): Shortfall | undefined;
}

/** Why a prerequisite is missing, and what supplies it. */
export interface Shortfall {
  /** e.g. "not at /usr/bin/chromium". */
  readonly reason: string;
  /** Debian packages that install it (these need root). */
  readonly packages: readonly string[];
  /** The command that prepares it once the packages are there (no root needed). */
  readonly command?: string;
}

export interface Missing extends Shortfall {
  readonly prerequisite: Prerequisite;
}

/** The prerequisites of `list` missing here, each with its shortfall. */
export function missingOf(list: readonly Prerequisite[], env: NodeJS.ProcessEnv): Missing[] {
  return list.flatMap((prerequisite) => {
    const shortfall = prerequisite.check(env);
    return shortfall ? [{ prerequisite, ...shortfall }] : [];
  });
}

/**
 * Whether a missing prerequisite fails the run instead of skipping its tests: `npm test -- --require-all`
 * (which sets TEST_REQUIRE_ALL) or CI set, as CI services do (`false` and `0` mean unset).
 */
export function requireAll(env: NodeJS.ProcessEnv): boolean {
  const set = (value: string | undefined) => value !== undefined && !['', '0', 'false'].includes(value.toLowerCase());
  return set(env.TEST_REQUIRE_ALL) || set(env.CI);
}
