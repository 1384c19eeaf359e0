import type { TargetConfig, ToolFilter } from '../config/schema';

/**
 * Tool filtering (`targets[].tools`): which of a target's own tool names the gateway exposes.
 * `include` (default: every tool) keeps the matching names, then `exclude` removes matches. A
 * filtered tool is absent from `tools/list` and is refused as unknown when called, by any name
 * (prefixed, bare) in either era; the catalog consults this before listing and before routing.
 *
 * The globs are the schema's deliberately small syntax (`*` any run, `?` one character, all else
 * literal; `TOOL_GLOB_PATTERN`), so they translate to an anchored regular expression directly: a
 * glob library would accept more syntax (`[…]`, `{…}`, `!`, `**`) than the schema allows.
 *
 * @example
 * const allowed = toolFilterFor({ include: ['read_*'], exclude: ['read_secret'] });
 * allowed('read_file'); // true
 * allowed('read_secret'); // false
 * allowed('write_file'); // false
 */

export type ToolPredicate = (tool: string) => boolean;

const ALL: ToolPredicate = () => true;

function globToRegExp(glob: string): RegExp {
  const source = [...glob]
    .map((char) => (char === '*' ? '.*' : char === '?' ? '.' : char.replace(/[.\\/+^$()[\]{}|-]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, 's');
}

/** The predicate of one target's filter; every tool passes without one. */
export function toolFilterFor(filter: ToolFilter | undefined): ToolPredicate {
  if (!filter) return ALL;
  const include = filter.include?.map(globToRegExp);
  const exclude = filter.exclude?.map(globToRegExp) ?? [];
  return (tool) =>
    (include === undefined || include.some((re) => re.test(tool))) && !exclude.some((re) => re.test(tool));
}

/** One predicate per configured target (targets without `tools` expose everything). */
export class ToolFilters {
  private readonly byTarget: ReadonlyMap<string, ToolPredicate>;

  constructor(targets: readonly Pick<TargetConfig, 'name' | 'tools'>[]) {
    this.byTarget = new Map(targets.filter((t) => t.tools).map((t) => [t.name, toolFilterFor(t.tools)]));
  }

  /** Whether `tool` (the target's own name) of `target` is exposed. */
  allows(target: string, tool: string): boolean {
    return (this.byTarget.get(target) ?? ALL)(tool);
  }

  /** Only the exposed tools of one target's listing. */
  keep<T extends { name: string }>(target: string, tools: T[]): T[] {
    const predicate = this.byTarget.get(target);
    return predicate ? tools.filter((tool) => predicate(tool.name)) : tools;
  }
}
