/**
 * SSE read the way a plain parser reads it, strictly — not the lenient way the official SDKs do:
 * the WHATWG EventSource dispatch rules, which `sseclient-py` (the reference page's samples) follows.
 * Every `data:` line adds its value and a newline; at a blank line the event is dispatched when that
 * buffer is not empty, without its last newline. So an event whose `data:` is empty (a priming event)
 * IS dispatched, with data '' — `JSON.parse('')` then throws, as `json.loads('')` does — and an event
 * of only `id:` or `retry:` lines is not. Comments (`:` lines) are skipped.
 *
 * `retryIsError` plays a client that takes a `retry` field for a malformed stream (the Java SDK 2.x).
 */

export interface PlainEvent {
  id?: string;
  event: string;
  data: string;
}

export class RetryFieldError extends Error {
  constructor(line: string) {
    super(`unexpected SSE field: ${line}`);
    this.name = 'RetryFieldError';
  }
}

export async function* plainSseEvents(
  res: Response,
  options: { retryIsError?: boolean } = {},
): AsyncGenerator<PlainEvent> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let pending = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      pending += value;
      for (;;) {
        const match = /\r\n\r\n|\n\n|\r\r/.exec(pending);
        if (!match) break;
        const block = pending.slice(0, match.index);
        pending = pending.slice(match.index + match[0].length);
        const event = parseBlock(block, options);
        if (event) yield event;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

function parseBlock(block: string, options: { retryIsError?: boolean }): PlainEvent | undefined {
  const event: PlainEvent = { event: 'message', data: '' };
  let data: string | undefined;
  for (const line of block.split(/\r\n|\n|\r/)) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') data = `${data ?? ''}${value}\n`;
    else if (name === 'id') event.id = value;
    else if (name === 'event') event.event = value || 'message';
    else if (name === 'retry' && options.retryIsError) throw new RetryFieldError(line);
  }
  if (!data) return undefined;
  event.data = data.slice(0, -1);
  return event;
}
