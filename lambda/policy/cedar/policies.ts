import type { DetailedError, PolicySet } from '@cedar-policy/cedar-wasm/nodejs';
import { cedar } from './engine';
import { type ArgumentType, policySchema } from './schema';

/**
 * The configured Cedar policies, checked: parsed, each given its id (its `@id("…")` annotation, or
 * `policyN` by position), and validated (strict mode) against the schema the configuration
 * generates. A problem names the policy and its line and column in the policy text.
 */
export interface PolicyProblem {
  message: string;
  /** 1-based, in the policy text. */
  line?: number;
  column?: number;
  severity: 'error' | 'warning';
}

export type CheckedPolicies =
  | { ok: true; policySet: PolicySet; ids: readonly string[]; warnings: PolicyProblem[] }
  | { ok: false; problems: PolicyProblem[] };

/** Cedar's warning for a policy no request satisfies. */
const IMPOSSIBLE = /policy is impossible/;

/** Line and column (1-based) of a character offset. */
function position(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lines = before.split('\n');
  return { line: lines.length, column: (lines[lines.length - 1]?.length ?? 0) + 1 };
}

function problemOf(
  text: string,
  error: DetailedError,
  severity: PolicyProblem['severity'],
  rename: (message: string) => string,
): PolicyProblem {
  const at = error.sourceLocations?.[0];
  const label = at?.label ? ` (${at.label})` : '';
  return {
    message: rename(`${error.message}${label}`),
    ...(at ? position(text, at.start) : {}),
    severity,
  };
}

export function checkPolicies(text: string, argumentTypes: Readonly<Record<string, ArgumentType>>): CheckedPolicies {
  const engine = cedar();
  const parts = engine.policySetTextToParts(text);
  if (parts.type === 'failure') {
    return { ok: false, problems: parts.errors.map((e) => problemOf(text, e, 'error', (m) => m)) };
  }
  if (parts.policy_templates.length > 0) {
    return {
      ok: false,
      problems: [{ message: 'templates are not supported: write static policies', severity: 'error' }],
    };
  }
  // policyN (Cedar's name for the Nth policy of a text) → the id the operator gave it.
  const ids: string[] = [];
  const problems: PolicyProblem[] = [];
  parts.policies.forEach((policy, index) => {
    const json = engine.policyToJson(policy);
    const given = json.type === 'success' ? json.json.annotations?.id : undefined;
    const id = given ?? `policy${index}`;
    if (ids.includes(id)) problems.push({ message: `two policies have the id "${id}"`, severity: 'error' });
    ids.push(id);
  });
  if (problems.length > 0) return { ok: false, problems };
  const rename = (message: string) =>
    message.replace(/`policy(\d+)`/g, (whole, n) => (ids[Number(n)] === undefined ? whole : `\`${ids[Number(n)]}\``));
  const validation = engine.validate({
    schema: policySchema(argumentTypes),
    policies: { staticPolicies: text },
    validationSettings: { mode: 'strict' },
  });
  if (validation.type === 'failure') {
    return { ok: false, problems: validation.errors.map((e) => problemOf(text, e, 'error', rename)) };
  }
  // A policy no request can satisfy is a mistake (a misspelt argument or claim): an error, not a
  // warning, since a permit that never applies silently denies.
  const impossible = validation.validationWarnings.filter((w) => IMPOSSIBLE.test(w.error.message));
  const errors = [...validation.validationErrors, ...impossible].map((e) => problemOf(text, e.error, 'error', rename));
  if (errors.length > 0) return { ok: false, problems: errors };
  const warnings = [
    ...validation.validationWarnings.map((e) => problemOf(text, e.error, 'warning', rename)),
    ...validation.otherWarnings.map((e) => problemOf(text, e, 'warning', rename)),
  ];
  return {
    ok: true,
    policySet: { staticPolicies: Object.fromEntries(parts.policies.map((policy, i) => [ids[i]!, policy])) },
    ids,
    warnings,
  };
}

/** One line per problem: `policy line 5, column 8: message`. */
export function describePolicyProblem(problem: PolicyProblem): string {
  const where = problem.line === undefined ? 'policies' : `policy line ${problem.line}, column ${problem.column}`;
  return `${where}: ${problem.message}`;
}
