/**
 * Reads an SSE response's text as it arrives, in process (a `Response` whose body a gateway module
 * writes): a test waits for what it expects to be written, never for a fixed time.
 */
export class SseText {
  text = '';
  done = false;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();

  constructor(response: Response) {
    if (!response.body) throw new Error('the response has no body');
    this.reader = response.body.getReader();
  }

  /** Reads until `seen(text)` holds (true), or the stream ends (false). */
  async until(seen: (text: string) => boolean): Promise<boolean> {
    while (!seen(this.text)) {
      if (this.done) return false;
      const { done, value } = await this.reader.read();
      if (done) this.done = true;
      else this.text += this.decoder.decode(value, { stream: true });
    }
    return true;
  }

  /** Reads to the end; the whole text. */
  async all(): Promise<string> {
    await this.until(() => false);
    return this.text;
  }

  /** The client goes away (the body is cancelled). */
  async cancel(): Promise<void> {
    await this.reader.cancel();
  }

  /** The JSON-RPC messages of the `data:` lines read so far (the priming event's empty data left out). */
  messages(): Array<Record<string, unknown>> {
    return sseMessages(this.text);
  }
}

/** The JSON-RPC messages of the `data:` lines of SSE text (the priming event's empty data left out). */
export function sseMessages(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line.length > 'data: '.length)
    .map((line) => JSON.parse(line.slice('data: '.length)) as Record<string, unknown>);
}
