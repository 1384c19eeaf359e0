import { BoundedSseParser, type SseMessage, TooLargeError } from '../../../lambda/targets/sse-parser';

/** The gateway's own SSE parser: the event-stream rules, however the stream is cut into chunks, and a bound. */
function parse(chunks: string[], max?: number): { events: SseMessage[]; comments: number } {
  const events: SseMessage[] = [];
  let comments = 0;
  const parser = new BoundedSseParser(
    (event) => events.push(event),
    () => comments++,
    max,
  );
  for (const chunk of chunks) parser.feed(chunk);
  return { events, comments };
}

const STREAM =
  ': keep-alive\r\n\r\nid: 7\ndata:\n\nevent: message\nid: 8\ndata: {"a":1}\ndata: {"b":2}\r\n\r\nretry: 5\nunknown: x\ndata:no space\r\rdata: last\n\n';
const EXPECTED: SseMessage[] = [
  { id: '7', data: '' },
  { event: 'message', id: '8', data: '{"a":1}\n{"b":2}' },
  { data: 'no space' },
  { data: 'last' },
];

describe('BoundedSseParser', () => {
  it('reads data, event and id fields, comments, and LF, CRLF and CR line ends', () => {
    expect(parse([STREAM])).toEqual({ events: EXPECTED, comments: 1 });
  });

  it('gives the same events whatever the chunks (one character at a time, CR and LF split apart)', () => {
    expect(parse([...STREAM])).toEqual({ events: EXPECTED, comments: 1 });
  });

  it('throws TooLargeError once an event, or a line that never ends, passes the bound', () => {
    expect(() => parse(['data: ', 'x'.repeat(50), 'x'.repeat(60)], 100)).toThrow(TooLargeError);
    expect(() => parse(['data: 1\n', 'data: 2\n'.repeat(20)], 100)).toThrow(TooLargeError);
    // Many events, each under the bound: no error; comments do not count toward an event.
    const many = parse([`${': ping\n'.repeat(50)}data: ok\n\n`.repeat(20)], 100);
    expect(many.events).toHaveLength(20);
  });
});
