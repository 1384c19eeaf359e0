import { type GatewayConfig, GatewayConfigSchema, withoutSchemaKey } from '../../lambda/config/schema';
import { gatewayConfigJsonSchema, type JsonSchema } from './json-schema';
import { type JsonPath, parseJsonText, type TextPosition } from './json-text';
import { suggestName } from './suggest';

/**
 * `--check-config FILE` and the local server's `--config FILE`: a configuration file checked as a
 * whole, every problem at once with its line and column, and "did you mean" for a misspelt key.
 * The rules are the one zod schema's (`lambda/config/schema.ts`); this module only finds where they apply.
 * Values are never echoed (a file may hold inline credentials).
 */

export interface ConfigProblem extends TextPosition {
  /** `targets[0].headers`, or '' for the document itself. */
  path: string;
  message: string;
}

export type ConfigCheck = { ok: true; config: GatewayConfig } | { ok: false; problems: ConfigProblem[] };

export function checkConfigText(text: string): ConfigCheck {
  const parsed = parseJsonText(text);
  if (!parsed.ok) return { ok: false, problems: [{ ...parsed.position, path: '', message: parsed.message }] };
  const result = GatewayConfigSchema.safeParse(withoutSchemaKey(parsed.value));
  if (result.success) return { ok: true, config: result.data };
  const problems = result.error.issues.flatMap((issue): ConfigProblem[] => {
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((name) => {
        const path = [...issue.path, name] as JsonPath;
        const near = suggestName(name, knownKeysAt(issue.path as JsonPath));
        const message = `unknown key${near ? `; did you mean "${near}"?` : ''}`;
        return { ...parsed.positionOf(path), path: formatPath(path), message };
      });
    }
    const path = issue.path as JsonPath;
    // zod describes a missing field by the shape it expected ("an http(s) URL"); say that it is missing.
    const missing = issue.code !== 'custom' && valueAt(parsed.value, path) === undefined;
    return [
      { ...parsed.positionOf(path), path: formatPath(path), message: missing ? 'required, missing' : issue.message },
    ];
  });
  problems.sort((a, b) => a.line - b.line || a.column - b.column);
  return { ok: false, problems };
}

/** One line per problem, `file:line:column path: message`, as compilers print them (editors link them). */
export function formatProblems(file: string, problems: readonly ConfigProblem[]): string {
  return problems.map((p) => `${file}:${p.line}:${p.column} ${p.path ? `${p.path}: ` : ''}${p.message}`).join('\n');
}

export function formatPath(path: JsonPath): string {
  return path.map((part, index) => (typeof part === 'number' ? `[${part}]` : index === 0 ? part : `.${part}`)).join('');
}

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
