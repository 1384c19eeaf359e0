/**
 * Exposed names of tools and prompts: `target___name` (three underscores) by default, as the managed
 * gateway does; `toolNamePrefix` decides when. Resource URIs are never renamed. Configuration
 * patterns (confirmTools, tool filters) name tools the same way, independent of the prefix setting.
 */
export const NAME_SEPARATOR = '___';

export type PrefixMode = 'always' | 'conditional' | 'never';

export function shouldPrefix(mode: PrefixMode, targetCount: number): boolean {
  return mode === 'always' || (mode === 'conditional' && targetCount > 1);
}

export function exposedName(target: string, name: string, prefixed: boolean): string {
  return prefixed ? `${target}${NAME_SEPARATOR}${name}` : name;
}

/** Splits `target___name`; undefined when there is no separator after a non-empty target. */
export function splitPrefixed(value: string): { target: string; name: string } | undefined {
  const separator = value.indexOf(NAME_SEPARATOR);
  if (separator <= 0) return undefined;
  return { target: value.slice(0, separator), name: value.slice(separator + NAME_SEPARATOR.length) };
}
