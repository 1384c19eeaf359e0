"""One tool call through a fastmcp 4 client in its 2025 mode (`mode="legacy"`: the initialize handshake)
that records what the server sends besides the result, like python_notifications.py does for the MCP
Python SDK: log messages, progress.

    python fastmcp_notifications.py URL TOOL ARGUMENTS_JSON

Prints one JSON line: the result's text, the log messages (level and data) in arrival order, how many
arrived before the result, and the progress values. Log messages may ride the server's GET stream and
come after the result: it waits for the call's last one (the test servers' `long_task` ends with the
warning `long_task finished N`), at most LAST_LOG_WAIT_SECONDS after the result.
"""

import asyncio
import json
import sys

from fastmcp import Client

# A bound, not a pause: the wait ends when the last log message arrives.
LAST_LOG_WAIT_SECONDS = 5


def is_last_log(data: object) -> bool:
    """The message `long_task` sends last, after its steps' debug and info messages."""
    return isinstance(data, str) and data.startswith("long_task finished")


async def main(url: str, tool: str, arguments: dict) -> None:
    logs: list[dict] = []
    progress: list[float] = []
    last_log = asyncio.Event()

    async def on_log(message) -> None:
        logs.append({"level": message.level, "data": message.data})
        if is_last_log(message.data):
            last_log.set()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with Client(url, mode="legacy", log_handler=on_log, progress_handler=on_progress, timeout=60) as client:
        result = await client.call_tool(tool, arguments)
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
                }
            ),
            flush=True,
        )


asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
