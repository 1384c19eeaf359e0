import { closest, distance } from 'fastest-levenshtein';

/**
 * The known name a mistyped one most likely meant, if any is close enough to suggest: the same
 * rule for CDK context keys (lib/context.ts) and configuration-file keys (./check.ts). Deploy and
 * local tooling only: the Lambda bundle never suggests (fastest-levenshtein is not one of its dependencies).
 */
export function suggestName(typed: string, known: readonly string[]): string | undefined {
  if (known.length === 0) return undefined;
  const exact = known.find((name) => name.toLowerCase() === typed.toLowerCase());
  if (exact) return exact;
  // A name cut short (`sessionTimeout`) is a prefix of the one meant.
  const extended = known.filter((name) => typed.length >= 5 && name.toLowerCase().startsWith(typed.toLowerCase()));
  if (extended.length > 0) return closest(typed, extended);
  const candidate = closest(typed, [...known]);
  // Up to a third of the name may differ: catches dropped, doubled and swapped letters, not unrelated words.
  return distance(typed, candidate) <= Math.max(2, Math.floor(typed.length / 3)) ? candidate : undefined;
}
