"""One tool call of a 2025-11-25 session (MCP Python SDK 2.x) that records what the server sends besides
the result: log messages, progress and list changes. The client as its docs write one: the 2025 handshake
(`ClientSession.initialize()`), no input capabilities, the SDK's own GET stream, nothing gateway-specific.

    python python_notifications.py URL TOOL ARGUMENTS_JSON [LEVEL]

LEVEL: sent with `logging/setLevel` first. Prints one JSON line: the result's text, the log messages
(level and data) in arrival order, how many arrived before the result, the progress values, and the
list-change notifications. Log messages sent on the server's GET stream may come after the result: it
waits for the call's last one (the test servers' `long_task` ends with the warning `long_task finished
N`), at most LAST_LOG_WAIT_SECONDS after the result, and prints what it heard by then.
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

# A bound, not a pause: the wait ends when the last log message arrives.
LAST_LOG_WAIT_SECONDS = 5


def is_last_log(data: object) -> bool:
    """The message `long_task` sends last, after its steps' debug and info messages."""
    return isinstance(data, str) and data.startswith("long_task finished")


async def main(url: str, tool: str, arguments: dict, level: str | None) -> None:
    logs: list[dict] = []
    list_changes: list[str] = []
    progress: list[float] = []
    last_log = asyncio.Event()

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append({"level": params.level, "data": params.data})
        if is_last_log(params.data):
            last_log.set()

    async def on_message(message) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if isinstance(method, str) and method.endswith("/list_changed"):
            list_changes.append(method)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    timeout = httpx2.Timeout(30, read=60)
    async with httpx2.AsyncClient(timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read_stream, write_stream = streams[0], streams[1]
            async with ClientSession(
                read_stream, write_stream, logging_callback=on_log, message_handler=on_message
            ) as session:
                await session.initialize()
                if level:
                    await session.set_logging_level(level)
                result = await session.call_tool(tool, arguments, progress_callback=on_progress)
                before_result = len(logs)
                try:
                    await asyncio.wait_for(last_log.wait(), LAST_LOG_WAIT_SECONDS)
                except TimeoutError:
                    pass  # what arrived is printed: the test names what is missing
                print(
                    json.dumps(
                        {
                            "text": result.content[0].text,
                            "logs": logs,
                            "logsBeforeResult": before_result,
                            "progress": progress,
                            "listChanges": list_changes,
                        }
                    ),
                    flush=True,
                )


asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None))
