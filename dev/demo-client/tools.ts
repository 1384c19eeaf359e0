import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { CONNECT_TOOL } from '../../lambda/connections/names';
import { suggestName } from '../../lib/config/suggest';
import { printable } from './printable';

/**
 * The gateway's tools as the demo client uses them: listed (`--list`, `--help`), the one named by
 * `--tool` found among them (a mistyped name is refused with the name it most likely meant, before
 * anything is called), and its arguments when `--arguments` is not given.
 */

/** A command-line mistake (exit 2): nothing was called. */
export class UsageError extends Error {}

/** `--arguments` when not given: those of these the tool's input schema names (the demo tools' `use_aws`). */
export const DEFAULT_ARGUMENTS: Readonly<Record<string, unknown>> = { command: 'aws s3 ls' };

/** Every page of `tools/list` (bounded: a gateway that never stops paging is cut off). */
export async function listAllTools(client: Client, options: { timeout?: number } = {}): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const result = await client.listTools(cursor === undefined ? {} : { cursor }, options);
    tools.push(...result.tools);
    cursor = result.nextCursor;
    if (cursor === undefined) break;
  }
  return tools;
}

/** One line per tool: its name, then the first line of its description. */
export function toolLines(tools: readonly Tool[]): string[] {
  const width = Math.min(40, Math.max(0, ...tools.map((tool) => tool.name.length)));
  return tools.map((tool) => {
    const about = printable(tool.description?.split('\n')[0]?.trim() ?? '');
    return `  ${printable(tool.name).padEnd(width)}  ${about}`.trimEnd();
  });
}

/**
 * The tool named `name`; `unlisted` when it may be a tool of a per-user target not connected to yet
 * (such a target lists only its `connect_account` tool until then, and a call of any of its tools asks
 * to connect); else a UsageError naming the one most likely meant.
 */
export function chooseTool(tools: readonly Tool[], name: string, url: string): Tool | 'unlisted' {
  const tool = tools.find((candidate) => candidate.name === name);
  if (tool) return tool;
  const names = tools.map((candidate) => candidate.name);
  const separator = name.lastIndexOf('___');
  // With prefixes on, `<target>___connect_account`; off, a bare name goes to the one such target.
  const placeholder = separator > 0 ? `${name.slice(0, separator)}___${CONNECT_TOOL}` : CONNECT_TOOL;
  if (names.includes(placeholder)) return 'unlisted';
  // A name without its target's prefix (`use_aws`) means one of the prefixed ones.
  const prefixed = names.filter((candidate) => candidate.endsWith(`___${name}`));
  const near = suggestName(name, names);
  const meant = prefixed.length > 0 ? prefixed : near ? [near] : [];
  const suggestion = meant.length ? `; did you mean ${meant.map((n) => JSON.stringify(n)).join(' or ')}?` : '';
  throw new UsageError(
    `no tool ${JSON.stringify(name)} at ${url}${suggestion} (--list lists the tools); nothing was called`,
  );
}

/**
 * The arguments for a call without `--arguments`: DEFAULT_ARGUMENTS the tool's schema names. A tool
 * that requires more is refused with an example to give instead (a call with guessed arguments would
 * only fail at the target).
 */
export function defaultArgumentsFor(tool: Tool): Record<string, unknown> {
  const properties = tool.inputSchema.properties ?? {};
  const args = Object.fromEntries(Object.entries(DEFAULT_ARGUMENTS).filter(([key]) => key in properties));
  const missing = (tool.inputSchema.required ?? []).filter((key) => !(key in args));
  if (missing.length === 0) return args;
  const example = Object.fromEntries(missing.map((key) => [key, exampleOf(properties[key])]));
  throw new UsageError(
    `${tool.name} takes ${missing.map((key) => JSON.stringify(key)).join(', ')}: give its arguments, e.g. --arguments '${JSON.stringify(example)}'`,
  );
}

function exampleOf(schema: unknown): unknown {
  const type = (schema as { type?: unknown } | undefined)?.type;
  if (type === 'number' || type === 'integer') return 1;
  if (type === 'boolean') return true;
  if (type === 'array') return [];
  if (type === 'object') return {};
  return '…';
}
