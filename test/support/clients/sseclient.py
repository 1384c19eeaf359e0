"""A stand-in for the `sseclient-py` package (module `sseclient`), which the reference page's samples
import and which the project's package mirror does not carry. Written here from that package's
documented behaviour, which is what the samples depend on:

- `SSEClient(response).events()` iterates the response as `requests` yields it (`for chunk in
  response`: pieces of at most 128 bytes, as each arrives) and cuts it into events at blank lines;
- each event's lines are fields `name: value` (one space after the colon dropped; a line without a
  colon is a field with an empty value); lines starting with `:` are comments; `id`, `event`, `data`
  and `retry` are kept, any other field is ignored;
- every `data` line adds its value and a newline; an event is dispatched only when that buffer is not
  empty, with the one trailing newline removed. So `data:` with an empty value (a priming event) IS
  dispatched, with data `''`, and `json.loads(event.data)` then raises; an event with only `id:` or
  `retry:` is not dispatched at all;
- `event` defaults to `message`; nothing carries over from one event to the next.
"""


class Event:
    def __init__(self):
        self.id = None
        self.event = "message"
        self.data = ""
        self.retry = None

    def __repr__(self):
        return f"Event(id={self.id!r}, event={self.event!r}, data={self.data!r}, retry={self.retry!r})"


class SSEClient:
    def __init__(self, event_source, char_enc="utf-8"):
        self._event_source = event_source
        self._char_enc = char_enc

    def _blocks(self):
        """The raw bytes of each event: everything up to and including a blank line."""
        pending = b""
        for chunk in self._event_source:
            pending += chunk
            while True:
                cut = _end_of_block(pending)
                if cut < 0:
                    break
                yield pending[:cut]
                pending = pending[cut:]
        if pending:
            yield pending

    def events(self):
        for block in self._blocks():
            event = Event()
            data_lines = None
            for raw in block.splitlines():
                line = raw.decode(self._char_enc)
                if line.strip() == "" or line.startswith(":"):
                    continue
                name, colon, value = line.partition(":")
                if colon and value.startswith(" "):
                    value = value[1:]
                if name == "data":
                    data_lines = (data_lines or "") + value + "\n"
                elif name in ("id", "event", "retry"):
                    setattr(event, name, value)
            if not data_lines:
                continue
            event.data = data_lines[:-1]
            event.event = event.event or "message"
            yield event

    def close(self):
        self._event_source.close()


def _end_of_block(buffer):
    """Where the first event in `buffer` ends (after its blank line), or -1 when none has yet."""
    ends = [i + len(sep) for sep in (b"\r\n\r\n", b"\n\n", b"\r\r") if (i := buffer.find(sep)) >= 0]
    return min(ends) if ends else -1
