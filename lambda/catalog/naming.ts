import { exposedName, NAME_SEPARATOR } from '../config/naming';

export { exposedName, NAME_SEPARATOR, type PrefixMode, shouldPrefix } from '../config/naming';

/** Longer exposed names than this are refused by some clients. */
export const MAX_PORTABLE_NAME_LENGTH = 64;

export interface NamedEntry {
  target: string;
  name: string;
}

export type Resolution =
  | { ok: true; target: string; name: string }
  | { ok: false; message: string; candidates: string[] };

/**
 * Finds the target of a called name. A prefixed name (`target___tool`) is always accepted; a bare
 * name when exactly one target has it. `entries` are the targets' own names per target.
 */
export function resolveName(
  called: string,
  entries: NamedEntry[],
  targets: string[],
  kind: 'tool' | 'prompt',
): Resolution {
  const separator = called.indexOf(NAME_SEPARATOR);
  if (separator > 0) {
    const target = called.slice(0, separator);
    const name = called.slice(separator + NAME_SEPARATOR.length);
    if (targets.includes(target) && entries.some((e) => e.target === target && e.name === name))
      return { ok: true, target, name };
  }
  const owners = entries.filter((entry) => entry.name === called);
  const [only] = owners;
  if (only && owners.length === 1) return { ok: true, target: only.target, name: called };
  if (separator > 0) {
    // A prefixed name of a known target whose list we could not confirm: route it and let the target answer.
    const target = called.slice(0, separator);
    if (targets.includes(target) && !entries.some((e) => e.target === target)) {
      return { ok: true, target, name: called.slice(separator + NAME_SEPARATOR.length) };
    }
  }
  if (owners.length > 1) {
    const candidates = owners.map((o) => exposedName(o.target, o.name, true));
    return {
      ok: false,
      message: `Ambiguous ${kind} name "${called}": use one of ${candidates.join(', ')}`,
      candidates,
    };
  }
  const lower = called.toLowerCase();
  const candidates = entries
    .filter((e) => e.name.toLowerCase().includes(lower.split(NAME_SEPARATOR).pop() ?? lower))
    .map((e) => exposedName(e.target, e.name, true))
    .slice(0, 10);
  return {
    ok: false,
    message: `Unknown ${kind} "${called}"${candidates.length ? `; did you mean ${candidates.join(', ')}?` : ''}`,
    candidates,
  };
}

/** Exposed names over the portable limit, for a start-up warning. */
export function overlongNames(entries: NamedEntry[], prefixed: boolean): string[] {
  return entries.map((e) => exposedName(e.target, e.name, prefixed)).filter((n) => n.length > MAX_PORTABLE_NAME_LENGTH);
}
