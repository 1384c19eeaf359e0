import type { JsonPath } from './json-text';

/**
 * The `{"fromEnv": "NAME"}` references of a configuration whose variable is unset (or empty, as a
 * shell's `NAME=` means) in the environment given: the gateway would fail on them, at start or at the
 * first use, on this machine. Where a reference is read decides what its absence breaks.
 */
export interface UnsetReference {
  /** The reference object (`targets[1].oauth.clientSecret`). */
  path: JsonPath;
  name: string;
  /** `start`: the gateway reads it when it starts (headers, client credentials) and stops without it. */
  readAt: 'start' | 'sign-in';
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function unsetReferences(raw: unknown, env: Readonly<Record<string, string | undefined>>): UnsetReference[] {
  const found: UnsetReference[] = [];
  const walk = (value: unknown, path: JsonPath): void => {
    if (Array.isArray(value)) {
      value.forEach((item, index) => {
        walk(item, [...path, index]);
      });
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const record = value as Record<string, unknown>;
    // A malformed name is the schema's problem; it names no variable to look for.
    if (typeof record.fromEnv === 'string' && NAME.test(record.fromEnv)) {
      const set = env[record.fromEnv];
      if (set === undefined || set === '') found.push({ path, name: record.fromEnv, readAt: readAtOf(path) });
      return;
    }
    for (const [key, item] of Object.entries(record)) walk(item, [...path, key]);
  };
  walk(raw, []);
  return found;
}

/**
 * Headers and client credentials are prepared when the gateway builds its targets
 * (lambda/targets/credentials.ts); per-user OAuth and identity-login clients only when a user signs in.
 */
function readAtOf(path: JsonPath): UnsetReference['readAt'] {
  return path[0] === 'targets' && (path[2] === 'headers' || path[2] === 'oauth') ? 'start' : 'sign-in';
}
