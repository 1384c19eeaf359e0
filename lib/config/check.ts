import { type GatewayConfig, GatewayConfigSchema, withoutSchemaKey } from '../../lambda/config/schema';
import { checkPolicies, describePolicyProblem } from '../../lambda/policy/cedar/policies';
import { crossFieldIssuesOf } from './cross-field';
import { type UnsetReference, unsetReferences } from './environment-references';
import { gatewayConfigJsonSchema, type JsonSchema } from './json-schema';
import { type JsonPath, parseJsonText, type TextPosition } from './json-text';
import { suggestName } from './suggest';

/**
 * `--check-config FILE` and the local server's `--config FILE`: a configuration file checked as a
 * whole, every problem at once with its line and column: the schema's issues ("did you mean" for a
 * misspelt key), its rules across fields even where other fields are invalid (./cross-field.ts), the
 * environment variables it names that are unset here, and a note when it has no targets.
 * The rules are the one zod schema's (`lambda/config/schema.ts`); this module only finds where they apply.
 * Values are never echoed (a file may hold inline credentials).
 */

/**
 * `error`: the gateway refuses the file. `warning`: valid, but on this machine the gateway would fail
 * with it (an unset environment variable). `note`: valid, worth knowing (no targets).
 */
export type Severity = 'error' | 'warning' | 'note';

export interface ConfigProblem extends TextPosition {
  severity: Severity;
  /** `targets[0].headers`, or '' for the document itself. */
  path: string;
  message: string;
  /** The unset environment variable this problem is about, if it is one. */
  variable?: string;
}

export type ConfigCheck =
  | { ok: true; config: GatewayConfig; problems: ConfigProblem[] }
  | { ok: false; problems: ConfigProblem[] };

export interface CheckOptions {
  /** Where `fromEnv` references are looked up (default process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * `check` (`--check-config`): an unset variable is a warning, the file is still valid. `start`
   * (`--config`): one the gateway reads at start is an error, since starting would fail on it.
   */
  purpose?: 'check' | 'start';
}

export function checkConfigText(text: string, options: CheckOptions = {}): ConfigCheck {
  const parsed = parseJsonText(text);
  if (!parsed.ok) {
    return { ok: false, problems: [{ ...parsed.position, severity: 'error', path: '', message: parsed.message }] };
  }
  const raw = withoutSchemaKey(parsed.value);
  const at = (path: JsonPath, severity: Severity, message: string): ConfigProblem => ({
    ...parsed.positionOf(path),
    severity,
    path: formatPath(path),
    message,
  });
  const result = GatewayConfigSchema.safeParse(raw);
  const problems: ConfigProblem[] = result.success
    ? []
    : result.error.issues.flatMap((issue): ConfigProblem[] => {
        if (issue.code === 'unrecognized_keys') {
          return issue.keys.map((name) => {
            const near = suggestName(name, knownKeysAt(issue.path as JsonPath));
            return at(
              [...issue.path, name] as JsonPath,
              'error',
              `unknown key${near ? `; did you mean "${near}"?` : ''}`,
            );
          });
        }
        const path = issue.path as JsonPath;
        // zod describes a missing field by the shape it expected ("an http(s) URL"); say that it is missing.
        const missing = issue.code !== 'custom' && valueAt(raw, path) === undefined;
        return [at(path, 'error', missing ? 'required, missing' : issue.message)];
      });
  // zod checks the rules across fields only once every field is valid: here they are checked anyway.
  const told = new Set(problems.map((p) => `${p.path}\n${p.message}`));
  for (const issue of result.success ? [] : crossFieldIssuesOf(raw)) {
    const problem = at(issue.path, 'error', issue.message);
    if (!told.has(`${problem.path}\n${problem.message}`)) problems.push(problem);
  }
  for (const reference of unsetReferences(raw, options.env ?? process.env)) {
    const { severity, message } = unsetMessage(reference, options.purpose ?? 'check');
    const position = at([...reference.path, 'fromEnv'], severity, message);
    problems.push({ ...position, path: formatPath(reference.path), variable: reference.name });
  }
  if (result.success && result.data.policy) {
    // Policies are checked once the configuration is valid: their schema is generated from it.
    const checked = checkPolicies(result.data.policy.policies, result.data.policy.argumentTypes);
    const found = checked.ok ? checked.warnings : checked.problems;
    for (const problem of found) {
      problems.push(at(['policy', 'policies'], problem.severity, describePolicyProblem(problem)));
    }
  }
  if (isObject(raw) && (raw.targets === undefined || (Array.isArray(raw.targets) && raw.targets.length === 0))) {
    const where = at(raw.targets === undefined ? [] : ['targets'], 'note', NO_TARGETS);
    problems.push({ ...where, path: '' });
  }
  problems.sort((a, b) => a.line - b.line || a.column - b.column);
  if (result.success && problems.every((p) => p.severity !== 'error')) {
    return { ok: true, config: result.data, problems };
  }
  return { ok: false, problems };
}

const NO_TARGETS =
  'no targets: a gateway with this file offers no tools, prompts or resources (npm start adds its demo targets unless --no-demo)';

function unsetMessage(reference: UnsetReference, purpose: 'check' | 'start'): { severity: Severity; message: string } {
  const variable = `environment variable ${reference.name} is not set`;
  if (reference.readAt === 'sign-in') {
    return { severity: 'warning', message: `${variable} here: a user's sign-in through this client fails without it` };
  }
  return purpose === 'start'
    ? {
        severity: 'error',
        message: `${variable}: the gateway reads it at start; set it in the shell that runs npm start`,
      }
    : {
        severity: 'warning',
        message: `${variable} here: npm start with this file stops on it (the gateway reads it at start)`,
      };
}

/**
 * One line per problem, `file:line:column path: message` as compilers print them (editors link them);
 * a warning or note says so before its path.
 */
export function formatProblems(file: string, problems: readonly ConfigProblem[]): string {
  return problems
    .map((p) => {
      const label = p.severity === 'error' ? '' : `${p.severity}: `;
      return `${file}:${p.line}:${p.column} ${label}${p.path ? `${p.path}: ` : ''}${p.message}`;
    })
    .join('\n');
}

/** "3 problems, 1 warning": how many of each severity there are (errors are "problems"). */
export function countProblems(problems: readonly ConfigProblem[]): string {
  const count = (severity: Severity, noun: string) => {
    const n = problems.filter((p) => p.severity === severity).length;
    return n === 0 ? [] : [`${n} ${noun}${n === 1 ? '' : 's'}`];
  };
  return [...count('error', 'problem'), ...count('warning', 'warning'), ...count('note', 'note')].join(', ');
}

export function formatPath(path: JsonPath): string {
  return path.map((part, index) => (typeof part === 'number' ? `[${part}]` : index === 0 ? part : `.${part}`)).join('');
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function valueAt(value: unknown, path: JsonPath): unknown {
  let at = value;
  for (const part of path) {
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<string | number, unknown>)[part];
  }
  return at;
}

let cachedSchema: JsonSchema | undefined;

/** The property names the schema allows for the object at `path` (every alternative's). */
function knownKeysAt(path: JsonPath): string[] {
  cachedSchema ??= gatewayConfigJsonSchema();
  let level: JsonSchema[] = [cachedSchema];
  for (const part of path) {
    level = level.flatMap(alternatives).flatMap((schema): JsonSchema[] => {
      if (typeof part === 'number') {
        const items = schema.items;
        return Array.isArray(items) ? items.slice(part, part + 1) : items ? [items] : [];
      }
      const property = schema.properties?.[part];
      if (property) return [property];
      return typeof schema.additionalProperties === 'object' ? [schema.additionalProperties] : [];
    });
  }
  const names = level.flatMap(alternatives).flatMap((schema) => Object.keys(schema.properties ?? {}));
  return [...new Set(names)];
}

function alternatives(schema: JsonSchema): JsonSchema[] {
  const nested = [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])];
  return nested.length ? [schema, ...nested.flatMap(alternatives)] : [schema];
}
