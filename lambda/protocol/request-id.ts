import type { RequestId } from '@modelcontextprotocol/sdk/types.js';

/**
 * A client's request id, kept exactly. JSON-RPC 2.0 §5: the response carries the same id as the
 * request. JSON.parse rounds a number id beyond 2^53 (9007199254740993 becomes …992) and
 * JSON.stringify writes -0 as 0, so such a numeric id (the parser looks for its text only then) keeps
 * its JSON text instead: in memory it is a string with a prefix no client id may start with (U+0000),
 * so it still fits `RequestId`, stays distinct from every real string id, survives storage, derives the
 * target call id from the exact digits (legacy/ids.ts), and the writer (`stringifyMessage`) puts the text
 * back as a number. Node 20 has no `JSON.rawJSON` to do this natively.
 */

/** Longest id (its JSON text for a number, its characters for a string); longer is refused (-32600). */
export const MAX_REQUEST_ID_LENGTH = 256;

const NUMBER_TEXT = '\u0000#';

/** Whether `id` is a numeric id kept as its JSON text. */
export function isNumberTextId(id: unknown): id is string {
  return typeof id === 'string' && id.startsWith(NUMBER_TEXT);
}

/** The JSON text of a number id kept as text; undefined for any other id. */
export function numberTextOf(id: unknown): string | undefined {
  return isNumberTextId(id) ? id.slice(NUMBER_TEXT.length) : undefined;
}

/** `value` (as JSON.parse gave it) when its text round-trips, else the id that keeps `text`. */
export function exactNumberId(value: number, text: string): RequestId {
  return JSON.stringify(value) === text ? value : `${NUMBER_TEXT}${text}`;
}

/** A string id a client may not send: it would read as a kept number text. */
export function isReservedStringId(id: string): boolean {
  return id.startsWith('\u0000');
}

/**
 * JSON.stringify for a message to the client, with a kept number id written back as its text. The id
 * is spliced in by position (after `jsonrpc`), never by searching the output, so no payload text can
 * be mistaken for it.
 */
export function stringifyMessage(message: unknown): string {
  if (typeof message !== 'object' || message === null || !('id' in message)) return JSON.stringify(message);
  const text = numberTextOf((message as { id: unknown }).id);
  if (text === undefined) return JSON.stringify(message);
  const { jsonrpc, id: _id, ...rest } = message as Record<string, unknown>;
  const tail = JSON.stringify(rest).slice(1); // '}' alone, or '"result":…}'
  return `{"jsonrpc":${JSON.stringify(jsonrpc)},"id":${text}${tail === '}' ? '' : ','}${tail}`;
}

/**
 * The raw JSON text of the value at `path` (object keys from the top), or undefined. `json` must be
 * valid JSON (it is scanned only after JSON.parse accepted it). Values off the path are skipped
 * without being parsed, and the scan stops at the first match whose value `accept`s, so for the usual
 * `{"jsonrpc":"2.0","id":…` it reads a few characters whatever the size of the params.
 */
export function rawValueAt(
  json: string,
  path: readonly string[],
  accept: (token: string) => boolean = () => true,
): string | undefined {
  let i = 0;
  const ws = () => {
    while (i < json.length && (json[i] === ' ' || json[i] === '\n' || json[i] === '\r' || json[i] === '\t')) i++;
  };
  const skipString = () => {
    i++; // opening quote
    for (;;) {
      const quote = json.indexOf('"', i);
      if (quote < 0) {
        i = json.length;
        return;
      }
      let backslashes = 0;
      for (let j = quote - 1; j >= i && json[j] === '\\'; j--) backslashes++;
      i = quote + 1;
      if (backslashes % 2 === 0) return;
    }
  };
  const skipValue = () => {
    const c = json[i];
    if (c === '"') return skipString();
    if (c === '{' || c === '[') {
      let depth = 0;
      while (i < json.length) {
        const d = json[i];
        if (d === '"') {
          skipString();
          continue;
        }
        if (d === '{' || d === '[') depth++;
        else if (d === '}' || d === ']') depth--;
        i++;
        if (depth === 0) return;
      }
      return;
    }
    while (i < json.length && !',}] \n\r\t'.includes(json[i]!)) i++;
  };
  const find = (level: number): string | undefined => {
    ws();
    if (json[i] !== '{') return undefined;
    i++;
    for (;;) {
      ws();
      if (json[i] !== '"') return undefined; // '}' : no (more) members
      const keyStart = i;
      skipString();
      const rawKey = json.slice(keyStart, i);
      const key = rawKey.includes('\\') ? (JSON.parse(rawKey) as string) : rawKey.slice(1, -1);
      ws();
      i++; // ':'
      ws();
      const valueStart = i;
      if (key === path[level]) {
        if (level === path.length - 1) {
          skipValue();
          const token = json.slice(valueStart, i);
          if (accept(token)) return token;
        } else if (json[i] === '{') {
          const found = find(level + 1);
          if (found !== undefined) return found;
          i = valueStart;
          skipValue();
        } else skipValue();
      } else skipValue();
      ws();
      if (json[i] !== ',') return undefined;
      i++;
    }
  };
  return find(0);
}
