/**
 * JSON text with positions: a small strict JSON scanner (RFC 8259) that reports a syntax error at its
 * line and column — `JSON.parse`'s messages give a character offset, or none, depending on the Node
 * version — and remembers where each member and item starts, so that a schema problem can be shown
 * at its place in the file. The value itself comes from `JSON.parse`.
 */

export interface TextPosition {
  /** 1-based. */
  line: number;
  /** 1-based, in UTF-16 code units as editors count. */
  column: number;
}

export type JsonPath = ReadonlyArray<string | number>;

export type ParsedJsonText =
  | { ok: true; value: unknown; positionOf(path: JsonPath): TextPosition }
  | { ok: false; message: string; position: TextPosition };

class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

const key = (path: JsonPath): string => JSON.stringify(path);

export function parseJsonText(text: string): ParsedJsonText {
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const shift = source.length === text.length ? 0 : 1;
  const offsets = new Map<string, number>();
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineStarts.push(i + 1);
  const toPosition = (offset: number): TextPosition => {
    let low = 0;
    let high = lineStarts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((lineStarts[mid] ?? 0) <= offset) low = mid;
      else high = mid - 1;
    }
    return { line: low + 1, column: offset - (lineStarts[low] ?? 0) + 1 };
  };
  try {
    new Scanner(source, offsets).document();
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error;
    return { ok: false, message: error.message, position: toPosition(error.offset + shift) };
  }
  const value: unknown = JSON.parse(source);
  return {
    ok: true,
    value,
    positionOf(path) {
      // A missing member is shown where its nearest present ancestor starts.
      for (let length = path.length; length >= 0; length--) {
        const offset = offsets.get(key(path.slice(0, length)));
        if (offset !== undefined) return toPosition(offset + shift);
      }
      return toPosition(0);
    },
  };
}

class Scanner {
  private i = 0;

  constructor(
    private readonly text: string,
    private readonly offsets: Map<string, number>,
  ) {}

  document(): void {
    this.space();
    if (this.i >= this.text.length) throw new JsonSyntaxError('the file is empty; expected a JSON object', this.i);
    this.value([]);
    this.space();
    if (this.i < this.text.length) throw this.unexpected('the end of the document');
  }

  private value(path: JsonPath): void {
    if (!this.offsets.has(key(path))) this.offsets.set(key(path), this.i);
    const c = this.text[this.i];
    if (c === '{') this.object(path);
    else if (c === '[') this.array(path);
    else if (c === '"') this.string();
    else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) this.number();
    else this.literal();
  }

  private literal(): void {
    for (const literal of ['true', 'false', 'null']) {
      if (this.text.startsWith(literal, this.i)) {
        this.i += literal.length;
        return;
      }
    }
    throw this.unexpected('a value');
  }

  private object(path: JsonPath): void {
    this.i++;
    this.space();
    if (this.text[this.i] === '}') {
      this.i++;
      return;
    }
    for (;;) {
      this.space();
      if (this.text[this.i] !== '"') throw this.unexpected('a property name in double quotes');
      const at = this.i;
      const name = this.string();
      const member = [...path, name];
      this.offsets.set(key(member), at);
      this.space();
      if (this.text[this.i] !== ':') throw this.unexpected(`':' after the property name "${name}"`);
      this.i++;
      this.space();
      this.value(member);
      this.space();
      const c = this.text[this.i];
      this.i++;
      if (c === '}') return;
      if (c !== ',') {
        this.i--;
        throw this.unexpected(`',' or '}' after the value of "${name}"`);
      }
      this.space();
      if (this.text[this.i] === '}') throw this.unexpected("another property after ',' (JSON has no trailing commas)");
    }
  }

  private array(path: JsonPath): void {
    this.i++;
    this.space();
    if (this.text[this.i] === ']') {
      this.i++;
      return;
    }
    for (let index = 0; ; index++) {
      this.space();
      this.value([...path, index]);
      this.space();
      const c = this.text[this.i];
      this.i++;
      if (c === ']') return;
      if (c !== ',') {
        this.i--;
        throw this.unexpected("',' or ']' after an array item");
      }
      this.space();
      if (this.text[this.i] === ']') throw this.unexpected("another item after ',' (JSON has no trailing commas)");
    }
  }

  /** Reads a string token and returns its value. */
  private string(): string {
    const start = this.i;
    this.i++;
    for (;;) {
      const c = this.text[this.i];
      if (c === undefined) throw new JsonSyntaxError('unterminated string', start);
      if (c === '"') break;
      if (c < ' ') throw new JsonSyntaxError('a control character (a line break?) inside a string', this.i);
      if (c === '\\') {
        const e = this.text[this.i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(this.text.slice(this.i + 2, this.i + 6)))
            throw new JsonSyntaxError('a bad \\u escape in a string', this.i);
          this.i += 6;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) throw new JsonSyntaxError('a bad escape in a string', this.i);
        this.i += 2;
        continue;
      }
      this.i++;
    }
    this.i++;
    return JSON.parse(this.text.slice(start, this.i)) as string;
  }

  private number(): void {
    const match = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(this.text.slice(this.i, this.i + 400));
    if (!match) throw this.unexpected('a number');
    this.i += match[0].length;
  }

  private space(): void {
    while (this.i < this.text.length && ' \t\n\r'.includes(this.text[this.i] as string)) this.i++;
  }

  private unexpected(expected: string): JsonSyntaxError {
    const c = this.text[this.i];
    const found = c === undefined ? 'the end of the file' : JSON.stringify(c);
    const hint = c === '/' ? ' (JSON has no comments)' : c === "'" ? ' (JSON strings take double quotes)' : '';
    return new JsonSyntaxError(`expected ${expected}, found ${found}${hint}`, this.i);
  }
}
