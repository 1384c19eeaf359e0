import type { Missing } from './prerequisite';
import type { Selection } from './selection';

/**
 * The one line a run prints first and again last when something it needs is missing: for each
 * missing prerequisite, the selected test files it keeps from running, then the one command that
 * installs what is missing (Debian packages need root: `sudo` unless the run is root's), and what
 * prepares the rest. Undefined when the run selects none of those files.
 */
export function notRunLine(missing: readonly Missing[], selected: Selection, asRoot: boolean): string | undefined {
  const groups = missing.flatMap((m) => {
    const suites = m.prerequisite.suites.filter(selected);
    return suites.length ? [{ m, suites }] : [];
  });
  if (groups.length === 0) return undefined;
  const parts = groups.map(
    ({ m, suites }) =>
      `${suites.length} ${suites.length === 1 ? 'file needs' : 'files need'} ${m.prerequisite.name} (${m.reason}): ${suites.map(shortName).join(', ')}`,
  );
  const packages = [...new Set(groups.flatMap(({ m }) => m.packages))];
  const commands = [...new Set(groups.flatMap(({ m }) => (m.command ? [m.command] : [])))];
  const fixes = [
    ...(packages.length ? [`install: ${asRoot ? '' : 'sudo '}apt-get install ${packages.join(' ')}`] : []),
    ...(commands.length ? [`${packages.length ? 'then' : 'prepare'}: ${commands.join(' && ')}`] : []),
  ];
  const line = `tests not run here: ${parts.join('; ')}`;
  return fixes.length ? `${line}. ${fixes.join('; ')}` : line;
}

/** `test/oauth/consent-security.test.ts` → `oauth/consent-security`. */
function shortName(suite: string): string {
  return suite.replace(/^test\//, '').replace(/\.test\.ts$/, '');
}
