/**
 * An SSE parser (the WHATWG event-stream rules: `data`, `event`, `id`, comments, CR / LF / CRLF line
 * ends) that holds a bounded amount of a stream. A line still arriving is kept as the chunks it came
 * in, joined once when it ends: a parser that appends each chunk to one string copies a long line
 * again for every chunk (a 16 MB line read in 64 KB chunks made about 2 GB of garbage and a peak
 * of 450 MB). An event, with its unfinished line, longer than `maxEventChars` throws a TooLargeError
 * before it is held.
 */

export interface SseMessage {
  data: string;
  event?: string;
  id?: string;
}

export class TooLargeError extends Error {
  constructor(what: string) {
    super(`sent ${what} (limits.maxMessageBytes)`);
    this.name = 'TooLargeError';
  }
}

export class BoundedSseParser {
  private line: string[] = [];
  private lineChars = 0;
  /** Characters of the event so far (its complete lines). */
  private eventChars = 0;
  private data: string[] = [];
  private event?: string;
  private id?: string;
  private sawField = false;
  /** The last chunk ended with CR: an LF opening the next one belongs to it. */
  private afterCr = false;

  constructor(
    private readonly onEvent: (message: SseMessage) => void,
    private readonly onComment: () => void,
    private readonly maxEventChars = Number.POSITIVE_INFINITY,
    /** A `retry` field of ASCII digits (the reconnection time, ms); other values are ignored, as the rules say. */
    private readonly onRetry?: (retryMs: number) => void,
  ) {}

  feed(chunk: string): void {
    let start = 0;
    if (this.afterCr && chunk.charCodeAt(0) === 10) start = 1;
    this.afterCr = false;
    for (let i = start; i < chunk.length; i++) {
      const code = chunk.charCodeAt(i);
      if (code !== 10 && code !== 13) continue;
      this.endLine(chunk.slice(start, i));
      if (code === 13) {
        if (i + 1 === chunk.length) this.afterCr = true;
        else if (chunk.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.slice(start);
      this.lineChars += rest.length;
      this.check();
      this.line.push(rest);
    }
  }

  private check(): void {
    if (this.eventChars + this.lineChars > this.maxEventChars) {
      throw new TooLargeError(`an SSE event over ${this.maxEventChars} bytes`);
    }
  }

  private endLine(last: string): void {
    this.lineChars += last.length;
    this.check();
    const line = this.line.length ? this.line.join('') + last : last;
    this.line = [];
    this.eventChars += this.lineChars + 1;
    this.lineChars = 0;
    if (line === '') {
      this.dispatch();
      return;
    }
    if (line.charCodeAt(0) === 58) {
      // ':' a comment (keep-alives)
      this.eventChars -= line.length + 1;
      this.onComment();
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') {
      this.data.push(value);
      this.sawField = true;
    } else if (field === 'event') {
      this.event = value;
      this.sawField = true;
    } else if (field === 'id' && !value.includes('\u0000')) {
      this.id = value;
      this.sawField = true;
    } else if (field === 'retry' && /^\d+$/.test(value)) {
      this.onRetry?.(Number(value));
    }
  }

  private dispatch(): void {
    // Also an event with an id and no data (a priming event): its id is where a reconnection resumes.
    if (this.sawField) {
      const message: SseMessage = { data: this.data.join('\n') };
      if (this.event !== undefined) message.event = this.event;
      if (this.id !== undefined) message.id = this.id;
      this.data = [];
      this.event = undefined;
      this.id = undefined;
      this.sawField = false;
      this.eventChars = 0;
      this.onEvent(message);
      return;
    }
    this.eventChars = 0;
  }
}
