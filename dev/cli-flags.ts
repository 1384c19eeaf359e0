import { parseArgs } from 'node:util';
import { closest, distance } from 'fastest-levenshtein';

/**
 * The flags of `npm start`, defined once: the parser, `--help` and the flag table of docs/local.md are
 * all made from this table, so they cannot drift apart (test/unit/cli-flags.test.ts checks the page).
 */

interface FlagBase {
  /** Shown as the default (markdown: code spans allowed). */
  shownDefault: string;
  /** One sentence (markdown: code spans allowed). */
  meaning: string;
  short?: string;
}
interface ValueFlag<T> extends FlagBase {
  kind: 'value';
  /** The value's placeholder: N, URL, FILE… */
  placeholder: string;
  /** Throws a UsageError for a bad value. */
  parse(raw: string, flag: string): T;
  defaultValue?: T;
}
interface SwitchFlag extends FlagBase {
  kind: 'switch';
}
type FlagSpec = ValueFlag<unknown> | SwitchFlag;

/** A bad command line: one line for the user, exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

function portNumber(raw: string, flag: string): number {
  const port = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(port) || port > 65535) throw new UsageError(`--${flag}: not a port number: ${raw} (0–65535)`);
  return port;
}

function httpUrl(raw: string, flag: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--${flag}: not a URL: ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--${flag}: not an http(s) URL: ${raw}`);
  return raw;
}

function nonEmpty(raw: string, flag: string): string {
  if (!raw.trim()) throw new UsageError(`--${flag}: needs a value`);
  return raw;
}

/** One of `choices`, in any case (written as the choices are). */
function oneOf<const C extends string>(choices: readonly C[]): (raw: string, flag: string) => C {
  return (raw, flag) => {
    const found = choices.find((choice) => choice.toLowerCase() === raw.toLowerCase());
    if (!found) throw new UsageError(`--${flag}: not one of ${choices.join(', ')}: ${raw}`);
    return found;
  };
}

export const LOG_FORMATS = ['human', 'json'] as const;
export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'] as const;

function value<T>(
  placeholder: string,
  parse: (raw: string, flag: string) => T,
  spec: { defaultValue: T; meaning: string },
): ValueFlag<T> & { defaultValue: T };
function value<T>(
  placeholder: string,
  parse: (raw: string, flag: string) => T,
  spec: { shownDefault: string; meaning: string },
): ValueFlag<T>;
function value<T>(
  placeholder: string,
  parse: (raw: string, flag: string) => T,
  spec: { defaultValue?: T; shownDefault?: string; meaning: string },
): ValueFlag<T> {
  return {
    kind: 'value',
    placeholder,
    parse,
    defaultValue: spec.defaultValue,
    shownDefault: spec.shownDefault ?? `\`${String(spec.defaultValue)}\``,
    meaning: spec.meaning,
  };
}

function toggle(shownDefault: string, meaning: string, short?: string): SwitchFlag {
  return { kind: 'switch', shownDefault, meaning, short };
}

export const FLAGS = {
  port: value('N', portNumber, { defaultValue: 8080, meaning: 'port to listen on (`0` picks a free one)' }),
  host: value('H', nonEmpty, {
    defaultValue: '127.0.0.1',
    meaning: 'interface; on a loopback host, Host and Origin headers must name the loopback (DNS-rebinding defence)',
  }),
  config: value('FILE', nonEmpty, {
    shownDefault: 'none',
    meaning:
      'targets and settings, JSON in the schema `schema/gateway-config.schema.json`; an invalid file fails at start listing every problem with its line and column',
  }),
  'check-config': value('FILE', nonEmpty, {
    shownDefault: '',
    meaning:
      'check a configuration file and exit (0 valid, 1 not): every problem at once, `file:line:column path: message`, with a suggestion for a misspelt key',
  }),
  'dynamodb-endpoint': value('URL', httpUrl, {
    shownDefault: 'embedded in-memory DynamoDB (dynalite)',
    meaning:
      'use this DynamoDB API; the table is created if missing. Two processes started with the same endpoint behave like two Lambda instances of one deployment',
  }),
  'dynamodb-port': value('N', portNumber, {
    shownDefault: 'a free port',
    meaning: 'port of the embedded DynamoDB, so that another process can use it with `--dynamodb-endpoint`',
  }),
  'no-demo': toggle('demo targets on', 'start no demo target'),
  'demo-port': value('N', portNumber, {
    defaultValue: 3001,
    meaning:
      'port of the 2025-11-25 demo target `demo` (`0` picks a free one); if the default port is in use, a free one is taken and printed',
  }),
  'demo-modern-port': value('N', portNumber, {
    defaultValue: 3002,
    meaning: 'port of the 2026-07-28 demo target `demo-modern`, likewise',
  }),
  'demo-url': value('URL', httpUrl, {
    shownDefault: 'start one',
    meaning: 'use the `demo` target already running at this URL (e.g. another `npm start`’s) instead of starting one',
  }),
  'demo-modern-url': value('URL', httpUrl, {
    shownDefault: 'start one',
    meaning: 'use the `demo-modern` target already running at this URL instead of starting one',
  }),
  lambda: toggle(
    'off',
    "serve the deployment bundle with Lambda's execution model (the other flags apply as without it; the first use on a machine builds the runtime once: one to four minutes)",
  ),
  'web-function': toggle(
    'off',
    'serve the Web Function bundle in the local Web Function emulator: a server per environment, many requests each (the other flags apply as without it)',
  ),
  'log-format': value('FORMAT', oneOf(LOG_FORMATS), {
    shownDefault: '`human` on a terminal, else `json`',
    meaning:
      '`human`: one short line per log entry (time, level, what happened, the fields that matter), coloured unless `NO_COLOR` is set; `json`: the structured lines the Lambda writes to CloudWatch, metric lines included',
  }),
  'log-level': value('LEVEL', oneOf(LOG_LEVELS), {
    shownDefault: "the configuration's `logLevel` (`INFO`)",
    meaning: '`DEBUG`, `INFO`, `WARN`, `ERROR` or `SILENT`; wins over `logLevel` and `GATEWAY_LOG_LEVEL`',
  }),
  help: toggle('', 'print this help and exit', 'h'),
} as const satisfies Record<string, FlagSpec>;

type Flags = typeof FLAGS;
export type FlagName = keyof Flags;
export type FlagValues = {
  [K in FlagName]: Flags[K] extends ValueFlag<infer T>
    ? Flags[K] extends { defaultValue: T }
      ? T
      : T | undefined
    : boolean;
};

export interface ParsedFlags {
  values: FlagValues;
  /** Flags the user gave (a default is not given). */
  given: ReadonlySet<FlagName>;
}

/** Flags that only make sense without another one. */
const EXCLUSIVE: Array<[FlagName, FlagName, string]> = [
  ['dynamodb-port', 'dynamodb-endpoint', 'the port is for the embedded DynamoDB'],
  ['demo-port', 'demo-url', 'a demo target is either started here or used at a URL'],
  ['demo-modern-port', 'demo-modern-url', 'a demo target is either started here or used at a URL'],
  ['demo-port', 'no-demo', '--no-demo starts no demo target'],
  ['demo-modern-port', 'no-demo', '--no-demo starts no demo target'],
  ['demo-url', 'no-demo', '--no-demo uses no demo target'],
  ['demo-modern-url', 'no-demo', '--no-demo uses no demo target'],
  ['check-config', 'lambda', '--check-config only checks a file and starts nothing'],
  ['check-config', 'web-function', '--check-config only checks a file and starts nothing'],
  ['check-config', 'log-format', '--check-config only checks a file and starts nothing'],
  ['check-config', 'log-level', '--check-config only checks a file and starts nothing'],
  ['lambda', 'web-function', 'a gateway runs in one deployment form at a time'],
];

const entries = Object.entries(FLAGS) as Array<[FlagName, FlagSpec]>;

export function parseFlags(argv: string[]): ParsedFlags {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      options: Object.fromEntries(
        entries.map(([name, spec]) => [
          name,
          { type: spec.kind === 'value' ? 'string' : 'boolean', ...(spec.short && { short: spec.short }) },
        ]),
      ) as Record<string, { type: 'string' | 'boolean'; short?: string }>,
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    throw toUsageError(error);
  }
  const given = new Set(Object.keys(parsed.values) as FlagName[]);
  const values: Record<string, unknown> = {};
  for (const [name, spec] of entries) {
    const raw = parsed.values[name];
    if (spec.kind === 'switch') values[name] = raw === true;
    else values[name] = typeof raw === 'string' ? spec.parse(raw, name) : spec.defaultValue;
  }
  for (const [a, b, why] of EXCLUSIVE) {
    if (given.has(a) && given.has(b)) throw new UsageError(`--${a} and --${b} cannot be combined: ${why}`);
  }
  return { values: values as FlagValues, given };
}

/** node:util's parse errors, as one line naming the flag (with a suggestion for a misspelt one). */
function toUsageError(error: unknown): UsageError {
  const { code, message } = error as { code?: string; message: string };
  const quoted = /'([^']+)'/.exec(message)?.[1] ?? '';
  const flag = quoted.split(' ')[0] ?? quoted;
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const near = suggestion(flag.replace(/^-+/, ''));
      return new UsageError(`unknown flag ${flag}${near ? ` (did you mean --${near}?)` : ''}`);
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const name = flag.replace(/^-+/, '') as FlagName;
      const spec = FLAGS[name] as FlagSpec | undefined;
      if (spec?.kind === 'value') return new UsageError(`--${name} needs a value (${spec.placeholder})`);
      return new UsageError(`${flag} takes no value`);
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new UsageError(`unexpected argument ${quoted ? `'${quoted}'` : ''}: flags start with --`);
    default:
      return new UsageError(message);
  }
}

/** The nearest flag name, if it is near enough to be a typo. */
function suggestion(typed: string): string | undefined {
  const names = entries.map(([name]) => name);
  const nearest = closest(typed, names);
  return distance(typed, nearest) <= 2 ? nearest : undefined;
}

function flagLabel(name: FlagName, spec: FlagSpec): string {
  const long = spec.kind === 'value' ? `--${name} ${spec.placeholder}` : `--${name}`;
  return spec.short ? `-${spec.short}, ${long}` : long;
}

const plain = (markdown: string): string => markdown.replace(/`/g, '');

/** `npm start -- --help`. */
export function helpText(width = 100): string {
  const labels = entries.map(([name, spec]) => flagLabel(name, spec));
  const column = Math.max(...labels.map((l) => l.length)) + 4;
  const lines = entries.flatMap(([, spec], i) => {
    const shown = plain(spec.shownDefault);
    const text = `${plain(spec.meaning)}${shown ? ` [default: ${shown}]` : ''}`;
    return wrap(text, width - column).map(
      (line, j) => (j === 0 ? `  ${labels[i]}`.padEnd(column) : ' '.repeat(column)) + line,
    );
  });
  return [
    'Usage: npm start -- [flags]',
    '',
    ...wrap(
      'Runs the MCP gateway on this machine: the same core as the Lambda on node:http, an embedded DynamoDB, and two demo targets, demo (2025-11-25) and demo-modern (2026-07-28), whose URL elicitations open a consent page on the target.',
      width,
    ),
    '',
    'Flags:',
    ...lines,
    '',
    'Exit status: 0 after SIGINT or SIGTERM, 1 when start-up fails, 2 for a bad command line.',
  ].join('\n');
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** The flag table of docs/local.md (markdown, columns aligned). */
export function flagTableMarkdown(): string {
  const rows = [
    ['flag', 'default', 'meaning'],
    ...entries.map(([name, spec]) => [`\`${flagLabel(name, spec)}\``, spec.shownDefault, spec.meaning]),
  ];
  const widths = [0, 1, 2].map((c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join(' | ')} |`;
  return [line(rows[0] ?? []), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.slice(1).map(line)].join(
    '\n',
  );
}
