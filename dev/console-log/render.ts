/**
 * One log entry as a short line a person reads: `12:04:31.518 INFO  what happened  key=value …`.
 * The same entry the JSON line holds (nothing is added, so nothing the JSON format keeps out can get
 * in), with the keys that serve machines left out: correlation ids, Powertools' own fields. The JSON
 * format (`--log-format json`, and always in AWS) keeps every key.
 */

/** The entry as the JSON line holds it: `level`, `message`, `timestamp` (ISO 8601), then its own keys. */
export type LogRecord = Record<string, unknown>;

export interface LineStyle {
  /** ANSI colours (the level, dimmed time and keys). */
  colour: boolean;
  /** What wrote it, before the message (`[env 1]`: one of the local Lambda's environments). */
  source?: string;
}

/** Keys for machines (tracing, CloudWatch, Powertools), not for a person at a terminal. */
const HIDDEN = new Set([
  'level',
  'message',
  'timestamp',
  'service',
  'sampling_rate',
  'xray_trace_id',
  'requestId',
  'traceId',
  'kind',
  'cold_start',
  'function_arn',
  'function_memory_size',
  'function_name',
  'function_request_id',
  'tenant_id',
]);

/** Shown as their values alone, first: `POST tools/call`. */
const BARE = ['httpMethod', 'method'];
/** Then these, in this order; the rest as they came. */
const FIRST = ['target', 'tool', 'status', 'outcome', 'durationMs'];

/** Values that say nothing new: the usual value of a field the access log always writes (2025-11-25 is `legacy`). */
const QUIET: Record<string, unknown> = { inputRounds: 0, principal: 'anonymous', era: 'legacy' };

const LEVEL_COLOURS: Record<string, string> = {
  TRACE: '2',
  DEBUG: '2',
  INFO: '36',
  WARN: '33',
  ERROR: '31;1',
  CRITICAL: '31;1',
};

const paint = (style: LineStyle, code: string, text: string): string =>
  style.colour ? `\u001b[${code}m${text}\u001b[0m` : text;

export function renderLogLine(record: LogRecord, style: LineStyle): string {
  const level = String(record.level ?? 'INFO');
  const head = [
    paint(style, '2', clock(record.timestamp)),
    paint(style, LEVEL_COLOURS[level] ?? '0', level.padEnd(5)),
    ...(style.source ? [style.source] : []),
    String(record.message ?? ''),
  ].join(' ');
  const fields = fieldsOf(record).map(([key, text]) => (key ? `${paint(style, '2', `${key}=`)}${text}` : text));
  return fields.length ? `${head}  ${fields.join(' ')}` : head;
}

/** `[key, text]` pairs in the order shown; an empty key is a bare value. */
function fieldsOf(record: LogRecord): Array<[string, string]> {
  const keys = Object.keys(record).filter(
    (key) => !HIDDEN.has(key) && record[key] !== undefined && record[key] !== null && QUIET[key] !== record[key],
  );
  const ordered = [
    ...BARE.filter((key) => keys.includes(key)),
    ...FIRST.filter((key) => keys.includes(key)),
    ...keys.filter((key) => !BARE.includes(key) && !FIRST.includes(key)),
  ];
  return ordered.map((key): [string, string] => {
    const value = record[key];
    if (BARE.includes(key)) return ['', text(value)];
    if (key === 'durationMs' && typeof value === 'number') return ['', `${Math.round(value)} ms`];
    // Ids are long and random: the start tells two apart, the JSON format has them whole.
    if (key === 'sessionId' && typeof value === 'string') return ['session', `${value.slice(0, 8)}…`];
    return [key, text(value)];
  });
}

function text(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  if (isErrorShape(value)) return JSON.stringify(`${value.name}: ${value.message}`);
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

function isErrorShape(value: unknown): value is { name: string; message: string } {
  if (!value || typeof value !== 'object') return false;
  const { name, message } = value as Record<string, unknown>;
  return typeof name === 'string' && typeof message === 'string';
}

/** Local wall-clock time with milliseconds: what a person compares with their own clock. */
function clock(timestamp: unknown): string {
  const date = typeof timestamp === 'string' || timestamp instanceof Date ? new Date(timestamp) : new Date();
  const at = Number.isNaN(date.getTime()) ? new Date() : date;
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}.${String(at.getMilliseconds()).padStart(3, '0')}`;
}
